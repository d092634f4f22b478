"""A source's sync as durable work: one DBOS workflow per sync (`analytics-sync:<source>:<when
it began>`), enqueued once the transaction that marked the source `syncing` commits, on a queue
that lets one organization hold at most one of a process's QUEUE_CONCURRENCY slots. The work
(sync.py) stores each chunk of days in its own transaction, so a workflow DBOS recovers after a
crash starts again and asks the provider again for the window (each day's rows are replaced,
never added twice).

The daily sync: `tick` (the scheduler's, flows/durable.py) starts the sources whose next_sync_at
passed, over the last sync.DAILY_DAYS days, and moves each to its next DAILY_AT of the
organization's zone. The reconciler restarts a running sync whose workflow is missing, and
fails one whose workflow ended in error or that ran past STALL_SECONDS."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics.content import repository as repo
from contentplatform.analytics.content import sync
from contentplatform.analytics.models import AnalyticsSource
from contentplatform.core import runtime
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

QUEUE_CONCURRENCY = 2
QUEUE = durable.declare_queue(
    "analytics.content_sync", worker_concurrency=QUEUE_CONCURRENCY, per_tenant=1
)
STALL_SECONDS = 2 * 3600
TICK_LIMIT = 200


def workflow_id(row: AnalyticsSource) -> str:
    began = row.sync_started_at.isoformat() if row.sync_started_at else "never"
    return f"analytics-sync:{row.id}:{began}"


def after_commit(session: AsyncSession, row: AnalyticsSource) -> None:
    durable.enqueue_after_commit(
        session,
        sync_source,
        [(workflow_id(row), (str(row.tenant_id), str(row.id)))],
        queue=QUEUE,
    )


@DBOS.workflow(name="analytics.content_sync")
async def sync_source(tenant_id: str, source_id: str) -> str:
    current = runtime.current()
    tenant, source = uuid.UUID(tenant_id), uuid.UUID(source_id)
    try:
        return await sync.run(current.db, current.settings, tenant, source)
    except Exception:
        log.exception("analytics source %s: the sync failed", source_id)
        await fail(current.db, tenant, source, "The sync stopped on an internal error.")
        return "failed"


async def fail(db: Database, tenant_id: uuid.UUID, source_id: uuid.UUID, message: str) -> None:
    async with db.unit_of_work() as session:
        row = await repo.source(session, tenant_id, source_id, for_update=True)
        if row is not None and row.sync_status == "running":
            settle_failed(row, message)


def settle_failed(row: AnalyticsSource, message: str) -> None:
    row.sync_status = "failed"
    row.status = "error"
    row.error = {"code": "sync_failed", "message": message}
    row.last_synced_at = utcnow()


@durable.reconcile_source("analytics.content_sync")
async def unfinished_syncs(session: AsyncSession) -> list[durable.Unfinished]:
    now = utcnow()
    work = []
    for row in await repo.running_syncs(session):
        began = row.sync_started_at or now
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(row),
                restart=durable.restarter(
                    sync_source, workflow_id(row), str(row.tenant_id), str(row.id), queue=QUEUE
                ),
                give_up=_giver_up(row.tenant_id, row.id),
                stalled_reason="stalled" if (now - began).total_seconds() > STALL_SECONDS else None,
            )
        )
    return work


def _giver_up(
    tenant_id: uuid.UUID, source_id: uuid.UUID
) -> Callable[[AsyncSession, str], Awaitable[None]]:
    async def give_up(session: AsyncSession, reason: str) -> None:
        row = await repo.source(session, tenant_id, source_id, for_update=True)
        if row is not None and row.sync_status == "running":
            settle_failed(row, f"The sync's background work ended unexpectedly ({reason}).")

    return give_up


async def tick(db: Database, now: datetime) -> dict[str, int]:
    """Start the daily syncs due by `now`, each in its own transaction: started, or skipped
    (disconnected, pending, or a sync still running); each source's next sync moves on."""
    async with db.unit_of_work() as session:
        due = await repo.due_sources(session, now, TICK_LIMIT)
    report = {"started": 0, "skipped": 0, "failed": 0}
    for tenant_id, source_id in due:
        try:
            async with db.unit_of_work() as session:
                outcome = await _fire(session, tenant_id, source_id, now)
        except Exception:
            log.exception("could not start the daily sync of analytics source %s", source_id)
            outcome = "failed"
        if outcome is not None:
            report[outcome] += 1
    return report


async def _fire(
    session: AsyncSession, tenant_id: uuid.UUID, source_id: uuid.UUID, now: datetime
) -> str | None:
    row = await repo.source(session, tenant_id, source_id, for_update=True)
    if row is None or row.next_sync_at is None or row.next_sync_at > now:
        return None
    zone = await tenants.timezone_of(session, tenant_id)
    row.next_sync_at = sync.next_daily(now, zone)
    if row.status in ("disconnected", "pending_auth") or row.sync_status == "running":
        return "skipped"
    first, last = sync.sync_window(now.astimezone(ZoneInfo(zone)).date(), sync.DAILY_DAYS)
    sync.mark_running(row, first, last)
    await session.flush()
    after_commit(session, row)
    return "started"
