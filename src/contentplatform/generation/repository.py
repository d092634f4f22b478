"""Every query on generation runs; the tenant always comes first, but for the reconciler."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.generation.models import GenerationRun
from contentplatform.generation.schemas import ListRunsInput, ListWorkflowRunsInput
from contentplatform.kit.db import Owned, cross_tenant, page_of, plain
from contentplatform.kit.schemas import offset_of

UNFINISHED = ("queued", "running", "waiting_review")
FINISHED = ("succeeded", "failed", "cancelled")


get = Owned(GenerationRun)


async def by_keys(
    session: AsyncSession, tenant_id: uuid.UUID, idempotency_keys: list[str]
) -> dict[str, GenerationRun]:
    """The tenant's runs under these idempotency keys, by key."""
    if not idempotency_keys:
        return {}
    result = await session.execute(
        select(GenerationRun).where(
            GenerationRun.tenant_id == tenant_id,
            GenerationRun.idempotency_key.in_(idempotency_keys),
        )
    )
    return {run.idempotency_key: run for run in result.scalars()}


async def add_many(session: AsyncSession, tenant_id: uuid.UUID, rows: list[dict[str, Any]]) -> None:
    """Insert runs of the tenant (column values by attribute name) in one statement."""
    if rows:
        await session.execute(
            insert(GenerationRun), [{**row, "tenant_id": tenant_id} for row in rows]
        )


@cross_tenant("keys by (tenant, key): each tenant's own runs")
async def by_keys_of(
    session: AsyncSession, idempotency_keys: Mapping[uuid.UUID, Sequence[str]]
) -> dict[tuple[uuid.UUID, str], GenerationRun]:
    """`by_keys` for many tenants at once: each tenant's runs under its keys, by (tenant, key)."""
    wanted = {(tenant_id, key) for tenant_id, keys in idempotency_keys.items() for key in keys}
    if not wanted:
        return {}
    result = await session.execute(
        select(GenerationRun).where(
            GenerationRun.tenant_id.in_(set(idempotency_keys)),
            GenerationRun.idempotency_key.in_({key for _, key in wanted}),
        )
    )
    found = {(run.tenant_id, run.idempotency_key): run for run in result.scalars()}
    return {pair: run for pair, run in found.items() if pair in wanted}


async def add_many_of(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID], rows: list[dict[str, Any]]
) -> None:
    """Insert runs of these tenants (column values by attribute name, each naming its tenant)
    in one statement."""
    assert all(row["tenant_id"] in tenant_ids for row in rows), "those tenants' runs only"
    if rows:
        await session.execute(insert(GenerationRun), rows)


@cross_tenant("the reconciler's sweep of every tenant's unfinished work")
async def unfinished(session: AsyncSession) -> list[GenerationRun]:
    """Runs of every tenant still queued or running (for the reconciler)."""
    result = await session.execute(
        select(GenerationRun).where(GenerationRun.status.in_(UNFINISHED))
    )
    return list(result.scalars())


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, query: ListRunsInput
) -> tuple[list[dict[str, Any]], int]:
    """A page of the tenant's runs, newest first, as their columns, and how many there are."""
    statement = select(GenerationRun).where(GenerationRun.tenant_id == tenant_id)
    if query.status is not None:
        statement = statement.where(GenerationRun.status == query.status)
    if query.draft_id is not None:
        statement = statement.where(GenerationRun.draft_id == query.draft_id)
    if query.job_id is not None:
        statement = statement.where(GenerationRun.job_id == query.job_id)
    return await page_of(
        session,
        plain(statement),
        GenerationRun.created_at.desc(),
        GenerationRun.id.desc(),
        limit=query.limit,
        offset=offset_of(query.page, query.limit),
    )


async def requested_topics(
    session: AsyncSession, tenant_id: uuid.UUID, limit: int
) -> list[tuple[str, uuid.UUID]]:
    """(topic, draft id) of the tenant's newest runs, newest first."""
    result = await session.execute(
        select(GenerationRun.request, GenerationRun.draft_id)
        .where(GenerationRun.tenant_id == tenant_id)
        .order_by(GenerationRun.created_at.desc())
        .limit(limit)
    )
    found = []
    for request, draft_id in result.tuples():
        topic = request.get("topic") if isinstance(request, dict) else None
        if isinstance(topic, str) and topic:
            found.append((topic, draft_id))
    return found


async def waiting_on(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID
) -> list[uuid.UUID]:
    """The tenant's runs waiting at a review gate over this draft."""
    result = await session.execute(
        select(GenerationRun.id).where(
            GenerationRun.tenant_id == tenant_id,
            GenerationRun.draft_id == draft_id,
            GenerationRun.status == "waiting_review",
        )
    )
    return list(result.scalars())


async def test_runs_going(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """How many of the tenant's workflow test runs have not ended."""
    statement = select(func.count()).where(
        GenerationRun.tenant_id == tenant_id,
        GenerationRun.trigger == "test",
        GenerationRun.status.in_(UNFINISHED),
    )
    return int((await session.execute(statement)).scalar_one())


async def workflow_runs(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    query: ListWorkflowRunsInput,
    since: datetime,
    until: datetime,
) -> tuple[list[GenerationRun], int]:
    """The tenant's article runs created in [since, until), by the filters, newest first."""
    statement = select(GenerationRun).where(
        GenerationRun.tenant_id == tenant_id,
        GenerationRun.kind == "blog",
        GenerationRun.created_at >= since,
        GenerationRun.created_at < until,
    )
    if query.workflow_id is not None:
        statement = statement.where(GenerationRun.workflow_id == query.workflow_id)
    if query.job_instance_id is not None:
        statement = statement.where(GenerationRun.instance_id == query.job_instance_id)
    if query.trigger != "all":
        statement = statement.where(GenerationRun.trigger == query.trigger)
    if query.status != "all":
        statement = statement.where(GenerationRun.status == query.status)
    return await page_of(
        session,
        statement,
        GenerationRun.created_at.desc(),
        GenerationRun.id,
        limit=query.limit,
        offset=offset_of(query.page, query.limit),
    )


async def waiting_review(
    session: AsyncSession, tenant_id: uuid.UUID, limit: int
) -> list[GenerationRun]:
    """The tenant's runs waiting at a review gate, the soonest to time out first."""
    result = await session.execute(
        select(GenerationRun)
        .where(GenerationRun.tenant_id == tenant_id, GenerationRun.status == "waiting_review")
        .order_by(GenerationRun.waiting_until, GenerationRun.id)
        .limit(limit)
    )
    return list(result.scalars())
