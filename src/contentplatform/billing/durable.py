"""Durable billing work: applying a stored payment event, and keeping the catalogue in step.

An event is stored (status `received`) in the request's transaction, then applied by a workflow
whose id is the event's (`payment-event:<id>`), so a second start is a no-op; the reconcile
source restarts any event left `received` without its workflow (a crash between the commit and
the start) and fails one whose workflow failed. Applying takes the event's row lock and checks
its status first, and every grant is recorded per reference in the same transaction, so a
restarted workflow grants nothing twice.

The catalogue is read from Stripe by each process's maintenance pass when billing is configured:
at start-up (the first pass) and then hourly; product.* and price.* events re-read it at once,
and so does a subscription event naming a price not mirrored yet.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import timedelta

from dbos import DBOS

from contentplatform.billing import payment_events, repository, service
from contentplatform.billing.provider import CatalogPrice, Stripe
from contentplatform.core import runtime
from contentplatform.kit import durable, inbound
from contentplatform.kit.db import Database
from contentplatform.kit.errors import PlatformError

log = logging.getLogger(__name__)

RESTART_AFTER = timedelta(seconds=30)
APPLY_ATTEMPTS = 5
CATALOG_EVERY_SECONDS = 3600.0


def event_workflow_id(event_id: uuid.UUID) -> str:
    return f"payment-event:{event_id}"


@DBOS.workflow(name="billing.process_event")
async def process_event(event_id: str) -> str:
    try:
        return await apply_event(event_id)
    except Exception as error:
        # Every attempt failed: the event is marked failed (and logged) for an operator, rather
        # than left to look unapplied forever.
        return await give_up_event(event_id, repr(error))


# An event is money: a passing failure (the database busy, Stripe unreachable while re-reading
# the catalogue) is tried again, about 15 s in all, before the event is given up. Applying is
# idempotent (the event's status and the grants per reference), so a retry never grants twice.
@DBOS.step(
    name="billing.apply_event",
    retries_allowed=True,
    max_attempts=APPLY_ATTEMPTS,
    interval_seconds=1.0,
    backoff_rate=2.0,
)
async def apply_event(event_id: str) -> str:
    current = runtime.current()
    stored = uuid.UUID(event_id)
    try:
        catalog = await _catalog_for(stored)
        async with current.db.unit_of_work() as session:
            return await payment_events.process_event(session, stored, catalog)
    except Exception:
        log.warning("payment event %s not applied yet (tried again)", event_id, exc_info=True)
        raise


async def _catalog_for(event_id: uuid.UUID) -> list[CatalogPrice] | None:
    """Stripe's catalogue when the event needs it (service.needs_catalog). Only a product or
    price event fails (and is tried again) when Stripe does not answer: a subscription's state
    is applied without it rather than lost, and the hourly pass mirrors the price later."""
    current = runtime.current()
    if not current.settings.billing_configured:
        return None
    async with current.db.unit_of_work() as session:
        needed = await payment_events.needs_catalog(session, event_id)
    if needed is None:
        return None
    try:
        return await Stripe(current.settings).catalog()
    except PlatformError as error:
        if needed == "required":
            raise
        log.warning("payment event %s applied without the catalogue: %s", event_id, error.detail)
        return None


@DBOS.step(name="billing.give_up_event")
async def give_up_event(event_id: str, reason: str) -> str:
    log.error("payment event %s failed on every attempt: %s", event_id, reason)
    async with runtime.current().db.unit_of_work() as session:
        await payment_events.fail_event(session, uuid.UUID(event_id), reason)
    return "failed"


inbound.reconcile(
    "billing.process_event",
    repository.events,
    process_event,
    event_workflow_id,
    restart_after=RESTART_AFTER,
)


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
