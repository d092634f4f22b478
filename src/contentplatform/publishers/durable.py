"""Publishing as a DBOS workflow: wait for a scheduled time, then try, and retry transient
failures with backoff, each try a checkpointed step that records itself on the attempt. An
unpublish attempt runs the same way, each try taking the copy down.

A crash mid-try reruns that try on recovery; strategies make creates idempotent (they look the
item up before creating it), so a rerun never duplicates a post. The reconciler restarts
attempts whose workflow is missing and fails those whose workflow failed: no attempt stays
pending or running for ever.
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.kit import durable, outbound
from contentplatform.kit.db import utcnow
from contentplatform.publishers import attempts, repository, service
from contentplatform.publishers.strategies.base import (
    Article,
    Mode,
    PublishError,
    Remote,
    RemoteNotFound,
    Result,
    Strategy,
    Transient,
    unpublished,
)

# The longest a target's Retry-After may hold a try back; past it the attempt fails instead.
MAX_WAIT_SECONDS = 3600.0
# Attempts younger than this are left to the workflow that is starting them.
RECONCILE_AFTER = timedelta(seconds=60)


def workflow_id(attempt_id: uuid.UUID) -> str:
    return f"publish:{attempt_id}"


@DBOS.workflow(name="publishers.publish")
async def publish_draft(tenant_id: str, attempt_id: str) -> None:
    wait = await seconds_until_due(tenant_id, attempt_id)
    if wait > 0:
        await DBOS.sleep_async(wait)
    while True:
        outcome = await try_once(tenant_id, attempt_id)
        if outcome["done"]:
            return
        await DBOS.sleep_async(float(outcome["retry_in"]))


@DBOS.step(name="publishers.due")
async def seconds_until_due(tenant_id: str, attempt_id: str) -> float:
    async with runtime.current().db.unit_of_work() as session:
        attempt = await repository.attempt(session, uuid.UUID(tenant_id), uuid.UUID(attempt_id))
        if attempt is None or attempt.scheduled_at is None:
            return 0.0
        return max(0.0, (attempt.scheduled_at - utcnow()).total_seconds())


@DBOS.step(name="publishers.try")
async def try_once(tenant_id: str, attempt_id: str) -> dict[str, Any]:
    """One try: {done: true} when the attempt finished (either way), else {retry_in: seconds}."""
    current = runtime.current()
    settings = current.settings
    ids = (uuid.UUID(tenant_id), uuid.UUID(attempt_id))
    async with current.db.unit_of_work() as session:
        begun = await attempts.begin_try(session, *ids)
        if begun is None:
            return {"done": True}
        attempt, connection, article, remote, featured = begun
        tries = attempt.tries
        taking_down = attempt.mode == "unpublish"
        mode: Mode = "draft" if attempt.mode == "draft" else "publish"
        strategy_connection = connection
    try:
        if not taking_down:
            article = await attempts.with_featured_image(article, featured, current.store, settings)
        async with outbound.GuardedClient(service.policy(settings)) as client:
            strategy = service.build(strategy_connection, settings, client)
            if taking_down:
                assert remote is not None, "begin_try fails an unpublish without a copy"
                result = await _take_down(strategy, remote)
            elif remote is None:
                result = await strategy.publish(article, mode)
            else:
                result = await _update_or_recreate(strategy, remote, article, mode)
    except PublishError as error:
        final = not error.retryable or tries >= settings.publish_max_tries
        delay = _backoff(settings.publish_retry_seconds, tries, error.retry_after)
        if delay > MAX_WAIT_SECONDS:
            final = True
        async with current.db.unit_of_work() as session:
            await attempts.record_failure(session, *ids, error, final=final)
        return {"done": True} if final else {"done": False, "retry_in": delay}
    except Exception as error:  # a bug or an unexpected answer: fail visibly, never stay running
        failure = Transient(f"Publishing failed unexpectedly ({type(error).__name__}).")
        async with current.db.unit_of_work() as session:
            await attempts.record_failure(session, *ids, failure, final=True)
        raise
    async with current.db.unit_of_work() as session:
        await attempts.record_success(session, *ids, result)
    return {"done": True}


async def _update_or_recreate(
    strategy: Strategy[Any, Any], remote: Remote, article: Article, mode: Mode
) -> Result:
    """Update the copy on the target; if someone deleted it there, publish it afresh."""
    try:
        return await strategy.update(remote, article, mode)
    except RemoteNotFound:
        return await strategy.publish(article, mode)


async def _take_down(strategy: Strategy[Any, Any], remote: Remote) -> Result:
    """Take the copy down; one someone deleted on the target is down already."""
    try:
        return await strategy.unpublish(remote)
    except RemoteNotFound:
        return unpublished(remote.external_id, remote.remote_version)


def _backoff(base: float, tries: int, retry_after: float | None) -> float:
    delay: float = base * 2 ** (tries - 1) * random.uniform(1.0, 1.5)
    return max(delay, retry_after or 0.0)


# --- the reconciler's view ----------------------------------------------------------------------


@durable.reconcile_source("publishers.publish")
async def unfinished_attempts(session: AsyncSession) -> list[durable.Unfinished]:
    work = []
    for attempt in await repository.unfinished_attempts(session, utcnow() - RECONCILE_AFTER):
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(attempt.id),
                restart=durable.restarter(
                    publish_draft,
                    workflow_id(attempt.id),
                    str(attempt.tenant_id),
                    str(attempt.id),
                ),
                give_up=_giver_up(attempt.tenant_id, attempt.id),
            )
        )
    return work


def _giver_up(tenant_id: uuid.UUID, attempt_id: uuid.UUID) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        await attempts.give_up(session, tenant_id, attempt_id, reason)

    return give_up
