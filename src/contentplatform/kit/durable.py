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
import contextlib
import contextvars
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from dbos import (
    DBOS,
    DBOSClient,
    DBOSConfig,
    EnqueueOptions,
    Queue,
    ScheduleInput,
    SetEnqueueOptions,
    SetWorkflowID,
)
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
        "executor_id": settings.executor_id,
        "sys_db_pool_size": settings.dbos_pool_size,
    }


def launch(settings: Settings) -> None:
    """Start DBOS in this process (call it from the running event loop that serves the app),
    then `await configure(settings)`."""
    config = dbos_config(settings)  # makes the data directory a SQLite file needs
    _write_ahead_log(settings.resolved_dbos_database_url)
    DBOS(config=config)
    logs.adopt("dbos")
    DBOS.launch()


def _write_ahead_log(url: str) -> None:
    """Put a SQLite system database in write-ahead-log mode (the file keeps it): DBOS checkpoints
    every step there, and in SQLite's default mode each commit waits for every reader and syncs a
    journal and the file, while in WAL mode readers never block the writer and a commit is one
    append."""
    database = sa.make_url(url)
    if database.get_backend_name() != "sqlite" or database.database in (None, "", ":memory:"):
        return
    with contextlib.closing(sqlite3.connect(database.database, timeout=30)) as connection:
        connection.execute("PRAGMA journal_mode=WAL")


@dataclass(frozen=True)
class _QueueLimits:
    # The most workflows of the queue one process runs at once.
    worker_concurrency: int
    # The most of them one organization's take of those, or None: no share per organization.
    per_tenant: int | None


_queue_limits: dict[str, _QueueLimits] = {}
_queues: dict[str, Queue] = {}
# Schedules by name -> (workflow taking (scheduled_at, context), seconds between runs; 0 is off).
ScheduledWorkflow = Callable[[datetime, Any], Coroutine[Any, Any, None]]
_schedules: dict[str, tuple[ScheduledWorkflow, Callable[[Settings], int]]] = {}


def declare_queue(name: str, *, worker_concurrency: int, per_tenant: int | None = None) -> str:
    """A queue workflows can be started on (`start(..., queue=name)`); DBOS keeps its entries,
    so what was enqueued survives a crash and any worker process takes it.

    With `per_tenant`, one organization's workflows hold at most that many of a process's
    `worker_concurrency` slots however many it enqueued, and the organizations with work waiting
    take turns at the rest (a DBOS partitioned queue, its partitions visited in random order at
    each poll): a tenant that enqueues a thousand runs does not hold up another's one. The
    partition is the workflow's first argument, the tenant's id, which every workflow of such a
    queue takes first."""
    assert per_tenant is None or 0 < per_tenant <= worker_concurrency
    _queue_limits[name] = _QueueLimits(worker_concurrency, per_tenant)
    return name


# The queues registered with partitions (`configure`).
_partitioned: set[str] = set()


def _partition_key(queue: str, args: Sequence[Any]) -> str | None:
    """The DBOS partition an entry of `queue` with these arguments goes to: its tenant's id on a
    queue with a share per tenant, else none."""
    if queue not in _partitioned:
        return None
    return str(uuid.UUID(str(args[0])))


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
    _open_enqueuer(settings)
    for name, limits in _queue_limits.items():
        per_tenant = limits.per_tenant
        if per_tenant is not None and await _waits_unpartitioned(name):
            log.warning("queue %s gets its share per tenant once what waits on it has run", name)
            per_tenant = None
        _queues[name] = await DBOS.register_queue_async(
            name,
            worker_concurrency=limits.worker_concurrency,
            partition_worker_concurrency=per_tenant,
            polling_interval_sec=settings.queue_poll_seconds,
        )
        if per_tenant is None:
            _partitioned.discard(name)
        else:
            _partitioned.add(name)
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


async def _waits_unpartitioned(queue: str) -> bool:
    """Whether `queue` is stored without partitions and holds entries enqueued so: a partitioned
    queue never takes an entry without a partition, so it stays as it is until they have run."""
    stored = await DBOS.retrieve_queue_async(queue)
    if stored is None or await stored.get_partition_worker_concurrency_async() is not None:
        return False
    waiting = await DBOS.list_workflows_async(
        queue_name=queue, status="ENQUEUED", limit=1, load_input=False, load_output=False
    )
    return bool(waiting)


def shutdown(wait_seconds: int = 10) -> None:
    DBOS.destroy(workflow_completion_timeout_sec=wait_seconds)
    _close_enqueuer()


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
                return
            with SetEnqueueOptions(queue_partition_key=_partition_key(queue, args)):
                await _queues[queue].enqueue_async(workflow, *args)

    # A fresh context holds no DBOS workflow or step.
    await asyncio.get_running_loop().create_task(begin(), context=contextvars.Context())


async def enqueue_later(
    workflow: Workflow, workflow_id: str, *args: Any, queue: str, delay_seconds: float
) -> None:
    """Enqueue `workflow` on `queue` under `workflow_id`, to start `delay_seconds` from now (a
    retry's wait). From a workflow, DBOS records the enqueue as one of its steps, so a
    recovered workflow does not enqueue it twice."""
    options = _enqueue_options(workflow, workflow_id, args, queue=queue)
    options["delay_seconds"] = delay_seconds
    await DBOS.enqueue_workflow_with_options_async(options, *args)


def _enqueue_options(
    workflow: Workflow, workflow_id: str, args: Sequence[Any], *, queue: str
) -> EnqueueOptions:
    """An entry of `queue`, owned by this application at its version as `Queue.enqueue` owns
    what it enqueues (so this process's workers and any other take it), in its partition."""
    options: EnqueueOptions = {
        # The name DBOS registered the workflow under (@DBOS.workflow(name=...)).
        "workflow_name": workflow.dbos_function_name,  # type: ignore[attr-defined]
        "queue_name": queue,
        "workflow_id": workflow_id,
        "app_version": __version__,
    }
    partition = _partition_key(queue, args)
    if partition is not None:
        options["queue_partition_key"] = partition
    return options


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


@dataclass(frozen=True)
class _Enqueuer:
    """A DBOS client on its own connection pool to the system database, for `enqueue_many`."""

    client: DBOSClient
    engine: sa.Engine


_enqueuer: _Enqueuer | None = None


def _open_enqueuer(settings: Settings) -> None:
    global _enqueuer
    if _enqueuer is not None:
        return
    url = sa.make_url(settings.resolved_dbos_database_url)
    if url.get_backend_name() == "postgresql":
        # Small: each enqueue is one short transaction, and every process opens this pool.
        engine = sa.create_engine(
            url.set(drivername="postgresql+psycopg"), pool_size=2, max_overflow=2
        )
    else:
        engine = sa.create_engine(url, connect_args={"timeout": 30})
    client = DBOSClient(system_database_engine=engine, application_name=APP_NAME, lazy=True)
    _enqueuer = _Enqueuer(client, engine)


def _close_enqueuer() -> None:
    global _enqueuer
    if _enqueuer is not None:
        _enqueuer.client.destroy()
        _enqueuer.engine.dispose()
        _enqueuer = None


async def enqueue_many(
    workflow: Workflow, starts: Sequence[tuple[str, tuple[Any, ...]]], *, queue: str
) -> None:
    """Enqueue `workflow` on `queue` once per (workflow id, arguments), all in one transaction
    of DBOS's system database: what `start(..., queue=queue)` does for one, for many at the
    price of one commit. An id already there is left as it is (a second enqueue starts nothing
    new).

    Through DBOS's client (`enqueue_in_transaction`, one row at a time on one connection: DBOS's
    multi-row insert compiles a new statement per batch and costs more per workflow), owned by
    this application at its version, as `Queue.enqueue` owns what it enqueues, so this
    process's workers and any other take them.
    """
    if not starts:
        return
    assert _enqueuer is not None, "configure() opens it"
    enqueuer = _enqueuer

    def insert() -> None:
        with enqueuer.engine.begin() as connection:
            for workflow_id, args in starts:
                entry = _enqueue_options(workflow, workflow_id, args, queue=queue)
                enqueuer.client.enqueue_in_transaction(connection, entry, *args)

    await asyncio.to_thread(insert)


def enqueue_after_commit(
    session: AsyncSession,
    workflow: Workflow,
    starts: Sequence[tuple[str, tuple[Any, ...]]],
    *,
    queue: str,
) -> None:
    """`enqueue_many` once the session's transaction has committed (nothing if it rolls back),
    before the unit of work returns; within `enqueues_beside()`, beside what follows instead.
    A crash between the commit and the enqueue leaves the domain's records without workflows:
    its reconcile source starts them."""
    if not starts:
        return

    async def begin() -> None:
        beside = _beside.get()
        if beside is None:
            await enqueue_many(workflow, starts, queue=queue)
        else:
            beside.add(enqueue_many(workflow, starts, queue=queue))

    after_commit(session, begin)


@dataclass
class Beside:
    """The enqueues `enqueues_beside()` let run on, and how many of them failed."""

    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    failed: int = 0

    def add(self, enqueue: Coroutine[Any, Any, None]) -> None:
        """Run `enqueue` once those before it are done: one after the other, on one thread and
        connection at a time, so they take the GIL from the caller as little as they can."""
        previous = self.tasks[-1] if self.tasks else None

        async def in_turn() -> None:
            if previous is not None:
                await asyncio.wait([previous])  # its own failure is counted on its own
            await enqueue

        self.tasks.append(asyncio.create_task(in_turn()))


_beside: contextvars.ContextVar[Beside | None] = contextvars.ContextVar(
    "durable_enqueues_beside", default=None
)


@contextlib.asynccontextmanager
async def enqueues_beside() -> AsyncIterator[Beside]:
    """Within the block, `enqueue_after_commit` does not hold up the unit of work that
    committed: its enqueue runs on while the caller goes on to its next transaction (the
    scheduler's tick, chunk after chunk). Every one is awaited when the block ends; a failure
    is logged and counted (`failed`), and left to the reconcile sources."""
    beside = Beside()
    token = _beside.set(beside)
    try:
        yield beside
    finally:
        _beside.reset(token)
        for outcome in await asyncio.gather(*beside.tasks, return_exceptions=True):
            if isinstance(outcome, BaseException):
                beside.failed += 1
                log.error("could not enqueue workflows: %r", outcome, exc_info=outcome)


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


def restarter(
    workflow: Workflow, workflow_id: str, *args: Any, queue: str | None = None
) -> Callable[[], Awaitable[None]]:
    """An `Unfinished.restart`: `workflow` started again under its id, with the same arguments
    (on its queue, if it has one)."""

    async def restart() -> None:
        await start(workflow, workflow_id, *args, queue=queue)

    return restart


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


Background = Callable[[Database, Settings], Awaitable[None]]
_background: dict[str, Background] = {}


def background(name: str) -> Callable[[Background], Background]:
    """Register work every worker process runs for as long as it lives (the events' dispatcher):
    it must loop on its own, catch its own failures, and be safe to run in many processes."""

    def register(task: Background) -> Background:
        _background[name] = task
        return task

    return register


async def run_forever(db: Database, settings: Settings) -> None:
    """The reconciler and every registered background task, until cancelled."""
    await asyncio.gather(
        reconcile_forever(db, settings.reconcile_interval_seconds),
        *(task(db, settings) for task in _background.values()),
    )


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
