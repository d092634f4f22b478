"""Durable team work: applying a stored identity event, and the nightly reconcile.

An event is stored (status `received`) in the request's transaction, then applied by a workflow
whose id is the event's (`identity-event:<id>`), so a second start is a no-op; the reconcile
source restarts any event left `received` without its workflow and fails one whose workflow
failed.

The nightly reconcile pulls every active tenant's memberships and invitations from the provider
(team.sync's code) once per UTC day: each process's maintenance pass starts the workflow
`team-reconcile:<date>`, which DBOS runs once however many processes ask.
"""

from __future__ import annotations

import logging
import uuid
from datetime import date, timedelta

from dbos import DBOS

from contentplatform.core import runtime
from contentplatform.kit import durable, inbound
from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.errors import PlatformError
from contentplatform.team import repository, service
from contentplatform.team.idp import Directory
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

# An event still `received` this long after it arrived has lost its workflow (a crash between
# the commit and the start): the reconciler starts it again.
RESTART_AFTER = timedelta(seconds=30)


def event_workflow_id(event_id: uuid.UUID) -> str:
    return f"identity-event:{event_id}"


@DBOS.workflow(name="team.process_event")
async def process_event(event_id: str) -> str:
    return await apply_event(event_id)


@DBOS.step(name="team.apply_event")
async def apply_event(event_id: str) -> str:
    current = runtime.current()
    try:
        async with current.db.unit_of_work() as session:
            return await service.process_event(session, current.invalidations, uuid.UUID(event_id))
    except Exception as error:
        log.exception("identity event %s failed", event_id)
        async with current.db.unit_of_work() as session:
            await service.fail_event(session, uuid.UUID(event_id), repr(error))
        return "failed"


inbound.reconcile(
    "team.process_event",
    repository.events,
    process_event,
    event_workflow_id,
    restart_after=RESTART_AFTER,
)


# --- the nightly reconcile ----------------------------------------------------------------------

_started: date | None = None


@durable.maintenance("team.nightly_reconcile")
async def start_nightly_reconcile(db: Database) -> None:
    """Once per UTC day per process, ask for the day's reconcile (DBOS runs it once)."""
    global _started
    today = utcnow().date()
    if _started == today or runtime.current().settings.idp_api_url is None:
        return
    await durable.start(reconcile_all, f"team-reconcile:{today.isoformat()}")
    _started = today


@DBOS.workflow(name="team.reconcile_all")
async def reconcile_all() -> int:
    current = runtime.current()
    async with current.db.unit_of_work() as session:
        orgs = await tenants.active_orgs(session)
    synced = 0
    for tenant_id, org_id in orgs:
        synced += await reconcile_tenant(str(tenant_id), org_id)
    return synced


@DBOS.step(name="team.reconcile_tenant")
async def reconcile_tenant(tenant_id: str, org_id: str) -> int:
    """One tenant; a failure is logged and skipped (the next night tries again)."""
    current = runtime.current()
    try:
        pulled = await service.pull(Directory(current.settings), org_id)
        async with current.db.unit_of_work() as session:
            await service.sync(session, current.invalidations, uuid.UUID(tenant_id), org_id, pulled)
    except PlatformError as error:
        log.warning("team reconcile of %s failed: %s", org_id, error.detail)
        return 0
    return 1
