"""Every query on generation runs; the tenant always comes first, but for the reconciler."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.generation.models import GenerationRun
from contentplatform.kit.db import get_owned

UNFINISHED = ("queued", "running")


async def get(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, *, for_update: bool = False
) -> GenerationRun | None:
    return await get_owned(session, GenerationRun, tenant_id, run_id, for_update=for_update)


async def by_key(
    session: AsyncSession, tenant_id: uuid.UUID, idempotency_key: str
) -> GenerationRun | None:
    result = await session.execute(
        select(GenerationRun).where(
            GenerationRun.tenant_id == tenant_id,
            GenerationRun.idempotency_key == idempotency_key,
        )
    )
    return result.scalar_one_or_none()


async def unfinished(session: AsyncSession) -> list[GenerationRun]:
    """Runs of every tenant still queued or running (for the reconciler)."""
    result = await session.execute(
        select(GenerationRun).where(GenerationRun.status.in_(UNFINISHED))
    )
    return list(result.scalars())
