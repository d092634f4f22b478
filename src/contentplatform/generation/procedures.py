"""The Generation operations: declarations only; the rules live in service.py and workflows.py.

generation.suggestTopics, which also reads the jobs' topics, is declared with the flows
(flows/procedures.py), under this group's name and tag."""

from __future__ import annotations

from sse_starlette import EventSourceResponse

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, EventStream, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.documents.errors import DocumentNotFound, DocumentNotReady
from contentplatform.drafts import service as drafts
from contentplatform.drafts.errors import DraftNotFound, IllegalDraftTransition
from contentplatform.generation import schemas, service
from contentplatform.generation.errors import (
    IdempotencyKeyReused,
    RunFinished,
    RunNotFound,
    RunNotRetryable,
    SectionNotFound,
)

router = ProcedureRouter("generation", tag="Generation")

RUN_EVENTS = EventStream(
    events={
        "progress": schemas.ProgressEvent,
        "run_finished": schemas.RunFinishedEvent,
        "error": schemas.RunErrorEvent,
    },
    terminal=["run_finished", "error"],
)


@router.post(
    "blog",
    "/v1/generation/blog",
    access=Access.editor,
    errors=[DocumentNotReady, InsufficientCredits, DocumentNotFound, IdempotencyKeyReused],
)
async def blog(ctx: Context, data: schemas.BlogInput) -> schemas.GeneratingDraft:
    """Generate an article grounded in the organization's knowledge.

    Returns at once the draft, in `generating`, with the run writing it (`run`; follow it with
    `generation.streamRun`, or poll `generation.getRun`). The pipeline retrieves passages for the
    topic and keywords (only from `documentIds` when given; the primary knowledge document is
    always considered), outlines, writes each section citing its sources, writes the SEO
    metadata, scores it and moves the draft to `reviewing`; a failure moves it to `rejected`
    with the reason. Credits (`generation.blog`) are held here (402 when short) and the actual
    cost committed at the end: 1 credit per started 1,000 model tokens. The same
    `idempotencyKey` returns the same draft and run and never holds credits twice; reusing it for
    another request is 409."""
    draft, run = await service.start_blog(
        ctx.session, ctx.runtime, ctx.tenant.tenant_id, data, created_by=ctx.identity.subject
    )
    return schemas.GeneratingDraft(
        **drafts.to_schema(draft).model_dump(), run=service.to_schema(run)
    )


@router.get("listRuns", "/v1/generation/runs", access=Access.member)
async def list_runs(ctx: Context, data: schemas.ListRunsInput) -> schemas.RunPage:
    """Generation runs, newest first.

    Filtered by `status`, by the draft they write (`draftId`) and by their job (`jobId`)."""
    return await service.list_runs(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getRun", "/v1/generation/runs/{id}", access=Access.member, errors=[RunNotFound])
async def get_run(ctx: Context, data: schemas.RunIdInput) -> schemas.Run:
    """A generation run: status, step, percent, error and its draft."""
    return await service.get_run(ctx.session, ctx.tenant.tenant_id, data.id)


@router.get(
    "streamRun",
    "/v1/generation/runs/{id}/events",
    access=Access.member,
    errors=[RunNotFound],
    events=RUN_EVENTS,
)
async def stream_run(ctx: Context, data: schemas.StreamRunInput) -> EventSourceResponse:
    """Progress of a run over SSE (resumable).

    A `progress` event each time the run moves (it starts, begins a step, ends), then exactly
    one terminal event: `run_finished` (succeeded or cancelled; with the draft's SEO score and
    the credits charged) or `error` (failed). Ids are `<run id>:<n>`, gap-free from 1; send the
    last one seen back as `Last-Event-ID` (or `lastEventId` in the query) to get exactly the
    events after it, then the live ones. A finished run's stream ends at once with its end
    (kept 24 hours after it; after that, its last progress and terminal event again). A client
    that disconnects does not stop the run: `generation.cancelRun` does."""
    return await service.stream_run(
        ctx.session, ctx.runtime, ctx.request, ctx.tenant.tenant_id, data.id
    )


@router.post(
    "cancelRun",
    "/v1/generation/runs/{id}/cancel",
    access=Access.editor,
    errors=[RunNotFound, RunFinished],
)
async def cancel_run(ctx: Context, data: schemas.RunIdInput) -> schemas.Run:
    """Cancel a queued or running run.

    It stops at its next step boundary. The model calls it has made are charged (the call under
    way, if any, is not); the rest of the hold is released. Its draft goes to `rejected` with the
    reason "Generation was cancelled.". A finished run is 409."""
    run = await service.cancel_run(ctx.session, ctx.runtime, ctx.tenant.tenant_id, data.id)
    return service.to_schema(run)


@router.post(
    "retryRun",
    "/v1/generation/runs/{id}/retry",
    access=Access.editor,
    errors=[
        RunNotFound,
        DocumentNotFound,
        InsufficientCredits,
        RunNotRetryable,
        IdempotencyKeyReused,
        DocumentNotReady,
    ],
)
async def retry_run(ctx: Context, data: schemas.RetryRunInput) -> schemas.Run:
    """Retry a failed or cancelled run into the same draft.

    A new run (`retry_of` the old one) from the same request, under a new hold (402 when short),
    moves the draft from `rejected` back to `generating`. Model calls of the old run whose inputs
    did not change (the same sources, outline, sections before, prompt version and model) are
    reused instead of being made again, and paid once. Only a failed or cancelled run whose
    draft it still rejects (not edited, regenerated or deleted since) can be retried (409). The
    same `idempotencyKey` returns the same new run; reusing it for another request is 409."""
    run = await service.retry_run(
        ctx.session, ctx.runtime, ctx.tenant.tenant_id, data, created_by=ctx.identity.subject
    )
    return service.to_schema(run)


@router.post(
    "regenerateDraft",
    "/v1/generation/drafts/{id}/regenerate",
    access=Access.editor,
    errors=[
        SectionNotFound,
        InsufficientCredits,
        DraftNotFound,
        DocumentNotFound,
        IllegalDraftTransition,
        IdempotencyKeyReused,
        DocumentNotReady,
    ],
)
async def regenerate_draft(ctx: Context, data: schemas.RegenerateDraftInput) -> schemas.Run:
    """Rewrite an existing draft, or some of its sections, with new instructions.

    A run of kind `regenerate` (follow it with `generation.streamRun`) moves the draft to
    `generating` and writes it again: the whole article (keeping its title unless `keepTitle` is
    false), or only the sections named by their heading anchors (`sections`: the `id` of each
    `<h2>`; 400 for one the draft does not have), the rest kept as it is. It writes about what
    the draft was generated about, with `contentInstructions` and `documentIds` when given. The
    result is a new AI revision and the draft goes to `reviewing` (an approved draft needs
    approving again); a failure rejects it with the reason, its content unchanged. Only
    reviewing, rejected or approved drafts (409). Metered as `generation.blog`: held here (402),
    1 credit per started 100 words rewritten (by default) committed at the end, at least 1. The same
    `idempotencyKey` returns the same run; reusing it for another request is 409."""
    run = await service.regenerate_draft(
        ctx.session, ctx.runtime, ctx.tenant.tenant_id, data, created_by=ctx.identity.subject
    )
    return service.to_schema(run)
