"""Every query on generation runs; the tenant always comes first, but for the reconciler."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.generation.models import GenerationRun
from contentplatform.kit.db import Owned

UNFINISHED = ("queued", "running")


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


async def unfinished(session: AsyncSession) -> list[GenerationRun]:
    """Runs of every tenant still queued or running (for the reconciler)."""
    result = await session.execute(
        select(GenerationRun).where(GenerationRun.status.in_(UNFINISHED))
    )
    return list(result.scalars())
