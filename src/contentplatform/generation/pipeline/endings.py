"""How a run ends when it does not finish: failed (`fail`, `mark_failed`) or abandoned; and its
end announced on its stream whichever way it ended."""

from __future__ import annotations

import uuid
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.drafts import service as drafts
from contentplatform.events import service as outbox  # `events` is the run's stream (events.py)
from contentplatform.generation import events, repository, watchers
from contentplatform.generation.pipeline import run_steps
from contentplatform.generation.pipeline.run import UNFINISHED, keeps_draft
from contentplatform.kit.db import utcnow


@DBOS.step(name="generation.fail")
async def fail(tenant_id: uuid.UUID, run_id: uuid.UUID, error: dict[str, Any]) -> None:
    async with runtime.current().db.unit_of_work() as session:
        await mark_failed(session, tenant_id, run_id, error)


@DBOS.step(name="generation.abandon")
async def abandon(tenant_id: uuid.UUID, run_id: uuid.UUID, reason: str) -> None:
    """The draft went away or the run was cancelled: end the run, give the credits back.

    A run that already ended is left as it is, hold included: whatever ended it settled the hold
    (a step re-executed after its commit, e.g. `finalize` after a crash before DBOS recorded it,
    finds the run succeeded and its credits committed; cancelRun charged what had been made)."""
    async with runtime.current().db.unit_of_work() as session:
        run = await repository.get(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in UNFINISHED:
            return
        run.status = "cancelled"
        run.error = {"code": "CANCELLED", "message": reason, "retryable": False}
        run.finished_at = utcnow()
        run.waiting_until = None
        if run.steps:
            run.steps = run_steps.end(run.steps, "cancelled", run.finished_at)
        if run.reservation_id is not None:
            await credits.release(session, tenant_id, run.reservation_id)
        await watchers.run_changed(session, run)


@DBOS.step(name="generation.announce", retries_allowed=True, max_attempts=5, interval_seconds=0.5)
async def announce(tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """Append the ended run's terminal event to its stream, unless it has one (events.py)."""
    await events.announce_end(tenant_id, run_id)


async def mark_failed(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, error: dict[str, Any]
) -> None:
    """Fail the run and reject its draft with the reason; release the hold. Idempotent."""
    run = await repository.get(session, tenant_id, run_id, for_update=True)
    if run is None or run.status not in UNFINISHED:
        return
    draft = await drafts.generating(session, tenant_id, run.draft_id, run.id)
    if draft is not None and not keeps_draft(run):
        drafts.discard_generated(draft)
    elif draft is not None:
        drafts.fail_generation(draft, f"Generation failed: {error['message']}")
    if run.reservation_id is not None:
        await credits.release(session, tenant_id, run.reservation_id)
    run.status = "failed"
    run.error = error
    run.finished_at = utcnow()
    run.waiting_until = None
    if run.steps:
        run.steps = run_steps.end(run.steps, "failed", run.finished_at, error)
    outbox.emit(
        session,
        tenant_id,
        "generation.run_failed",
        resource_id=run.id,
        payload={
            "run_id": run.id,
            "job_id": run.job_id,
            "instance_id": run.instance_id,
            "draft_id": run.draft_id,
            "error": error,
        },
    )
    await watchers.run_changed(session, run)
