"""A workflow definition's runs, as the workflows group's operations show them: a test run of a
definition (started as any article run is, by service.py), the runs listed by day, one run with
what each of its steps took (time, tokens, credits), cancelling one."""

from __future__ import annotations

import uuid
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core.runtime import Runtime
from contentplatform.generation import events, repository, schemas
from contentplatform.generation.errors import RunNotFound, TooManyTestRuns, UnknownStep
from contentplatform.generation.models import GenerationRun
from contentplatform.generation.pipeline import charges, run_steps
from contentplatform.generation.pipeline.run import keeps_draft
from contentplatform.generation.service import BlogStart, cancel_run, start_blogs
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError, PlatformError, require
from contentplatform.tenants import service as tenants
from contentplatform.workflows import service as wf

MAX_TEST_RUNS = 3
TEST_KEY_PREFIX = "workflow-test:"
RUN_DAYS = 30


async def test_run(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    data: schemas.TestRunInput,
    *,
    created_by: str | None,
) -> GenerationRun:
    """A run of the workflow's working definition (which must validate) or of one of its
    versions on a topic, never published: `generation.blog` credits held (402), at most
    MAX_TEST_RUNS going at once per organization (429). The same idempotency key returns the
    same run."""
    if data.version == "working":
        definition = await wf.working_definition(session, tenant_id, data.id)
        wf.check_runnable(definition.steps)
    else:
        await wf.require(session, tenant_id, data.id)
        definition = await wf.definition_at(session, tenant_id, data.id, data.version)
    keys = [step["key"] for step in definition.steps]
    if data.stop_after_step is not None and data.stop_after_step not in keys:
        message = f"The definition has no step {data.stop_after_step!r} (its steps: {keys})."
        raise UnknownStep(message, errors=[FieldError("stopAfterStep", "no such step")])
    await tenants.lock_tenant(session, tenant_id)
    key = f"{TEST_KEY_PREFIX}{data.idempotency_key or uuid.uuid4()}"
    known = (await repository.by_keys(session, tenant_id, [key])).get(key)
    if known is None and await repository.test_runs_going(session, tenant_id) >= MAX_TEST_RUNS:
        raise TooManyTestRuns(
            f"The organization already has {MAX_TEST_RUNS} test runs going; start this one "
            "when one of them ends."
        )
    blog = schemas.BlogInput(
        topic=data.topic,
        keywords=data.keywords,
        document_ids=data.document_ids,
        idempotency_key=key,
    )
    test = {"createDraft": data.create_draft, "stopAfterStep": data.stop_after_step}
    if data.version == "working":
        definition = wf.Definition(definition.workflow_id, None, definition.name, definition.steps)
    [outcome] = await start_blogs(
        session,
        runtime,
        tenant_id,
        [BlogStart(blog, created_by, definition=definition, test=test)],
    )
    if isinstance(outcome, PlatformError):
        raise outcome
    if known is None:
        events.create_after_commit(session, tenant_id, outcome.run_id)
    run = await repository.get(session, tenant_id, outcome.run_id)
    assert run is not None, "made or found above, in this transaction"
    return run


async def workflow_run(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> schemas.WorkflowRun:
    run = require(await repository.get(session, tenant_id, run_id), RunNotFound, run_id)
    return schemas.WorkflowRun.model_validate(workflow_run_view(run))


async def workflow_runs(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListWorkflowRunsInput
) -> schemas.WorkflowRunPage:
    """Runs of articles (test, job and API runs), newest first, created within the days asked
    (the organization's time zone; the last 30 by default)."""
    zone = ZoneInfo(await tenants.timezone_of(session, tenant_id))
    today = utcnow().astimezone(zone).date()
    date_to = data.date_to or today
    date_from = data.date_from or (date_to - timedelta(days=RUN_DAYS - 1))
    if date_from > date_to:
        raise BadRequest(
            "dateFrom is after dateTo.", errors=[FieldError("dateFrom", "after dateTo")]
        )
    since = datetime.combine(date_from, time.min, zone)
    until = datetime.combine(date_to + timedelta(days=1), time.min, zone)
    rows, total = await repository.workflow_runs(session, tenant_id, data, since, until)
    views = [
        {**workflow_run_view(run), "steps": [_without_summary(s) for s in _steps_view(run)]}
        for run in rows
    ]
    return schemas.WorkflowRunPage.model_validate(
        {"data": views, "total": total, "page": data.page, "limit": data.limit}
    )


def _without_summary(step: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in step.items() if k != "output_summary"}


async def cancel_workflow_run(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> schemas.WorkflowRun:
    run = await cancel_run(session, runtime, tenant_id, run_id)
    return schemas.WorkflowRun.model_validate(workflow_run_view(run))


def _ms(start: datetime | None, end: datetime | None) -> int | None:
    if start is None or end is None:
        return None
    return max(0, int((end - start).total_seconds() * 1000))


def _steps_view(run: GenerationRun) -> list[dict[str, Any]]:
    shown = []
    for step in run.steps or []:
        input_tokens, output_tokens, model = run_steps.step_usage(run.usage, step["key"])
        started = _moment(step.get("started_at"))
        finished = _moment(step.get("finished_at"))
        shown.append(
            {
                **step,
                "started_at": started,
                "finished_at": finished,
                "duration_ms": _ms(started, finished),
                "model": model,
                "tokens": {"input": input_tokens, "output": output_tokens},
                "credits": run_steps.step_credits(input_tokens, output_tokens),
            }
        )
    return shown


def _moment(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def workflow_run_view(run: GenerationRun) -> dict[str, Any]:
    """The run as workflows.getRun shows it."""
    input_tokens, output_tokens = charges.tokens_of(run)
    error = None
    if run.error:
        failed = next(
            (s["key"] for s in run.steps or [] if s["status"] in ("failed", "cancelled")), None
        )
        error = {"code": run.error["code"], "step_key": failed, "message": run.error["message"]}
    version: int | str | None = run.workflow_version
    if run.workflow_id is not None and version is None:
        version = "working"
    return {
        "id": run.id,
        "workflow_id": run.workflow_id,
        "workflow_version": version,
        "workflow_name": (run.definition or {}).get("name") or wf.builtin_definition().name,
        "trigger": run.trigger,
        "job_instance_id": run.instance_id,
        "draft_id": run.draft_id if keeps_draft(run) else None,
        "topic": run.request.get("topic") or "",
        "status": run.status,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "duration_ms": _ms(run.started_at, run.finished_at),
        "waiting_until": run.waiting_until,
        "tokens": {
            "input": input_tokens,
            "output": output_tokens,
            "total": input_tokens + output_tokens,
        },
        "credits_used": run.credits_committed,
        "error": error,
        "result": run.result,
        "steps": _steps_view(run),
    }
