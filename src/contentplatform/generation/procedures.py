"""The Generation operations: declarations only; the rules live in service.py,
workflow_runs.py and pipeline/.

generation.suggestTopics, which also reads the jobs' topics, is declared with the flows
(flows/procedures.py), under this group's name and tag."""

from __future__ import annotations

from sse_starlette import EventSourceResponse

from contentplatform.auth.context import Access
from contentplatform.core import stream_urls
from contentplatform.core.procedures import Context, EventStream, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.documents.errors import DocumentNotFound, DocumentNotReady
from contentplatform.drafts import service as drafts
from contentplatform.drafts.errors import DraftNotFound, IllegalDraftTransition
from contentplatform.generation import schemas, service, workflow_runs
from contentplatform.generation.errors import (
    IdempotencyKeyReused,
    RunFinished,
    RunNotFound,
    RunNotRetryable,
    SectionNotFound,
    TooManyTestRuns,
    UnknownStep,
)
from contentplatform.workflows.errors import (
    InvalidDefinition,
    WorkflowNotFound,
    WorkflowVersionNotFound,
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
RUN_EVENTS_PATH = "/v1/generation/runs/{id}/events"


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
    """A generation run: status, step, percent, error and its draft.

    Its kind, the job and instance it runs for, the credits committed once it ended, the run it
    retries, and the problem that ended it when it failed. Another organization's run is 404."""
    return await service.get_run(ctx.session, ctx.tenant.tenant_id, data.id)


@router.get(
    "streamRun",
    RUN_EVENTS_PATH,
    access=Access.member,
    errors=[RunNotFound],
    events=RUN_EVENTS,
    stream_token=lambda data: service.run_stream_of(data.id),
)
async def stream_run(ctx: Context, data: schemas.StreamRunInput) -> EventSourceResponse:
    """Progress of a run over SSE (resumable).

    A `progress` event each time the run moves (it starts, begins a step, ends), then exactly
    one terminal event: `run_finished` (succeeded or cancelled; with the draft's SEO score and
    the credits charged) or `error` (failed). Ids are `<run id>:<n>`, gap-free from 1; send the
    last one seen back as `Last-Event-ID` (or `lastEventId` in the query) to get exactly the
    events after it, then the live ones. A finished run's stream ends at once with its end
    (kept 24 hours after it; after that, its last progress and terminal event again). A client
    that disconnects does not stop the run: `generation.cancelRun` does. A browser's
    EventSource opens it with the URL of generation.createRunStreamUrl instead of the
    Authorization header."""
    return await service.stream_run(
        ctx.session, ctx.runtime, ctx.request, ctx.tenant.tenant_id, data.id
    )


@router.post(
    "createRunStreamUrl",
    "/v1/generation/runs/{id}/stream-url",
    access=Access.member,
    api_keys=False,
    errors=[RunNotFound],
)
async def create_run_stream_url(ctx: Context, data: schemas.RunIdInput) -> stream_urls.StreamUrl:
    """A short-lived URL that opens a run's event stream, for a browser's EventSource.

    EventSource cannot send an Authorization header: the URL is generation.streamRun of this
    run with a token (`streamToken`) that opens that stream alone, as you, for
    `STREAM_TOKEN_TTL_SECONDS` (5 minutes by default); every other operation refuses it. While
    it is valid EventSource reconnects to it by itself, sending `Last-Event-ID`; after
    `expires_at`, make a new one and open it with `&lastEventId=<last id seen>`. A stream
    already open runs to its end. API keys cannot make one: a server reads the stream with its
    key."""
    stream = await service.readable_run_stream(ctx.session, ctx.tenant.tenant_id, data.id)
    return stream_urls.issue(ctx, RUN_EVENTS_PATH.format(id=data.id), stream)


@router.post(
    "cancelRun",
    "/v1/generation/runs/{id}/cancel",
    access=Access.editor,
    errors=[RunNotFound, RunFinished],
)
async def cancel_run(ctx: Context, data: schemas.RunIdInput) -> schemas.Run:
    """Cancel a queued, running or waiting (at a review gate) run.

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


# --- workflow runs: the Workflows group's runs, which are this domain's runs ---------------------

workflows_router = ProcedureRouter("workflows", tag="Workflows")


@workflows_router.post(
    "testRun",
    "/v1/workflows/{id}/test-run",
    access=Access.editor,
    errors=[
        WorkflowNotFound,
        WorkflowVersionNotFound,
        InvalidDefinition,
        UnknownStep,
        InsufficientCredits,
        TooManyTestRuns,
        DocumentNotFound,
        DocumentNotReady,
        IdempotencyKeyReused,
    ],
)
async def test_run(ctx: Context, data: schemas.TestRunInput) -> schemas.WorkflowRun:
    """Run the workflow on a topic without publishing.

    Runs its working definition (`version: working`, the default: it must validate, 400 with
    every violation otherwise) or a published version, exactly as a job's run would, from
    research to finalize, and returns the run at once (`queued`): poll `workflows.getRun` or
    follow `generation.streamRun` with its id. `stopAfterStep` ends it after that step. The
    draft it writes is kept (in review) only with `createDraft`; without it the run keeps its
    `result` (title, excerpt, SEO score) and review gates are skipped. Never published.
    `generation.blog` credits are held (402) and what its model calls cost committed; at most 3
    test runs go at once per organization (429). The same `idempotencyKey` returns the same
    run; reusing it for another request is 409."""
    run = await workflow_runs.test_run(
        ctx.session, ctx.runtime, ctx.tenant.tenant_id, data, created_by=ctx.identity.subject
    )
    return schemas.WorkflowRun.model_validate(workflow_runs.workflow_run_view(run))


@workflows_router.get("listRuns", "/v1/workflows/runs", access=Access.member)
async def list_workflow_runs(
    ctx: Context, data: schemas.ListWorkflowRunsInput
) -> schemas.WorkflowRunPage:
    """Runs of article workflows (test runs, job runs and `generation.blog`), newest first.

    Filtered by workflow, job instance, trigger and status, and by the day they were created
    (`dateFrom`..`dateTo`, inclusive, in the organization's time zone; the last 30 days by
    default; 400 when dateFrom is after dateTo). Steps are listed without their
    `output_summary` (`workflows.getRun` has it)."""
    return await workflow_runs.workflow_runs(ctx.session, ctx.tenant.tenant_id, data)


@workflows_router.get(
    "getRun", "/v1/workflows/runs/{id}", access=Access.member, errors=[RunNotFound]
)
async def get_workflow_run(ctx: Context, data: schemas.RunIdInput) -> schemas.WorkflowRun:
    """A run with each step's status, timing, tokens, model and credits.

    Steps are the definition's (frozen when the run was asked for), then `score` and `finalize`:
    pending, running, waiting (a review gate), succeeded, failed, skipped (disabled, after
    `stopAfterStep`, or after a failure) or cancelled. A run at a review gate is
    `waiting_review` until its draft is approved (`drafts.approve`: it goes on), rejected
    (`drafts.reject`: it fails, REJECTED_AT_REVIEW) or `waiting_until` passes (REVIEW_TIMED_OUT).
    Poll at most every 2 s, or follow `generation.streamRun`."""
    return await workflow_runs.workflow_run(ctx.session, ctx.tenant.tenant_id, data.id)


@workflows_router.post(
    "cancelRun",
    "/v1/workflows/runs/{id}/cancel",
    access=Access.editor,
    errors=[RunNotFound, RunFinished],
)
async def cancel_workflow_run(ctx: Context, data: schemas.RunIdInput) -> schemas.WorkflowRun:
    """Cancel a queued, running or waiting run.

    It ends at once (`cancelled`; its pending and running steps cancelled): the model calls it
    made are charged and the rest of its hold released. A draft still being written is
    rejected; one in review at a gate stays there for the team. 409 when it already ended."""
    return await workflow_runs.cancel_workflow_run(
        ctx.session, ctx.runtime, ctx.tenant.tenant_id, data.id
    )
