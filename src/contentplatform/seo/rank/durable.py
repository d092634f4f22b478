"""Rank checks as durable work: the open tasks of one sync run (kind `rank_check`), read by a
DBOS workflow (`seo.rank:<run id>`) enqueued once seo.checkRankings commits.

It has no DBOS steps: the position rows are its checkpoints. In task mode each batch of up to
100 tasks is posted (task_post) and their DataForSEO ids stored in one transaction, so a
workflow recovered after a crash asks tasks_ready for them rather than posting them again (a
crash between DataForSEO's answer and that commit posts them again: the one window where a
task may be paid twice); then tasks_ready is polled every `rank_poll_seconds` and each of our
ready tasks fetched (task_get/advanced) and stored in its own transaction, until none is open
or `rank_task_timeout_seconds` have passed since the run started (those still open fail,
`timeout`). In live mode (and with the offline provider) each task is one live/advanced
request, stored as soon as it is answered.

The run ends succeeded, partial or failed by what became of its tasks; its credits are
committed for the SERP pages the succeeded tasks read (released when none succeeded).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.errors import PlatformError
from contentplatform.seo import repository as seo_repository
from contentplatform.seo.connections import access as connections
from contentplatform.seo.rank import checks, offline, provider, reading, repository
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)

QUEUE = durable.declare_queue("seo.rank", worker_concurrency=2, per_tenant=1)
INTERNAL = "The check stopped on an internal error; the service logged it."
# A run none of whose open tasks moved for this long (past the task timeout) is given up.
STALL_SECONDS = 2 * 3600


def workflow_id(run_id: uuid.UUID) -> str:
    return f"seo.rank:{run_id}"


def enqueue_after_commit(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    durable.enqueue_after_commit(
        session, check_rankings, [(workflow_id(run_id), (str(tenant_id), str(run_id)))], queue=QUEUE
    )


@dataclass(frozen=True)
class Context:
    """What reading the run's SERPs needs, read when the work starts (credentials are never
    workflow inputs)."""

    provider: str
    credentials: dict[str, Any] | None
    owners: reading.Owners
    own_host: str | None
    depth: int
    stop_at_own_domain: bool
    mode: str


@DBOS.workflow(name="seo.rank")
async def check_rankings(tenant_id: str, run_id: str) -> str:
    db = runtime.current().db
    tenant, run = uuid.UUID(tenant_id), uuid.UUID(run_id)
    try:
        return await _work(db, tenant, run)
    except Exception:
        log.exception("Rank check %s failed", run_id)
        async with db.unit_of_work() as session:
            return await give_up(session, tenant, run, "internal", INTERNAL)


async def _context(
    session: AsyncSession, tenant_id: uuid.UUID, params: dict[str, Any]
) -> Context | None:
    found = await connections.serp_provider(session, tenant_id)
    if found is None:
        return None
    stored = await seo_repository.stored_settings(session, tenant_id)
    host = urlsplit(stored.site_url).hostname if stored and stored.site_url else None
    own = host.removeprefix("www.") if host else None
    competitors = {
        row.domain: row.id
        for row in await seo_repository.competitors(session, tenant_id)
        if row.track_rank
    }
    return Context(
        provider=found[0],
        credentials=found[1],
        owners=reading.Owners(own, competitors),
        own_host=own,
        depth=int(params["depth"]),
        stop_at_own_domain=bool(params.get("stop_at_own_domain")),
        mode=str(params.get("mode") or "task"),
    )


async def _work(db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID) -> str:
    async with db.unit_of_work() as session:
        run = await sync_runs.mark_running(session, tenant_id, run_id)
        if run.status != "running":
            return "settled"
        started = run.started_at or utcnow()
        context = await _context(session, tenant_id, dict(run.params))
        if context is None:
            return await give_up(
                session,
                tenant_id,
                run_id,
                "not_connected",
                "No SERP provider is connected any more.",
            )
    if context.provider == connections.OFFLINE or context.mode == "live":
        await _live(db, tenant_id, run_id, context)
    else:
        await _post(db, tenant_id, run_id, context)
        deadline = time.monotonic() + max(
            0.0,
            runtime.current().settings.rank_task_timeout_seconds
            - (utcnow() - started).total_seconds(),
        )
        await _collect(db, tenant_id, run_id, context, deadline)
    async with db.unit_of_work() as session:
        return await settle(session, tenant_id, run_id)


async def _tasks(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, status: str, context: Context
) -> list[tuple[uuid.UUID, str | None, provider.Task]]:
    """(position row, DataForSEO task id, the task) of the run's rows in `status`."""
    found = []
    rows = await repository.of_run(session, tenant_id, run_id, [status])
    # One query for the keywords: task mode asks again at every poll.
    keywords = await repository.by_ids(session, tenant_id, [row.keyword_id for row in rows])
    for row in rows:
        keyword = keywords.get(row.keyword_id)
        if keyword is None:
            continue
        task = provider.Task(
            tag=str(row.id),
            keyword=keyword.keyword,
            location_code=keyword.location_code,
            language_code=keyword.language_code,
            device=keyword.device,
            depth=context.depth,
            stop_at=context.own_host if context.stop_at_own_domain else None,
        )
        found.append((row.id, row.task_id, task))
    return found


async def _serp(context: Context, task: provider.Task) -> provider.Result | provider.Failed:
    if context.provider == connections.OFFLINE:
        competitor_hosts = list(context.owners.competitors)
        return offline.serp(task, context.own_host, competitor_hosts, checks.today())
    return await provider.live(runtime.current().settings, context.credentials or {}, task)


async def _live(db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID, context: Context) -> None:
    async with db.unit_of_work() as session:
        tasks = await _tasks(session, tenant_id, run_id, "pending", context)
    for row_id, _, task in tasks:
        # No transaction is held while the provider answers.
        await _store(db, tenant_id, run_id, row_id, await _serp(context, task), context)


async def _post(db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID, context: Context) -> None:
    settings = runtime.current().settings
    async with db.unit_of_work() as session:
        tasks = await _tasks(session, tenant_id, run_id, "pending", context)
    for start in range(0, len(tasks), provider.MAX_TASKS_PER_POST):
        batch = tasks[start : start + provider.MAX_TASKS_PER_POST]
        outcome: dict[str, provider.Posted | provider.Failed]
        try:
            outcome = await provider.post_tasks(
                settings, context.credentials or {}, [task for _, _, task in batch]
            )
        except provider.RequestFailed as error:
            outcome = {task.tag: provider.Failed(error.code, error.message) for _, _, task in batch}
        async with db.unit_of_work() as session:
            for row_id, _, task in batch:
                row = await repository.get_position(session, tenant_id, row_id, for_update=True)
                if row is None or row.status != "pending":
                    continue
                answer = outcome[task.tag]
                if isinstance(answer, provider.Failed):
                    checks.fail(row, answer.code, answer.message)
                else:
                    row.status, row.task_id, row.cost = "posted", answer.task_id, answer.cost
            await session.flush()
            await _progress(session, tenant_id, run_id)


async def _collect(
    db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID, context: Context, deadline: float
) -> None:
    settings = runtime.current().settings
    credentials = context.credentials or {}
    while True:
        async with db.unit_of_work() as session:
            posted = await _tasks(session, tenant_id, run_id, "posted", context)
        if not posted:
            return
        try:
            ready = await provider.ready(settings, credentials)
        except provider.RequestFailed as error:
            log.warning("tasks_ready failed for rank check %s: %s", run_id, error.message)
            ready = set()
        moved = False
        for row_id, task_id, _ in posted:
            if task_id is None or task_id not in ready:
                continue
            try:
                answer = await provider.get(settings, credentials, task_id)
            except provider.RequestFailed as error:
                log.warning("task_get failed for rank check %s: %s", run_id, error.message)
                continue  # asked again at the next poll
            if isinstance(answer, provider.Failed) and answer.code in provider.NOT_READY:
                continue
            await _store(db, tenant_id, run_id, row_id, answer, context)
            moved = True
        if moved:
            continue
        if time.monotonic() >= deadline:
            async with db.unit_of_work() as session:
                for row in await repository.of_run(session, tenant_id, run_id, ["posted"]):
                    checks.fail(row, "timeout", "DataForSEO did not finish the task in time.")
                await session.flush()
            return
        await asyncio.sleep(settings.rank_poll_seconds)


async def _store(
    db: Database,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    row_id: uuid.UUID,
    answer: provider.Result | provider.Failed,
    context: Context,
) -> None:
    async with db.unit_of_work() as session:
        row = await repository.get_position(session, tenant_id, row_id, for_update=True)
        if row is None or row.status not in repository.OPEN:
            return
        keyword = await repository.get(session, tenant_id, row.keyword_id, for_update=True)
        if isinstance(answer, provider.Failed):
            checks.fail(row, answer.code, answer.message)
        elif keyword is not None:
            found = reading.read(answer, context.owners, context.depth, context.stop_at_own_domain)
            await checks.complete(
                session,
                row,
                keyword,
                found,
                provider=context.provider,
                depth=context.depth,
                cost=answer.cost if answer.cost is not None else row.cost,
            )
        await session.flush()
        await _progress(session, tenant_id, run_id, completed=row.status == "completed")


async def _progress(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, *, completed: bool = False
) -> None:
    counts = await repository.run_counts(session, tenant_id, run_id)
    total = sum(counts.values())
    still = sum(counts.get(status, 0) for status in repository.OPEN)
    await sync_runs.record_progress(
        session, tenant_id, run_id, done=total - still, total=total, rows=1 if completed else 0
    )


async def settle(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> str:
    """The run's credits settled (the pages its succeeded tasks read committed, the rest given
    back), then the run ended by what became of its tasks."""
    await _progress(session, tenant_id, run_id)
    run = await sync_runs.require(session, tenant_id, run_id, for_update=True)
    reservation = run.params.get("reservation_id")
    if run.status in ("queued", "running") and reservation:
        used = min(await repository.pages_used(session, tenant_id, run_id), run.credits_reserved)
        try:
            if used:
                await credits.commit(
                    session,
                    tenant_id,
                    uuid.UUID(reservation),
                    used,
                    description=f"seo.checkRankings: {used} SERP pages (run {run_id})",
                )
            else:
                await credits.release(session, tenant_id, uuid.UUID(reservation))
            run.credits_used = used
        except PlatformError:
            # The hold expired or was settled meanwhile: nothing more is charged.
            log.exception("rank check %s could not settle its credits", run_id)
    counts = await repository.run_counts(session, tenant_id, run_id)
    return await sync_runs.finish_by_items(
        session,
        tenant_id,
        run_id,
        completed=counts.get("completed", 0),
        failed=counts.get("failed", 0),
        failures=lambda: repository.run_failures(session, tenant_id, run_id, 100),
        code="rank_checks_failed",
        noun="SERP tasks",
    )


async def give_up(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, code: str, message: str
) -> str:
    """The run's open tasks failed with {code, message}, then the run settled."""
    for row in await repository.of_run(session, tenant_id, run_id, list(repository.OPEN)):
        checks.fail(row, code, message)
    await session.flush()
    return await settle(session, tenant_id, run_id)


@durable.reconcile_source("seo.rank")
async def unfinished_runs(session: AsyncSession) -> list[durable.Unfinished]:
    """Checks with tasks still open: restarted when their workflow is missing, given up when it
    ended in error or none of their tasks moved for STALL_SECONDS."""
    return sync_runs.unfinished_item_runs(
        await repository.open_runs(session),
        workflow=check_rankings,
        workflow_id=workflow_id,
        queue=QUEUE,
        give_up=give_up,
        stall_seconds=STALL_SECONDS,
        stalled="The check made no progress for 2 hours and was stopped.",
        work="The check's background work",
    )
