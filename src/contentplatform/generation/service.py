"""Starting, following, cancelling and retrying generation runs; regenerating drafts. Never
commits. (Topics: topic_suggestions.py; a workflow definition's runs: workflow_runs.py.)

`generation_credit_hold` credits are held when a run is asked for (402 when they are not
available); the pipeline commits what the run actually cost (charges.charge_of), a cancelled
run what it had spent.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from sse_starlette import EventSourceResponse
from starlette.requests import Request

from contentplatform.core.runtime import Runtime
from contentplatform.credits import service as credits
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.drafts.models import Draft
from contentplatform.drafts.schemas import MAX_TITLE
from contentplatform.generation import events, repository, schemas, watchers
from contentplatform.generation.article import SOURCES_ANCHOR, sections_of
from contentplatform.generation.errors import (
    IdempotencyKeyReused,
    RunFinished,
    RunNotFound,
    RunNotRetryable,
    SectionNotFound,
)
from contentplatform.generation.models import GenerationRun
from contentplatform.generation.pipeline import charges, run_steps
from contentplatform.generation.pipeline import durable as pipeline_durable
from contentplatform.generation.pipeline.review_gate import wake
from contentplatform.generation.pipeline.run import keeps_draft, workflow_id
from contentplatform.kit import durable
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.errors import FieldError, PlatformError, require
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
    workflows enqueued together once this commits. A key given twice in one call is one run.
    """
    return (await start_blogs_across(session, runtime, {tenant_id: starts}))[tenant_id]


async def start_blogs_across(
    session: AsyncSession, runtime: Runtime, starts: Mapping[uuid.UUID, Sequence[BlogStart]]
) -> dict[uuid.UUID, list[Started | PlatformError]]:
    """`start_blogs` for the articles of many tenants at once (the scheduler's tick): the same
    statements whether they are one tenant's or a thousand's, so that a tick pays per article,
    not per tenant. Each tenant's articles hold its own credits."""
    # One start per tenant at a time, so two requests racing with one key agree on one run.
    await tenants.lock_many(session, starts.keys())
    keys = {
        tenant_id: [start.data.idempotency_key or f"run:{uuid.uuid4()}" for start in asked]
        for tenant_id, asked in starts.items()
    }
    requests = {
        tenant_id: [{**_request_of(start.data), **(start.test or {})} for start in asked]
        for tenant_id, asked in starts.items()
    }
    existing = await repository.by_keys_of(session, keys)
    outcomes: dict[tuple[uuid.UUID, str], Started | PlatformError] = {}
    fresh: dict[tuple[uuid.UUID, str], BlogStart] = {}  # (tenant, key) -> the start to make
    fresh_requests: dict[tuple[uuid.UUID, str], dict[str, object]] = {}
    for tenant_id, asked in starts.items():
        for start, key, request in zip(asked, keys[tenant_id], requests[tenant_id], strict=True):
            pair = (tenant_id, key)
            if pair in outcomes or pair in fresh:
                continue  # given twice: one run
            known = existing.get(pair)
            if known is not None:
                same = known.request == request
                outcomes[pair] = Started(known.draft_id, known.id) if same else _reused(key)
            elif (refusal := await _unusable(session, tenant_id, start.data)) is not None:
                outcomes[pair] = refusal
            else:
                fresh[pair] = start
                fresh_requests[pair] = request
    asked_holds: dict[uuid.UUID, list[credits.Hold]] = {}
    for tenant_id, key in fresh:
        asked_holds.setdefault(tenant_id, []).append(
            credits.Hold(key, credits.price(BLOG_KIND).amount)
        )
    holds = await credits.reserve_across(
        session,
        kind=BLOG_KIND,
        holds=asked_holds,
        ttl_seconds=runtime.settings.credit_reservation_ttl_seconds,
        monthly_grant=runtime.settings.monthly_credit_grant,
    )
    held: list[tuple[tuple[uuid.UUID, str], uuid.UUID]] = []  # ((tenant, key), its hold's id)
    for tenant_id, asked_of_tenant in asked_holds.items():
        for hold, outcome in zip(asked_of_tenant, holds[tenant_id], strict=True):
            pair = (tenant_id, hold.idempotency_key)
            if isinstance(outcome, PlatformError):
                outcomes[pair] = outcome
            else:
                held.append((pair, outcome.id))
    run_ids = [uuid.uuid4() for _ in held]
    # The drafts first: a run names its draft.
    generating: dict[uuid.UUID, list[drafts.Generating]] = {}
    for (pair, _), run_id in zip(held, run_ids, strict=True):
        generating.setdefault(pair[0], []).append(
            drafts.Generating(
                title=fresh[pair].data.topic[:MAX_TITLE],
                run_id=run_id,
                job_id=fresh[pair].job_id,
                instance_id=fresh[pair].instance_id,
            )
        )
    made = {
        tenant_id: iter(ids)
        for tenant_id, ids in (await drafts.start_generating_across(session, generating)).items()
    }
    draft_ids = [next(made[pair[0]]) for pair, _ in held]
    definitions = await wf.definitions_for_jobs(
        session,
        {
            (pair[0], fresh[pair].workflow_id, fresh[pair].workflow_version)
            for pair, _ in held
            if fresh[pair].definition is None
        },
    )
    runs: list[dict[str, Any]] = []
    for (pair, hold_id), run_id, draft_id in zip(held, run_ids, draft_ids, strict=True):
        tenant_id, key = pair
        start = fresh[pair]
        definition = (
            start.definition or definitions[(tenant_id, start.workflow_id, start.workflow_version)]
        )
        runs.append(
            {
                "id": run_id,
                "tenant_id": tenant_id,
                "kind": "blog",
                "status": "queued",
                "percent": 0,
                "draft_id": draft_id,
                "job_id": start.job_id,
                "instance_id": start.instance_id,
                "idempotency_key": key,
                "request": fresh_requests[pair],
                "reservation_id": hold_id,
                "created_by": start.created_by,
                "trigger": _trigger(start),
                **frozen(definition),
            }
        )
        outcomes[pair] = Started(draft_id, run_id)
    await repository.add_many_of(session, starts.keys(), runs)
    durable.enqueue_after_commit(
        session,
        pipeline_durable.generate_blog,
        [(workflow_id(run["id"]), (str(run["tenant_id"]), str(run["id"]))) for run in runs],
        queue=pipeline_durable.QUEUE,
    )
    return {
        tenant_id: [outcomes[(tenant_id, key)] for key in keys[tenant_id]] for tenant_id in starts
    }


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
        "steps": run_steps.initial_steps(steps),
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


async def waiting_review(
    session: AsyncSession, tenant_id: uuid.UUID, limit: int
) -> list[GenerationRun]:
    """The runs waiting at a review gate, the soonest to time out first (the dashboard's
    queue: each waits on its draft's reviewer until `waiting_until`)."""
    return await repository.waiting_review(session, tenant_id, limit)


async def list_runs(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListRunsInput
) -> schemas.RunPage:
    rows, total = await repository.page(session, tenant_id, data)
    return schemas.RunPage.model_validate(
        {"data": rows, "total": total, "page": data.page, "limit": data.limit}
    )


def run_stream_of(run_id: uuid.UUID) -> str:
    """The name of a run's event stream (what a stream token for it names)."""
    return events.stream_of(run_id)


async def readable_run_stream(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> str:
    """The event stream of one of the tenant's runs, for a stream URL: 404 when there is none."""
    require(await repository.get(session, tenant_id, run_id), RunNotFound, run_id)
    return run_stream_of(run_id)


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
    if draft is not None and not keeps_draft(run):
        drafts.discard_generated(draft)
    elif draft is not None:
        drafts.fail_generation(draft, CANCELLED)
    charged = None
    if run.reservation_id is not None:
        held = await credits.get_reservation(session, tenant_id, run.reservation_id)
        cost = charges.charge_of(run)
        if held.status == "held" and cost > 0:
            charged = min(cost, held.amount)
            await credits.commit(
                session, tenant_id, run.reservation_id, charged, spent=charges.spent_of(run)
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
        run.steps = run_steps.end(run.steps, "cancelled", run.finished_at)
    if waiting:  # its workflow waits at a gate: it ends now, not at its next wake
        after_commit(session, functools.partial(wake, run.id))
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
    change (pipeline/review_gate.py). The same idempotency key returns the same new run."""
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
        pipeline_durable.generate_blog,
        [(workflow_id(run_id), (str(tenant_id), str(run_id)))],
        queue=pipeline_durable.QUEUE,
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
        "steps": run_steps.initial_steps(steps),
        "trigger": run.trigger,
    }
