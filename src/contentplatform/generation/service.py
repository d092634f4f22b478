"""Starting article generation and reading its runs. Never commits.

`generation_credit_hold` credits are held when a run is asked for (402 when they are not
available); the pipeline commits what the article actually cost (workflows.cost_of).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
from contentplatform.kit.errors import PlatformError, require
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


@dataclass(frozen=True)
class BlogStart:
    """One article `start_blogs` is asked for."""

    data: schemas.BlogInput
    created_by: str | None
    job_id: uuid.UUID | None = None
    instance_id: uuid.UUID | None = None


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
    requests = [_request_of(start.data) for start in starts]
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
        holds=[credits.Hold(key, runtime.settings.generation_credit_hold) for key in fresh],
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
    for (key, hold_id), run_id, draft_id in zip(held, run_ids, draft_ids, strict=True):
        start = starts[fresh[key]]
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
