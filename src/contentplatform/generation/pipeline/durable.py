"""The pipeline's DBOS registration: the workflow `generation.blog` (each run is one, with the id
`generation:<run id>`), the queue it runs on, and the reconcile source that restarts a run whose
workflow is missing or fails one that stalled. The names are recorded in DBOS's tables and must
not change: a run in flight resumes by them after an upgrade."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.generation import repository
from contentplatform.generation.models import GenerationRun
from contentplatform.generation.pipeline.endings import abandon, announce, fail, mark_failed
from contentplatform.generation.pipeline.errors import Superseded, error_of
from contentplatform.generation.pipeline.run import workflow_id
from contentplatform.generation.pipeline.runner import rewrite_chosen_sections, write_article
from contentplatform.generation.pipeline.start import begin, reusable
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow

log = logging.getLogger(__name__)

# Runs wait here and at most this many run at once in each worker process, so a burst of runs
# (a scheduler tick after downtime, a bulk trigger) queues instead of flooding the model; one
# organization's burst takes at most PER_TENANT of them, so another's run starts beside it.
WORKER_CONCURRENCY = 8
PER_TENANT = 6
QUEUE = durable.declare_queue(
    "generation", worker_concurrency=WORKER_CONCURRENCY, per_tenant=PER_TENANT
)


@DBOS.workflow(name="generation.blog")
async def generate_blog(tenant_id: str, run_id: str) -> str:
    ids = (uuid.UUID(tenant_id), uuid.UUID(run_id))
    try:
        start = await begin(*ids)
        reuse = await reusable(ids[0], start["retry_of"]) if start["retry_of"] else {}
        if start["sections"]:
            await rewrite_chosen_sections(ids, start, reuse)
        else:
            await write_article(ids, start, reuse)
        outcome = "succeeded"
    except Superseded as stop:
        await abandon(*ids, str(stop) or "The draft is no longer being generated.")
        outcome = "cancelled"
    except Exception as error:
        await fail(*ids, error_of(error))
        outcome = "failed"
    try:
        await announce(*ids)
    except Exception:
        # The run has ended either way; whoever opens its stream next appends its end.
        log.warning("could not announce the end of run %s", run_id, exc_info=True)
    return outcome


STALLED = "Generation stalled and was stopped."


@durable.reconcile_source("generation.blog")
async def unfinished_runs(session: AsyncSession) -> list[durable.Unfinished]:
    """Runs still queued or running: restarted when their workflow is missing, failed when it
    failed or when a run outlasts `generation_stall_seconds`."""
    stall_after = timedelta(seconds=runtime.current().settings.generation_stall_seconds)
    now = utcnow()
    work = []
    for run in await repository.unfinished(session):
        stalled = now - _active_since(run) > stall_after
        if run.status == "waiting_review":  # its gate's own timeout fails it, in the workflow
            stalled = run.waiting_until is not None and now - run.waiting_until > stall_after
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(run.id),
                restart=durable.restarter(
                    generate_blog, workflow_id(run.id), str(run.tenant_id), str(run.id), queue=QUEUE
                ),
                give_up=_giver_up(run.tenant_id, run.id),
                stalled_reason=STALLED if stalled else None,
            )
        )
    return work


def _active_since(run: GenerationRun) -> datetime:
    """When the run last started working: its start, or the end of its last review gate."""
    since = run.started_at or run.created_at
    for step in run.steps or ():
        if step["type"] == "review_gate" and step.get("finished_at"):
            since = max(since, datetime.fromisoformat(step["finished_at"]))
    return since


def _giver_up(tenant_id: uuid.UUID, run_id: uuid.UUID) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        code = "STALLED" if reason == STALLED else "INTERNAL_ERROR"
        error = {"code": code, "message": reason, "retryable": True}
        await mark_failed(session, tenant_id, run_id, error)

    return give_up
