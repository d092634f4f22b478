"""Every query on generation runs; the tenant always comes first, but for the reconciler."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.generation.models import GenerationRun
from contentplatform.kit.db import Owned

UNFINISHED = ("queued", "running")


get = Owned(GenerationRun)


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
