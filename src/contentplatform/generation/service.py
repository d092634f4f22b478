"""Starting article generation and reading its runs. Never commits.

`generation_credit_hold` credits are held when a run is asked for (402 when they are not
available); the pipeline commits what the article actually cost (workflows.cost_of).
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core.runtime import Runtime
from contentplatform.credits import service as credits
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.drafts.models import Draft
from contentplatform.drafts.schemas import MAX_TITLE
from contentplatform.generation import repository, schemas, workflows
from contentplatform.generation.errors import IdempotencyKeyReused, RunNotFound
from contentplatform.generation.models import GenerationRun
from contentplatform.kit import durable
from contentplatform.kit.errors import require
from contentplatform.tenants import service as tenants

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
    # One start per tenant at a time, so two requests racing with one key agree on one run.
    await tenants.lock_tenant(session, tenant_id)
    key = data.idempotency_key or f"run:{uuid.uuid4()}"
    request = _request_of(data)
    existing = await repository.by_key(session, tenant_id, key)
    if existing is not None:
        if existing.request != request:
            raise IdempotencyKeyReused(
                f"The idempotencyKey {key!r} was already used for another request; "
                "use a new key for a new article."
            )
        draft = await drafts.require(session, tenant_id, existing.draft_id)
        return draft, existing
    if data.document_ids:
        await documents.check_usable_for_generation(session, tenant_id, data.document_ids)
    reservation = await credits.reserve(
        session,
        tenant_id,
        kind=BLOG_KIND,
        idempotency_key=key,
        amount=runtime.settings.generation_credit_hold,
        ttl_seconds=runtime.settings.credit_reservation_ttl_seconds,
        monthly_grant=runtime.settings.monthly_credit_grant,
    )
    run_id = uuid.uuid4()
    draft = await drafts.start_generating(
        session,
        tenant_id,
        title=data.topic[:MAX_TITLE],
        run_id=run_id,
        job_id=job_id,
        instance_id=instance_id,
    )
    run = GenerationRun(
        id=run_id,
        tenant_id=tenant_id,
        kind="blog",
        status="queued",
        percent=0,
        draft_id=draft.id,
        job_id=job_id,
        instance_id=instance_id,
        idempotency_key=key,
        request=request,
        reservation_id=reservation.id,
        created_by=created_by,
    )
    session.add(run)
    await session.flush()
    durable.start_after_commit(
        session,
        workflows.generate_blog,
        workflows.workflow_id(run.id),
        str(tenant_id),
        str(run.id),
        queue=workflows.QUEUE,
    )
    return draft, run


async def get_run(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> schemas.Run:
    run = await repository.get(session, tenant_id, run_id)
    return to_schema(require(run, RunNotFound, run_id))
