"""Durable billing work: applying a stored payment event, and keeping the catalogue in step.

An event is stored (status `received`) in the request's transaction, then applied by a workflow
whose id is the event's (`payment-event:<id>`), so a second start is a no-op; the reconcile
source restarts any event left `received` without its workflow (a crash between the commit and
the start) and fails one whose workflow failed. Applying takes the event's row lock and checks
its status first, and every grant is recorded per reference in the same transaction, so a
restarted workflow grants nothing twice.

The catalogue is read from Stripe by each process's maintenance pass when billing is configured:
at start-up (the first pass) and then hourly; product.* and price.* events re-read it at once.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.billing import service
from contentplatform.billing.provider import Stripe
from contentplatform.core import runtime
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.errors import PlatformError

log = logging.getLogger(__name__)

RESTART_AFTER = timedelta(seconds=30)
CATALOG_EVERY_SECONDS = 3600.0


def event_workflow_id(event_id: uuid.UUID) -> str:
    return f"payment-event:{event_id}"


@DBOS.workflow(name="billing.process_event")
async def process_event(event_id: str) -> str:
    return await apply_event(event_id)


@DBOS.step(name="billing.apply_event")
async def apply_event(event_id: str) -> str:
    current = runtime.current()
    stored = uuid.UUID(event_id)
    try:
        async with current.db.unit_of_work() as session:
            type = await service.event_type(session, stored)
        catalog = None
        if type is not None and service.needs_catalog(type) and current.settings.billing_configured:
            catalog = await Stripe(current.settings).catalog()
        async with current.db.unit_of_work() as session:
            return await service.process_event(session, stored, catalog)
    except Exception as error:
        log.exception("payment event %s failed", event_id)
        async with current.db.unit_of_work() as session:
            await service.fail_event(session, stored, repr(error))
        return "failed"


@durable.reconcile_source("billing.process_event")
async def unprocessed_events(session: AsyncSession) -> list[durable.Unfinished]:
    ids = await service.unprocessed_events(session, utcnow() - RESTART_AFTER)
    return [
        durable.Unfinished(
            workflow_id=event_workflow_id(event_id),
            restart=_restarter(event_id),
            give_up=_giver_up(event_id),
        )
        for event_id in ids
    ]


def _restarter(event_id: uuid.UUID) -> Any:
    async def restart() -> None:
        await durable.start(process_event, event_workflow_id(event_id), str(event_id))

    return restart


def _giver_up(event_id: uuid.UUID) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        await service.fail_event(session, event_id, reason)

    return give_up


_synced_at: float | None = None


@durable.maintenance("billing.sync_catalog")
async def sync_catalog(db: Database) -> None:
    """Mirror Stripe's catalogue at start-up and hourly (every process; idempotent)."""
    global _synced_at
    settings = runtime.current().settings
    now = time.monotonic()
    if not settings.billing_configured or (
        _synced_at is not None and now - _synced_at < CATALOG_EVERY_SECONDS
    ):
        return
    _synced_at = now
    try:
        prices = await Stripe(settings).catalog()
    except PlatformError as error:
        log.warning("billing catalogue not synced: %s", error.detail)
        _synced_at = None  # the next pass tries again
        return
    async with db.unit_of_work() as session:
        await service.mirror_catalog(session, prices)
