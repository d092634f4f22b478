"""Starting, following, cancelling and retrying generation runs; regenerating drafts; proposing
topics. Never commits.

`generation_credit_hold` credits are held when a run is asked for (402 when they are not
available); the pipeline commits what the run actually cost (workflows.charge_of), a cancelled
run what it had spent.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession
from sse_starlette import EventSourceResponse
from starlette.requests import Request

from contentplatform.auth.context import TenantAccess
from contentplatform.core.runtime import Runtime
from contentplatform.credits import service as credits
from contentplatform.documents import index as search
from contentplatform.documents import service as documents
from contentplatform.documents.schemas import ListDocumentsInput
from contentplatform.drafts import service as drafts
from contentplatform.drafts.models import Draft
from contentplatform.drafts.schemas import MAX_TITLE, ListDraftsInput
from contentplatform.generation import (
    events,
    passages,
    pipeline,
    repository,
    schemas,
    topics,
    watchers,
    workflows,
)
from contentplatform.generation.article import SOURCES_ANCHOR, sections_of
from contentplatform.generation.errors import (
    IdempotencyKeyReused,
    RunFinished,
    RunNotFound,
    RunNotRetryable,
    SectionNotFound,
    TooManyTestRuns,
    UnknownStep,
)
from contentplatform.generation.models import GenerationRun
from contentplatform.kit import durable
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.errors import BadRequest, FieldError, PlatformError, require
from contentplatform.settings import service as settings
from contentplatform.tenants import service as tenants
from contentplatform.workflows import service as wf

BLOG_KIND = "generation.blog"


def to_schema(run: GenerationRun) -> schemas.Run:
    return schemas.Run.model_validate(run)


def _request_of(data: schemas.BlogInput) -> dict[str, object]:
    return {
        "topic": data.topic,
        "keywords": list(data.keywords),
        "contentInstructions": data.content_instructions,
        "documentIds": None if data.document_ids is None else [str(i) for i in data.document_ids],
    }


@dataclass(frozen=True)
class BlogStart:
    """One article `start_blogs` is asked for."""

    data: schemas.BlogInput
    created_by: str | None
    job_id: uuid.UUID | None = None
    instance_id: uuid.UUID | None = None
    # The workflow the job names (None: the organization's default, else the built-in one).
    workflow_id: uuid.UUID | None = None
    workflow_version: int | None = None  # the version the job pins
    # A test run's definition (workflows.testRun), and what it was asked besides the article.
    definition: wf.Definition | None = None
    test: dict[str, Any] | None = None


@dataclass(frozen=True)
class Started:
    """The draft in `generating` and the run that writes it."""

    draft_id: uuid.UUID
    run_id: uuid.UUID


async def start_blog(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    data: schemas.BlogInput,
    *,
    created_by: str | None,
    job_id: uuid.UUID | None = None,
    instance_id: uuid.UUID | None = None,
) -> tuple[Draft, GenerationRun]:
    """A draft in `generating` and the run that writes it, started once this commits.

    The same idempotency key returns the same draft and run and never holds credits twice.
    """
    [outcome] = await start_blogs(
        session, runtime, tenant_id, [BlogStart(data, created_by, job_id, instance_id)]
    )
    if isinstance(outcome, PlatformError):
        raise outcome
    events.create_after_commit(session, tenant_id, outcome.run_id)
    draft = await drafts.require(session, tenant_id, outcome.draft_id)
    run = await repository.get(session, tenant_id, outcome.run_id)
    assert run is not None, "made or found above, in this transaction"
    return draft, run


async def start_blogs(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, starts: Sequence[BlogStart]
) -> list[Started | PlatformError]:
    """`start_blog` for many articles of one tenant at once, in their order: for each, its draft
    and run, or why it could not start (no credits left for it, a document not ready, a key
    reused for another request), which leaves nothing of it behind and the others going.

    Credits are held together (one balance check), drafts and runs inserted together, and the
    workflows enqueued together once this commits: what the scheduler pays per tenant, not per
    job. A key given twice in one call is one run.
    """
    # One start per tenant at a time, so two requests racing with one key agree on one run.
    await tenants.lock_tenant(session, tenant_id)
    keys = [start.data.idempotency_key or f"run:{uuid.uuid4()}" for start in starts]
    requests = [{**_request_of(start.data), **(start.test or {})} for start in starts]
    existing = await repository.by_keys(session, tenant_id, list(dict.fromkeys(keys)))
    outcomes: dict[str, Started | PlatformError] = {}
    fresh: dict[str, int] = {}  # key -> the start that needs a new run
    for index, (key, request) in enumerate(zip(keys, requests, strict=True)):
        if key in outcomes or key in fresh:
            continue  # given twice: one run
        known = existing.get(key)
        if known is not None:
            same = known.request == request
            outcomes[key] = Started(known.draft_id, known.id) if same else _reused(key)
        elif (refusal := await _unusable(session, tenant_id, starts[index].data)) is not None:
            outcomes[key] = refusal
        else:
            fresh[key] = index
    holds = await credits.reserve_many(
        session,
        tenant_id,
        kind=BLOG_KIND,
        holds=[credits.Hold(key, credits.price(BLOG_KIND).amount) for key in fresh],
        ttl_seconds=runtime.settings.credit_reservation_ttl_seconds,
        monthly_grant=runtime.settings.monthly_credit_grant,
    )
    held: list[tuple[str, uuid.UUID]] = []  # (key, its hold's id)
    for key, hold in zip(fresh, holds, strict=True):
        if isinstance(hold, PlatformError):
            outcomes[key] = hold
        else:
            held.append((key, hold.id))
    run_ids = [uuid.uuid4() for _ in held]
    # The drafts first: a run names its draft.
    draft_ids = await drafts.start_generating_many(
        session,
        tenant_id,
        [
            drafts.Generating(
                title=starts[fresh[key]].data.topic[:MAX_TITLE],
                run_id=run_id,
                job_id=starts[fresh[key]].job_id,
                instance_id=starts[fresh[key]].instance_id,
            )
            for (key, _), run_id in zip(held, run_ids, strict=True)
        ],
    )
    runs: list[dict[str, Any]] = []
    definitions: dict[tuple[uuid.UUID | None, int | None], wf.Definition] = {}
    for (key, hold_id), run_id, draft_id in zip(held, run_ids, draft_ids, strict=True):
        start = starts[fresh[key]]
        definition = start.definition
        if definition is None:
            named = (start.workflow_id, start.workflow_version)
            if named not in definitions:
                definitions[named] = await wf.definition_for_job(session, tenant_id, *named)
            definition = definitions[named]
        runs.append(
            {
                "id": run_id,
                "kind": "blog",
                "status": "queued",
                "percent": 0,
                "draft_id": draft_id,
                "job_id": start.job_id,
                "instance_id": start.instance_id,
                "idempotency_key": key,
                "request": requests[fresh[key]],
                "reservation_id": hold_id,
                "created_by": start.created_by,
                "trigger": _trigger(start),
                **frozen(definition),
            }
        )
        outcomes[key] = Started(draft_id, run_id)
    await repository.add_many(session, tenant_id, runs)
    durable.enqueue_after_commit(
        session,
        workflows.generate_blog,
        [(workflows.workflow_id(run_id), (str(tenant_id), str(run_id))) for run_id in run_ids],
        queue=workflows.QUEUE,
    )
    return [outcomes[key] for key in keys]


def _trigger(start: BlogStart) -> str:
    if start.test is not None:
        return "test"
    return "job_instance" if start.instance_id is not None else "api"


def frozen(definition: wf.Definition) -> dict[str, Any]:
    """A run's columns for the definition it follows (never changed after: a version published
    later does not touch a run in flight)."""
    steps = [dict(step) for step in definition.steps]
    return {
        "workflow_id": definition.workflow_id,
        "workflow_version": definition.version,
        "definition": {"name": definition.name, "steps": steps},
        "steps": pipeline.initial_steps(steps),
    }


def _reused(key: str) -> IdempotencyKeyReused:
    return IdempotencyKeyReused(
        f"The idempotencyKey {key!r} was already used for another request; "
        "use a new key for a new article."
    )


async def _unusable(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.BlogInput
) -> PlatformError | None:
    """Why the documents the article is to be grounded in cannot be used, if they cannot."""
    if data.document_ids:
        try:
            await documents.check_usable_for_generation(session, tenant_id, data.document_ids)
        except PlatformError as error:
            return error
    return None


async def get_run(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> schemas.Run:
    run = await repository.get(session, tenant_id, run_id)
    return to_schema(require(run, RunNotFound, run_id))


# --- runs -------------------------------------------------------------------------------------

CANCELLED = "Generation was cancelled."
RETRYABLE = ("failed", "cancelled")
# The drafts (newest first) whose titles and topics count as covered for suggestTopics.
COVERING_DRAFT_PAGES = 5
COVERING_PAGE = 100
COVERING_RUNS = 2000
# The documents suggestTopics draws from when none are named, and the passages of each.
TOPIC_DOCUMENTS = 100
TOPIC_PASSAGES_PER_DOCUMENT = 100


async def list_runs(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListRunsInput
) -> schemas.RunPage:
    rows, total = await repository.page(session, tenant_id, data)
    return schemas.RunPage.model_validate(
        {"data": rows, "total": total, "page": data.page, "limit": data.limit}
    )


async def stream_run(
    session: AsyncSession,
    runtime: Runtime,
    request: Request,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
) -> EventSourceResponse:
    return await events.open_stream(session, runtime, request, tenant_id, run_id)


async def cancel_run(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> GenerationRun:
    """End a queued or running run now: its draft rejected (CANCELLED), its hold charged what
    its finished model calls cost and released for the rest. The pipeline stops at its next step
    boundary; a call under way then is neither waited for nor charged."""
    run = require(
        await repository.get(session, tenant_id, run_id, for_update=True), RunNotFound, run_id
    )
    if run.status not in repository.UNFINISHED:
        raise RunFinished(
            f"The run is {run.status}; only a queued, running or waiting run can be cancelled."
        )
    draft = await drafts.generating(session, tenant_id, run.draft_id, run.id)
    if draft is not None and not workflows.keeps_draft(run):
        drafts.discard_generated(draft)
    elif draft is not None:
        drafts.fail_generation(draft, CANCELLED)
    charged = None
    if run.reservation_id is not None:
        held = await credits.get_reservation(session, tenant_id, run.reservation_id)
        cost = workflows.charge_of(run)
        if held.status == "held" and cost > 0:
            charged = min(cost, held.amount)
            await credits.commit(
                session, tenant_id, run.reservation_id, charged, spent=workflows.spent_of(run)
            )
        elif held.status == "held":
            await credits.release(session, tenant_id, run.reservation_id)
    waiting = run.status == "waiting_review"
    run.status = "cancelled"
    run.error = {"code": "CANCELLED", "message": "The run was cancelled.", "retryable": False}
    run.credits_committed = charged
    run.finished_at = utcnow()
    run.waiting_until = None
    if run.steps:
        run.steps = pipeline.end(run.steps, "cancelled", run.finished_at)
    if waiting:  # its workflow waits at a gate: it ends now, not at its next wake
        after_commit(session, functools.partial(workflows.wake, run.id))
    await watchers.run_changed(session, run)
    return run


async def retry_run(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    data: schemas.RetryRunInput,
    *,
    created_by: str | None,
) -> GenerationRun:
    """A new run (`retry_of` the failed or cancelled one) writing the same draft from the same
    request, under a new hold; it reuses the model calls of that run whose inputs did not
    change (workflows.py). The same idempotency key returns the same new run."""
    await tenants.lock_tenant(session, tenant_id)
    key = data.idempotency_key
    known = (await repository.by_keys(session, tenant_id, [key])).get(key)
    if known is not None:
        if known.retry_of == data.id:
            return known
        raise _reused(key)
    old = require(await repository.get(session, tenant_id, data.id), RunNotFound, data.id)
    if old.status not in RETRYABLE:
        raise RunNotRetryable(
            f"The run is {old.status}; only a failed or cancelled run can be retried."
        )
    draft = await drafts.require_or_none(session, tenant_id, old.draft_id, for_update=True)
    if draft is None or draft.run_id != old.id or draft.status != "rejected":
        raise RunNotRetryable(
            "The run's draft was deleted, edited or written again since the run ended; "
            "regenerate the draft instead (generation.regenerateDraft)."
        )
    chosen = old.request.get("documentIds")
    if chosen:
        await documents.check_usable_for_generation(
            session, tenant_id, [uuid.UUID(i) for i in chosen]
        )
    return await _start_again(
        session,
        runtime,
        tenant_id,
        draft,
        kind=old.kind,
        request=old.request,
        key=key,
        retry_of=old.id,
        created_by=created_by,
        followed=old,
    )


async def regenerate_draft(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    data: schemas.RegenerateDraftInput,
    *,
    created_by: str | None,
) -> GenerationRun:
    """A run (kind `regenerate`) writing a reviewing, rejected or approved draft again: whole,
    or the chosen sections only. It is about what the draft was generated about (its run's
    topic and keywords; a hand-written draft's title and focus keywords), with the new
    instructions and documents when given. The same idempotency key returns the same run."""
    await tenants.lock_tenant(session, tenant_id)
    key = data.idempotency_key
    asked = data.model_dump(mode="json", exclude={"idempotency_key"})
    known = (await repository.by_keys(session, tenant_id, [key])).get(key)
    if known is not None:
        if known.kind == "regenerate" and known.request.get("asked") == asked:
            return known
        raise _reused(key)
    draft = await drafts.require(session, tenant_id, data.id, for_update=True)
    if data.sections is not None:
        anchors = {s.anchor for s in sections_of(draft.content)} - {SOURCES_ANCHOR}
        unknown = [i for i, anchor in enumerate(data.sections) if anchor not in anchors]
        if unknown:
            listed = ", ".join(sorted(anchors)) or "none"
            raise SectionNotFound(
                f"The draft has no section {data.sections[unknown[0]]!r}; its sections' "
                f"anchors are: {listed}.",
                errors=[
                    FieldError(f"sections.{i}", "is not a section of the draft") for i in unknown
                ],
            )
    if data.document_ids:
        await documents.check_usable_for_generation(session, tenant_id, data.document_ids)
    origin = await repository.get(session, tenant_id, draft.run_id) if draft.run_id else None
    base: dict[str, Any] = origin.request if origin is not None else {}
    focus = draft.seo_meta.get("focus_keywords")
    keywords = (
        base.get("keywords")
        or [
            k[: schemas.MAX_KEYWORD]
            for k in (focus if isinstance(focus, list) else [])
            if isinstance(k, str)
        ][:20]
    )
    instructions = data.content_instructions
    request = {
        "topic": base.get("topic") or draft.title[:500],
        "keywords": keywords,
        "contentInstructions": instructions
        if instructions is not None
        else base.get("contentInstructions"),
        "documentIds": (
            [str(i) for i in data.document_ids] if data.document_ids else base.get("documentIds")
        ),
        "sections": data.sections,
        "keepTitle": data.keep_title,
        "asked": asked,
    }
    return await _start_again(
        session,
        runtime,
        tenant_id,
        draft,
        kind="regenerate",
        request=request,
        key=key,
        retry_of=None,
        created_by=created_by,
    )


async def _start_again(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    draft: Draft,
    *,
    kind: str,
    request: dict[str, Any],
    key: str,
    retry_of: uuid.UUID | None,
    created_by: str | None,
    followed: GenerationRun | None = None,
) -> GenerationRun:
    """A queued run writing `draft` again (it goes to generating: 409 from a status that cannot),
    under a new hold (402), started once this commits. A retry follows the definition the run
    it retries followed."""
    run_id = uuid.uuid4()
    drafts.generate_again(draft, run_id)
    hold = await credits.reserve(
        session,
        tenant_id,
        kind=BLOG_KIND,
        idempotency_key=key,
        amount=credits.price(BLOG_KIND).amount,
        ttl_seconds=runtime.settings.credit_reservation_ttl_seconds,
        monthly_grant=runtime.settings.monthly_credit_grant,
    )
    await repository.add_many(
        session,
        tenant_id,
        [
            {
                "id": run_id,
                "kind": kind,
                "status": "queued",
                "percent": 0,
                "draft_id": draft.id,
                "job_id": draft.job_id,
                "instance_id": draft.instance_id,
                "idempotency_key": key,
                "request": request,
                "reservation_id": hold.id,
                "retry_of": retry_of,
                "created_by": created_by,
                **_followed(followed),
            }
        ],
    )
    durable.enqueue_after_commit(
        session,
        workflows.generate_blog,
        [(workflows.workflow_id(run_id), (str(tenant_id), str(run_id)))],
        queue=workflows.QUEUE,
    )
    events.create_after_commit(session, tenant_id, run_id)
    run = await repository.get(session, tenant_id, run_id)
    assert run is not None, "inserted above, in this transaction"
    return run


def _followed(run: GenerationRun | None) -> dict[str, Any]:
    """The definition (and trigger) a retry takes over from the run it retries."""
    if run is None or run.definition is None:
        return {}
    steps = list(run.definition.get("steps") or [])
    return {
        "workflow_id": run.workflow_id,
        "workflow_version": run.workflow_version,
        "definition": run.definition,
        "steps": pipeline.initial_steps(steps),
        "trigger": run.trigger,
    }


# --- topics -----------------------------------------------------------------------------------


async def suggest_topics(
    session: AsyncSession,
    tenant: TenantAccess,
    data: schemas.SuggestTopicsInput,
    *,
    also_covered: Sequence[topics.Covering] = (),
) -> schemas.TopicList:
    """Topics from the passages of the tenant's ready knowledge (the chosen documents, else the
    newest ready ones), weighted by the seed keywords (topics.py); what the tenant's drafts
    (their titles and the topics their runs were asked) and `also_covered` cover is left out,
    or marked, as asked."""
    tenant_id = tenant.tenant_id
    if data.document_ids:
        await documents.check_usable_for_generation(session, tenant_id, data.document_ids)
        chosen = list(data.document_ids)
    else:
        ready = await documents.list_documents(
            session, tenant, ListDocumentsInput(status="ready", limit=TOPIC_DOCUMENTS)
        )
        chosen = [document.id for document in ready.data]
    chunks = await search.leading_chunks(
        session, tenant_id, chosen, per_document=TOPIC_PASSAGES_PER_DOCUMENT
    )
    # Each chunk cut at its heading lines: every section is a passage under its own heading.
    found_passages = [
        topics.Passage(
            chunk_id=chunk.chunk_id,
            document_id=chunk.document_id,
            document_name=chunk.document_name,
            heading=passage.heading,
            content=passage.text,
        )
        for chunk in chunks
        for passage in passages.split(chunk)
    ]
    covered = [*await _drafts_covering(session, tenant_id), *also_covered]
    strategy = await settings.topic_strategy(session, tenant_id)
    found = topics.propose(
        found_passages,
        seed_keywords=data.seed_keywords,
        count=data.count,
        covered=covered,
        exclude_covered=data.exclude_covered,
        pillars=strategy.pillars,
        excluded=strategy.excludes,
    )
    return schemas.TopicList(data=found, total=len(found))


async def _drafts_covering(session: AsyncSession, tenant_id: uuid.UUID) -> list[topics.Covering]:
    """The newest drafts' titles, and the topics their runs were asked."""
    live: dict[uuid.UUID, str] = {}
    for page in range(1, COVERING_DRAFT_PAGES + 1):
        listed = await drafts.list_drafts(
            session, tenant_id, ListDraftsInput(page=page, limit=COVERING_PAGE)
        )
        live.update((draft.id, draft.title) for draft in listed.data)
        if page * COVERING_PAGE >= listed.total:
            break
    covering = [topics.Covering(title, draft_id, "a draft") for draft_id, title in live.items()]
    for topic, draft_id in await repository.requested_topics(session, tenant_id, COVERING_RUNS):
        if draft_id in live:
            covering.append(topics.Covering(topic, draft_id, "a draft"))
    return covering


# --- workflow runs ----------------------------------------------------------------------------

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
        input_tokens, output_tokens, model = pipeline.step_usage(run.usage, step["key"])
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
                "credits": pipeline.step_credits(input_tokens, output_tokens),
            }
        )
    return shown


def _moment(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def workflow_run_view(run: GenerationRun) -> dict[str, Any]:
    """The run as workflows.getRun shows it."""
    input_tokens, output_tokens = workflows.tokens_of(run)
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
        "draft_id": run.draft_id if workflows.keeps_draft(run) else None,
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
