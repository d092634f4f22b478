"""The export as durable work: queued -> running -> succeeded | failed, or cancelled by
analytics.deleteExport; a succeeded export's file expires after FILE_DAYS days.

One DBOS workflow per export (`export:<id>`), enqueued when the export is created (a crash
before it began loses nothing; any worker takes it, at most QUEUE_CONCURRENCY at once per
process). It has no DBOS steps: the file is written whole each time, so a workflow DBOS
recovers after a crash runs again from the start and writes the file anew over whatever part
was there. The rows are read in batches (reports.py) and written to a temporary file, then
uploaded from it in parts: memory holds one batch and one part, whatever the size.

Nothing stays `running`: a failure fails the export with its reason (`export_failed`), more
than MAX_ROWS rows fail it with `too_many_rows`; the reconciler restarts an export whose
workflow is missing, fails one whose workflow ended in error, and gives up one whose heartbeat
(every HEARTBEAT_SECONDS while it writes) stopped for STALL_SECONDS. A cancel is read with
each batch: the workflow stops and deletes what it wrote.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics.exports import reports, repository
from contentplatform.analytics.exports.encoding import CONTENT_TYPES, Encoder
from contentplatform.analytics.models import ACTIVE_STATUSES, Export
from contentplatform.core import runtime
from contentplatform.kit import durable, series
from contentplatform.kit.db import Database, utcnow
from contentplatform.storage.store import ObjectStore

log = logging.getLogger(__name__)

# The most rows one export holds (a module constant, so a test can lower it).
MAX_ROWS = 1_000_000
# How long a written file is kept.
FILE_DAYS = 7
HEARTBEAT_SECONDS = 30.0
# A running export whose heartbeat stopped this long ago is given up (its workflow cancelled).
STALL_SECONDS = 15 * 60
# Files the expiry sweep deletes per pass (the next pass takes the rest).
EXPIRE_BATCH = 100

# Exports at once per process; one organization's run one at a time, so a second
# organization's export never waits behind the first's.
QUEUE_CONCURRENCY = 2
QUEUE = durable.declare_queue(
    "analytics.exports", worker_concurrency=QUEUE_CONCURRENCY, per_tenant=1
)


def too_many_rows() -> str:
    return (
        f"The report has more than {MAX_ROWS:,} rows, the most an export holds; export a "
        "shorter period or narrow its filters."
    )


def workflow_id(export_id: uuid.UUID) -> str:
    return f"export:{export_id}"


def enqueue_after_commit(session: AsyncSession, export: Export) -> None:
    durable.enqueue_after_commit(
        session,
        write_export,
        [(workflow_id(export.id), (str(export.tenant_id), str(export.id)))],
        queue=QUEUE,
    )


@dataclass(frozen=True)
class _Job:
    report: reports.Report
    scope: reports.Scope
    format: Any
    path: str


@dataclass
class _Written:
    rows: int = 0
    bytes: int = 0
    stopped: str | None = None  # "too_many_rows" | "cancelled"


@DBOS.workflow(name="analytics.export")
async def write_export(tenant_id: str, export_id: str) -> str:
    current = runtime.current()
    tenant, export = uuid.UUID(tenant_id), uuid.UUID(export_id)
    try:
        job = await _begin(current.db, tenant, export)
        if job is None:
            return "settled"
        written = await _write(current.db, current.store, tenant, export, job)
        return await _finish(current.db, current.store, tenant, export, job, written)
    except Exception:
        log.exception("export %s failed", export_id)
        # The error's own text may hold SQL or paths: it goes to the log, not to the client.
        reason = "The export stopped on an internal error; the service logged it."
        await fail(current.db, current.store, tenant, export, "export_failed", reason)
        return "failed"


async def _begin(db: Database, tenant_id: uuid.UUID, export_id: uuid.UUID) -> _Job | None:
    """Mark the export running (or find it running after a crash): what it writes; None when
    there is nothing to write (it ended, or was cancelled while queued)."""
    async with db.unit_of_work() as session:
        export = await repository.get(session, tenant_id, export_id, for_update=True)
        if export is None or export.status not in ACTIVE_STATUSES:
            return None
        now = utcnow()
        if export.status == "queued":
            export.status = "running"
            export.started_at = now
        export.updated_at = now
        return job_of(export)


def job_of(export: Export) -> _Job:
    report = reports.REPORTS[export.report]
    params = export.params
    dates = series.DateRange(
        date.fromisoformat(params["date_from"]), date.fromisoformat(params["date_to"])
    )
    start, end = dates.instants(ZoneInfo(params["time_zone"]))
    filters = report.filters.model_validate(params.get("filters") or {})
    scope = reports.Scope(export.tenant_id, start, end, filters)
    assert export.storage_path is not None  # set when the export is created
    return _Job(report, scope, export.format, export.storage_path)


async def _write(
    db: Database, store: ObjectStore, tenant_id: uuid.UUID, export_id: uuid.UUID, job: _Job
) -> _Written:
    """The report's rows into a temporary file, batch by batch, then the file into storage
    (unless it stopped: too many rows, or cancelled)."""
    written = _Written()
    encoder = Encoder(job.format, job.report.columns)
    handle, name = tempfile.mkstemp(prefix="export-", suffix=f".{job.format}")
    beat = time.monotonic()
    try:
        with os.fdopen(handle, "wb") as file:
            data = encoder.header()
            file.write(data)
            written.bytes += len(data)
            async for batch in job.report.rows(db, job.scope):
                if written.rows + len(batch) > MAX_ROWS:
                    written.stopped = "too_many_rows"
                    return written
                data = encoder.rows(batch)
                file.write(data)
                written.rows += len(batch)
                written.bytes += len(data)
                due = time.monotonic() - beat >= HEARTBEAT_SECONDS
                if not await _still_running(db, tenant_id, export_id, heartbeat=due):
                    written.stopped = "cancelled"
                    return written
                if due:
                    beat = time.monotonic()
        await store.put_file(job.path, Path(name), CONTENT_TYPES[job.format])
        return written
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


async def _still_running(
    db: Database, tenant_id: uuid.UUID, export_id: uuid.UUID, *, heartbeat: bool
) -> bool:
    """Whether the export is still ours to write (not cancelled or deleted); with `heartbeat`,
    its updated_at moves (the reconciler's sign of life)."""
    async with db.unit_of_work() as session:
        export = await repository.get(session, tenant_id, export_id)
        if export is None or export.status != "running":
            return False
        if heartbeat:
            export.updated_at = utcnow()
        return True


async def _finish(
    db: Database,
    store: ObjectStore,
    tenant_id: uuid.UUID,
    export_id: uuid.UUID,
    job: _Job,
    written: _Written,
) -> str:
    if written.stopped == "too_many_rows":
        await fail(db, store, tenant_id, export_id, "too_many_rows", too_many_rows())
        return "failed"
    async with db.unit_of_work() as session:
        export = await repository.get(session, tenant_id, export_id, for_update=True)
        if export is None or export.status != "running" or written.stopped is not None:
            # Cancelled (or deleted) while it wrote: nothing of it is kept.
            await store.delete(job.path)
            return "settled"
        now = utcnow()
        export.status = "succeeded"
        export.row_count = written.rows
        export.bytes = written.bytes
        export.finished_at = now
        export.file_expires_at = now + timedelta(days=FILE_DAYS)
        export.updated_at = now
    return "succeeded"


async def fail(
    db: Database,
    store: ObjectStore,
    tenant_id: uuid.UUID,
    export_id: uuid.UUID,
    code: str,
    reason: str,
) -> None:
    """Fail the export (unless it ended meanwhile) and delete any part of its file."""
    async with db.unit_of_work() as session:
        export = await repository.get(session, tenant_id, export_id, for_update=True)
        if export is None or export.status not in ACTIVE_STATUSES:
            return
        settle_failed(export, code, reason)
        path = export.storage_path
    if path is not None:
        with contextlib.suppress(Exception):  # a part left behind is overwritten or swept
            await store.delete(path)


def settle_failed(export: Export, code: str, reason: str) -> None:
    now = utcnow()
    export.status = "failed"
    export.error_code, export.error_message = code, reason
    export.finished_at = now
    export.updated_at = now


@durable.reconcile_source("analytics.export")
async def unfinished_exports(session: AsyncSession) -> list[durable.Unfinished]:
    """Queued and running exports: restarted if their workflow is missing (a crash before it
    was enqueued), failed when it ended in error, given up when a running one's heartbeat
    stopped (a queued one may wait its turn for long)."""
    now = utcnow()
    work = []
    for export in await repository.unfinished(session):
        stalled = (
            export.status == "running" and (now - export.updated_at).total_seconds() > STALL_SECONDS
        )
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(export.id),
                restart=durable.restarter(
                    write_export,
                    workflow_id(export.id),
                    str(export.tenant_id),
                    str(export.id),
                    queue=QUEUE,
                ),
                give_up=_giver_up(export.tenant_id, export.id),
                stalled_reason="stalled" if stalled else None,
            )
        )
    return work


def _giver_up(tenant_id: uuid.UUID, export_id: uuid.UUID) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        export = await repository.get(session, tenant_id, export_id, for_update=True)
        if export is None or export.status not in ACTIVE_STATUSES:
            return
        if reason == "stalled":
            settle_failed(
                export, "stalled", "The export made no progress for 15 minutes and was stopped."
            )
        else:
            settle_failed(
                export,
                "export_failed",
                f"The export's background work ended unexpectedly ({reason}).",
            )

    return give_up


async def expire_due(db: Database, store: ObjectStore, *, limit: int = EXPIRE_BATCH) -> int:
    """Delete the files kept past their file_expires_at and mark their exports expired: how
    many. Each in its own transaction, the file deleted before the row says so (a crash between
    leaves it succeeded, and the next pass deletes nothing and marks it)."""
    async with db.unit_of_work() as session:
        due = [
            (row.tenant_id, row.id)
            for row in await repository.due_to_expire(session, utcnow(), limit)
        ]
    expired = 0
    for tenant_id, export_id in due:
        async with db.unit_of_work() as session:
            export = await repository.get(session, tenant_id, export_id, for_update=True)
            if export is None or export.status != "succeeded":
                continue
            await expire(store, export)
            expired += 1
    return expired


async def expire(store: ObjectStore, export: Export) -> None:
    """The export's file deleted, the export `expired` (its row's transaction commits it)."""
    if export.storage_path is not None:
        await store.delete(export.storage_path)
    export.status = "expired"
    export.updated_at = utcnow()


@durable.maintenance("analytics.exports.expire")
async def expire_files(db: Database) -> int:
    return await expire_due(db, runtime.current().store)
