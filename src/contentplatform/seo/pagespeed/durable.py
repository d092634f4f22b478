"""PageSpeed measurements as durable work: the pending results of one sync run (kind
`pagespeed`), measured one Lighthouse run at a time by a DBOS workflow (`seo.pagespeed:<run
id>`), enqueued once seo.runPageSpeed commits.

It has no DBOS steps: the results' own rows are its checkpoints. Each Lighthouse run is stored
on its pending row in its own transaction as soon as it is answered, and the row completes (the
medians taken) once it has all its runs; so a workflow DBOS recovers after a crash (or the
reconciler restarts) goes on with what is missing and never pays twice for a run it stored.

Who measures is the deployment's `pagespeed_provider`: Google's PageSpeed Insights (with the
tenant's key when pagespeed_insights is connected, keyless otherwise), or the local Lighthouse
CLI. A retryable failure (429, 5xx, unreachable, a local timeout) is tried again up to
`pagespeed_retries` times after Retry-After (else `pagespeed_backoff_seconds` doubling, at most
60 s); then, or for any other failure (Lighthouse could not load the page: 400
FAILED_DOCUMENT_REQUEST, ...), that URL and strategy is stored `failed` with {code, message}
and the run goes on with the others. The run ends succeeded, partial or failed by what became
of its results.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.kit import durable
from contentplatform.kit.db import Database
from contentplatform.seo.connections import access as connections
from contentplatform.seo.pagespeed import local, provider, repository, results
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 60.0
# A run none of whose pending measurements moved for this long is given up.
STALL_SECONDS = 30 * 60
# PageSpeed runs at once per process, one per organization: another organization's run never
# waits behind a long one.
QUEUE = durable.declare_queue("seo.pagespeed", worker_concurrency=2, per_tenant=1)
INTERNAL = "The measurement stopped on an internal error; the service logged it."


def workflow_id(run_id: uuid.UUID) -> str:
    return f"seo.pagespeed:{run_id}"


def enqueue_after_commit(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    durable.enqueue_after_commit(
        session,
        measure_urls,
        [(workflow_id(run_id), (str(tenant_id), str(run_id)))],
        queue=QUEUE,
    )


@DBOS.workflow(name="seo.pagespeed")
async def measure_urls(tenant_id: str, run_id: str) -> str:
    db = runtime.current().db
    tenant, run = uuid.UUID(tenant_id), uuid.UUID(run_id)
    try:
        return await _work(db, tenant, run)
    except Exception:
        log.exception("PageSpeed run %s failed", run_id)
        # The error's own text may hold SQL: it goes to the log, not to the client.
        async with db.unit_of_work() as session:
            return await give_up(session, tenant, run, "internal", INTERNAL)


async def _work(db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID) -> str:
    settings = runtime.current().settings
    async with db.unit_of_work() as session:
        run = await sync_runs.mark_running(session, tenant_id, run_id)
        if run.status != "running":
            return "settled"
    while True:
        async with db.unit_of_work() as session:
            item = await repository.next_pending(session, tenant_id, run_id)
            if item is None:
                return await settle(session, tenant_id, run_id)
            item_id, url, strategy = item.id, item.url, item.strategy
            categories = list(item.categories)
            key = await connections.pagespeed_key(session, tenant_id, settings)
        # No transaction is held while the page is measured.
        outcome = await _measure(settings, url, strategy, categories, key)
        async with db.unit_of_work() as session:
            row = await repository.get(session, tenant_id, item_id, for_update=True)
            if row is None or row.status != "pending":
                continue
            if isinstance(outcome, provider.MeasureFailed):
                results.fail(row, outcome.code, outcome.message)
            else:
                results.add_run(row, outcome)
            await session.flush()
            await _progress(session, tenant_id, run_id, completed=row.status == "completed")


async def measure(
    settings: Settings, url: str, strategy: str, categories: list[str], key: str | None
) -> provider.Measurement:
    """One Lighthouse run by the deployment's provider."""
    if settings.pagespeed_provider == "local":
        return await local.lighthouse(settings, url, strategy, categories)
    return await provider.google(settings, url, strategy, categories, key)


async def _measure(
    settings: Settings, url: str, strategy: str, categories: list[str], key: str | None
) -> provider.Measurement | provider.MeasureFailed:
    """The run's figures, or its last failure."""
    attempt = 0
    while True:
        try:
            return await measure(settings, url, strategy, categories, key)
        except provider.MeasureFailed as failed:
            if not failed.retryable or attempt >= settings.pagespeed_retries:
                return failed
            wait = failed.retry_after or settings.pagespeed_backoff_seconds * 2**attempt
            await asyncio.sleep(min(wait, MAX_BACKOFF_SECONDS))
            attempt += 1


async def _progress(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, *, completed: bool = False
) -> None:
    counts = await repository.run_counts(session, tenant_id, run_id)
    await sync_runs.record_item_progress(
        session, tenant_id, run_id, counts, rows=1 if completed else 0
    )


async def settle(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> str:
    """The run ended by what became of its results: succeeded when none failed, failed when
    none completed, partial otherwise (its error names the failed URLs)."""
    await _progress(session, tenant_id, run_id)
    counts = await repository.run_counts(session, tenant_id, run_id)
    return await sync_runs.finish_by_items(
        session,
        tenant_id,
        run_id,
        completed=counts.get("completed", 0),
        failed=counts.get("failed", 0),
        failures=lambda: repository.run_failures(session, tenant_id, run_id, 100),
        code="measurements_failed",
        noun="PageSpeed measurements",
    )


async def give_up(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, code: str, message: str
) -> str:
    """The run's pending results failed with {code, message}, then the run settled."""
    for row in await repository.pending_of_run(session, tenant_id, run_id):
        results.fail(row, code, message)
    await session.flush()
    return await settle(session, tenant_id, run_id)


@durable.reconcile_source("seo.pagespeed")
async def unfinished_runs(session: AsyncSession) -> list[durable.Unfinished]:
    """Runs with measurements still pending: restarted when their workflow is missing (a crash
    between the commit and the enqueue), given up when it ended in error or when none of
    their measurements moved for STALL_SECONDS."""
    return sync_runs.unfinished_item_runs(
        await repository.pending_runs(session),
        workflow=measure_urls,
        workflow_id=workflow_id,
        queue=QUEUE,
        give_up=give_up,
        stall_seconds=STALL_SECONDS,
        stalled="The measurement made no progress for 30 minutes and was stopped.",
        work="The measurement's background work",
    )
