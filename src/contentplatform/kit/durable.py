"""Durable background work on DBOS, and the pattern every domain follows.

- Start a workflow only once the transaction that created its work has committed:
  `start_after_commit(session, workflow, workflow_id, *args)`.
- Give it a deterministic id (`ingest:<document id>:<version>`) so a second start is a no-op.
- Keep the domain's own status (document `processing`, instance `running`) in our tables and
  register a reconcile source for it: the reconciler restarts unfinished work whose workflow is
  missing and hands work whose workflow ended in failure back to the domain to fail visibly.
- DBOS's application version is the package version, stable across restarts, so a restarted
  process recovers the workflows it left pending.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dbos import DBOS, DBOSConfig, Queue, ScheduleInput, SetWorkflowID
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform import __version__
from contentplatform.config import Settings
from contentplatform.kit import logs
from contentplatform.kit.db import Database, after_commit

log = logging.getLogger(__name__)

APP_NAME = "contentplatform"
FAILED_STATUSES = {"ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"}


def dbos_config(settings: Settings) -> DBOSConfig:
    if settings.is_sqlite or settings.resolved_dbos_database_url.startswith("sqlite"):
        settings.ensure_data_dir()
    return {
        "name": APP_NAME,
        "system_database_url": settings.resolved_dbos_database_url,
        "application_version": __version__,
        "log_level": settings.log_level.upper(),
    }


def launch(settings: Settings) -> None:
    """Start DBOS in this process (call it from the running event loop that serves the app),
    then `await configure(settings)`."""
    DBOS(config=dbos_config(settings))
    logs.adopt("dbos")
    DBOS.launch()


# Queues by name -> the most workflows of that queue one process runs at once.
_queue_limits: dict[str, int] = {}
_queues: dict[str, Queue] = {}
# Schedules by name -> (workflow taking (scheduled_at, context), seconds between runs; 0 is off).
ScheduledWorkflow = Callable[[datetime, Any], Coroutine[Any, Any, None]]
_schedules: dict[str, tuple[ScheduledWorkflow, Callable[[Settings], int]]] = {}


def declare_queue(name: str, *, worker_concurrency: int) -> str:
    """A queue workflows can be started on (`start(..., queue=name)`); DBOS keeps its entries,
    so what was enqueued survives a crash and any worker process takes it."""
    _queue_limits[name] = worker_concurrency
    return name


def every(
    name: str, seconds: Callable[[Settings], int]
) -> Callable[[ScheduledWorkflow], ScheduledWorkflow]:
    """Run a DBOS workflow every `seconds(settings)` seconds (1-59; 0 turns it off). DBOS gives
    each firing one workflow id, so however many processes run, each firing runs once."""

    def register(workflow: ScheduledWorkflow) -> ScheduledWorkflow:
        _schedules[name] = (workflow, seconds)
        return workflow

    return register


async def configure(settings: Settings) -> None:
    """Register the declared queues and schedules with the launched DBOS."""
    for name, limit in _queue_limits.items():
        _queues[name] = await DBOS.register_queue_async(
            name, worker_concurrency=limit, polling_interval_sec=0.5
        )
    wanted: list[ScheduleInput] = []
    for name, (workflow, seconds_of) in _schedules.items():
        seconds = seconds_of(settings)
        if seconds:
            wanted.append(
                {
                    "schedule_name": name,
                    "workflow_fn": workflow,
                    "schedule": f"*/{seconds} * * * * *",
                }
            )
        elif await DBOS.get_schedule_async(name) is not None:
            # Switched off here: a schedule left in the system database would still fire.
            await DBOS.delete_schedule_async(name)
    if wanted:
        await DBOS.apply_schedules_async(wanted)


def shutdown(wait_seconds: int = 10) -> None:
    DBOS.destroy(workflow_completion_timeout_sec=wait_seconds)


Workflow = Callable[..., Coroutine[Any, Any, Any]]


async def start(workflow: Workflow, workflow_id: str, *args: Any, queue: str | None = None) -> None:
    """Start `workflow` under `workflow_id`; if that id already ran or runs, nothing new starts.

    With a `queue` it is enqueued instead: any worker process runs it when the queue's
    concurrency allows, and it survives a crash before it began.

    The workflow is always one of its own, never the child of a workflow or step this is called
    from (the scheduler's tick starts runs inside a step, where DBOS refuses children): its
    record in our tables and the reconciler make it durable, not the caller's checkpoints."""

    async def begin() -> None:
        with SetWorkflowID(workflow_id):
            if queue is None:
                await DBOS.start_workflow_async(workflow, *args)
            else:
                await _queues[queue].enqueue_async(workflow, *args)

    # A fresh context holds no DBOS workflow or step.
    await asyncio.get_running_loop().create_task(begin(), context=contextvars.Context())


def start_after_commit(
    session: AsyncSession,
    workflow: Workflow,
    workflow_id: str,
    *args: Any,
    queue: str | None = None,
) -> None:
    async def begin() -> None:
        await start(workflow, workflow_id, *args, queue=queue)

    after_commit(session, begin)


async def ping() -> None:
    await DBOS.list_workflows_async(limit=1)


@dataclass(frozen=True)
class Unfinished:
    """A record whose domain status says its work is not done."""

    workflow_id: str
    restart: Callable[[], Awaitable[None]]
    give_up: Callable[[AsyncSession, str], Awaitable[None]]
    # Set when the domain judges the work stuck (e.g. processing for too long): its workflow is
    # cancelled and the work given up with this reason, so nothing stays unfinished forever.
    stalled_reason: str | None = None


ReconcileSource = Callable[[AsyncSession], Awaitable[list[Unfinished]]]
_sources: dict[str, ReconcileSource] = {}


def reconcile_source(name: str) -> Callable[[ReconcileSource], ReconcileSource]:
    """Register a domain's query for its unfinished work."""

    def register(source: ReconcileSource) -> ReconcileSource:
        _sources[name] = source
        return source

    return register


Maintenance = Callable[[Database], Awaitable[object]]
_maintenance: dict[str, Maintenance] = {}


def maintenance(name: str) -> Callable[[Maintenance], Maintenance]:
    """Register housekeeping run on every reconcile pass (e.g. expiring stale credit holds).

    It runs in every worker process at once, so it must be idempotent.
    """

    def register(task: Maintenance) -> Maintenance:
        _maintenance[name] = task
        return task

    return register


@dataclass
class ReconcileReport:
    restarted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


async def reconcile_once(db: Database) -> ReconcileReport:
    """One pass over every source. Each item is handled on its own, in its own transaction, so
    one that cannot be settled never stops the others."""
    report = ReconcileReport()
    for name, source in _sources.items():
        async with db.unit_of_work() as session:
            items = await source(session)
        for work in items:
            try:
                await _reconcile(db, work, report)
            except Exception:
                log.exception("could not reconcile %s (%s)", work.workflow_id, name)
    return report


async def _reconcile(db: Database, work: Unfinished, report: ReconcileReport) -> None:
    status = await DBOS.get_workflow_status_async(work.workflow_id)
    if work.stalled_reason is not None:
        log.warning("giving up %s: %s", work.workflow_id, work.stalled_reason)
        if status is not None:
            await DBOS.cancel_workflow_async(work.workflow_id)
        reason = work.stalled_reason
    elif status is None:
        log.warning("restarting %s: its workflow is missing", work.workflow_id)
        await work.restart()
        report.restarted.append(work.workflow_id)
        return
    elif status.status in FAILED_STATUSES:
        reason = f"background work ended with status {status.status}"
    else:
        return
    async with db.unit_of_work() as session:
        await work.give_up(session, reason)
    report.failed.append(work.workflow_id)


async def reconcile_forever(db: Database, interval_seconds: float) -> None:
    """Reconcile now and then every `interval_seconds` until cancelled.

    Every process that runs workflows runs this; deterministic workflow ids make concurrent
    passes harmless.
    """
    while True:
        try:
            report = await reconcile_once(db)
            if report.restarted or report.failed:
                log.info("reconciled: restarted %s, failed %s", report.restarted, report.failed)
        except Exception:
            log.exception("reconcile pass failed")
        for name, task in _maintenance.items():
            try:
                await task(db)
            except Exception:
                log.exception("maintenance %s failed", name)
        await asyncio.sleep(interval_seconds)
