"""The Generation operations: declarations only; the rules live in service.py and workflows.py."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.documents.errors import DocumentNotFound, DocumentNotReady
from contentplatform.drafts import service as drafts
from contentplatform.generation import schemas, service
from contentplatform.generation.errors import IdempotencyKeyReused, RunNotFound

router = ProcedureRouter("generation", tag="Generation")


@router.post(
    "blog",
    "/v1/generation/blog",
    access=Access.editor,
    errors=[DocumentNotReady, InsufficientCredits, DocumentNotFound, IdempotencyKeyReused],
)
async def blog(ctx: Context, data: schemas.BlogInput) -> schemas.GeneratingDraft:
    """Generate an article grounded in the organization's knowledge.

    Returns at once the draft, in `generating`, with the run writing it (`run`; poll
    `generation.getRun`). The pipeline retrieves passages for the topic and keywords (only from
    `documentIds` when given; the primary knowledge document is always considered), outlines, writes
    each section citing its sources, writes the SEO metadata, scores it and moves the draft to
    `reviewing`; a failure moves it to `rejected` with the reason. Credits (`generation.blog`) are
    held here (402 when short) and the actual cost committed at the end: 1 credit per started 1,000
    model tokens. The same `idempotencyKey` returns the same draft and run and never holds credits
    twice; reusing it for another request is 409."""
    draft, run = await service.start_blog(
        ctx.session, ctx.runtime, ctx.tenant.tenant_id, data, created_by=ctx.identity.subject
    )
    return schemas.GeneratingDraft(
        **drafts.to_schema(draft).model_dump(), run=service.to_schema(run)
    )


@router.get("getRun", "/v1/generation/runs/{id}", access=Access.member, errors=[RunNotFound])
async def get_run(ctx: Context, data: schemas.RunIdInput) -> schemas.Run:
    """A generation run: status, step, percent, error and its draft."""
    return await service.get_run(ctx.session, ctx.tenant.tenant_id, data.id)
