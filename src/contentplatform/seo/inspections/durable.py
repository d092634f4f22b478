"""URL inspections as durable work: the pending inspections of one sync run (kind
`url_inspection`), made one at a time by a DBOS workflow (`seo.inspect:<run id>`), enqueued once
seo.inspectUrls commits.

It has no DBOS steps: the inspections' own rows are its checkpoints. Each is settled (completed
or failed) in its own transaction as soon as Google answers, so a workflow DBOS recovers after a
crash (or the reconciler restarts) goes on with the ones still pending and never asks Google
twice for one it stored.

Google allows 600 inspections a minute per property: every call first takes its turn from the
service's rate limiter (kit/ratelimit.py: in Redis when configured, so every process shares the
count; in memory otherwise), keyed by the property's URL. A retryable refusal (429,
quotaExceeded, 5xx, unreachable) is tried again up to RETRIES times after Google's Retry-After
(else BACKOFF_SECONDS doubling, at most MAX_BACKOFF_SECONDS); then, or for any other refusal,
the inspection fails with {code: Google's reason, message}. A 401 marks the connection
needs_reauth (its admins told) and fails the run's inspections left (`grant_revoked`). A run is
answered only by its own provider (Google's, or the offline one's made-up data): once another
is in use, its inspections left fail (`not_connected`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.kit import durable
from contentplatform.kit.db import Database
from contentplatform.kit.errors import TooManyRequests
from contentplatform.seo.connections import access as connections
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.connections.google import GoogleApiError, GoogleGrantRevoked
from contentplatform.seo.inspections import repository, results
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)

# Module constants, so a test can lower them.
PACE_RULE = "600/minute"
RETRIES = 3
BACKOFF_SECONDS = 2.0
MAX_BACKOFF_SECONDS = 60.0
# A run whose oldest pending inspection is this old is given up (its workflow cancelled).
STALL_SECONDS = 30 * 60
# Inspection runs at once per process, one per organization (its runs share its property's
# daily quota anyway): another organization's run never waits behind a long one.
QUEUE = durable.declare_queue("seo.inspections", worker_concurrency=4, per_tenant=1)

REVOKED = "Google no longer accepts the Search Console grant: reconnect Search Console."
INTERNAL = "The inspection stopped on an internal error; the service logged it."
SWITCHED = (
    "Search Console is reached through another provider since the inspection was asked for "
    "(Google's connection or the offline one's): inspect the URL again."
)


def workflow_id(run_id: uuid.UUID) -> str:
    return f"seo.inspect:{run_id}"


def enqueue_after_commit(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    durable.enqueue_after_commit(
        session,
        inspect_urls,
        [(workflow_id(run_id), (str(tenant_id), str(run_id)))],
        queue=QUEUE,
    )


@DBOS.workflow(name="seo.inspect_urls")
async def inspect_urls(tenant_id: str, run_id: str) -> str:
    db = runtime.current().db
    tenant, run = uuid.UUID(tenant_id), uuid.UUID(run_id)
    try:
        return await _work(db, tenant, run)
    except Exception:
        log.exception("URL inspection run %s failed", run_id)
        # The error's own text may hold SQL: it goes to the log, not to the client.
        async with db.unit_of_work() as session:
            return await give_up(session, tenant, run, "internal", INTERNAL)


async def _work(db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID) -> str:
    async with db.unit_of_work() as session:
        run = await sync_runs.mark_running(session, tenant_id, run_id)
        if run.status != "running":
            return "settled"
        provider = run.provider
    while True:
        async with db.unit_of_work() as session:
            item = await repository.next_pending(session, tenant_id, run_id)
            if item is None:
                return await settle(session, tenant_id, run_id)
            item_id, url, language = item.id, item.url, item.language_code
            try:
                access = await connections.search_console(session, tenant_id)
            except SearchConsoleNotConnected as refused:
                return await give_up(session, tenant_id, run_id, "not_connected", refused.detail)
            if access.provider != provider:
                # Another provider is in use since the run was asked for: its answers would be
                # recorded as the run's provider's (made-up ones as Google's, or the reverse).
                return await give_up(session, tenant_id, run_id, "not_connected", SWITCHED)
        # No transaction is held while Google answers.
        outcome = await _inspect(access, url, language)
        async with db.unit_of_work() as session:
            if isinstance(outcome, GoogleGrantRevoked):
                await connections.grant_revoked(session, tenant_id)
                return await give_up(session, tenant_id, run_id, "grant_revoked", REVOKED)
            row = await repository.get_inspection(session, tenant_id, item_id, for_update=True)
            if row is not None and row.status == "pending":
                if isinstance(outcome, GoogleApiError):
                    code = outcome.reason or ("unreachable" if outcome.status == 0 else "failed")
                    results.fail(row, code, outcome.message)
                else:
                    results.complete(row, outcome)
            await _progress(session, tenant_id, run_id)


async def _inspect(
    access: connections.SearchConsoleAccess, url: str, language: str | None
) -> dict[str, Any] | GoogleApiError:
    """Google's inspectionResult, or its last refusal."""
    attempt = 0
    while True:
        await _take_turn(access.site_url)
        try:
            return await access.client.inspect(access.site_url, url, language)
        except GoogleGrantRevoked as revoked:
            return revoked
        except GoogleApiError as refused:
            if not refused.retryable or attempt >= RETRIES:
                return refused
            wait = refused.retry_after or BACKOFF_SECONDS * 2**attempt
            await asyncio.sleep(min(wait, MAX_BACKOFF_SECONDS))
            attempt += 1


async def _take_turn(site_url: str) -> None:
    """Wait until the property may be sent one more inspection (PACE_RULE)."""
    limiter = runtime.current().limiter
    while True:
        try:
            await limiter.check(PACE_RULE, f"seo:inspect:{site_url}")
            return
        except TooManyRequests as refused:
            await asyncio.sleep(float(refused.headers.get("Retry-After", "1")))


async def _progress(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    counts = await repository.run_counts(session, tenant_id, run_id)
    await sync_runs.record_item_progress(session, tenant_id, run_id, counts)


async def settle(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> str:
    """The run ended by what became of its inspections: succeeded when none failed, failed
    when none completed, partial otherwise (its error names the failed URLs)."""
    await _progress(session, tenant_id, run_id)
    counts = await repository.run_counts(session, tenant_id, run_id)
    return await sync_runs.finish_by_items(
        session,
        tenant_id,
        run_id,
        completed=counts.get("completed", 0),
        failed=counts.get("failed", 0),
        failures=lambda: repository.run_failures(session, tenant_id, run_id, 100),
        code="inspections_failed",
        noun="URL inspections",
    )


async def give_up(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, code: str, message: str
) -> str:
    """The run's pending inspections failed with {code, message}, then the run settled."""
    for row in await repository.pending_of_run(session, tenant_id, run_id):
        results.fail(row, code, message)
    await session.flush()
    return await settle(session, tenant_id, run_id)


@durable.reconcile_source("seo.url_inspection")
async def unfinished_runs(session: AsyncSession) -> list[durable.Unfinished]:
    """Runs with inspections still pending: restarted when their workflow is missing (a crash
    between the commit and the enqueue), given up when it ended in error or when the oldest
    pending one waited STALL_SECONDS."""
    return sync_runs.unfinished_item_runs(
        await repository.pending_runs(session),
        workflow=inspect_urls,
        workflow_id=workflow_id,
        queue=QUEUE,
        give_up=give_up,
        stall_seconds=STALL_SECONDS,
        stalled="The inspection waited 30 minutes without an answer and was stopped.",
        work="The inspection's background work",
    )
