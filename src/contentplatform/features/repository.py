"""Every query on `feature_overrides`; the tenant always comes first."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.features.flags import Stored
from contentplatform.features.models import FeatureOverride
from contentplatform.kit.db import insert_ignoring_conflicts


async def stored(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, Stored]:
    """The tenant's stored choices, by flag key (keys no longer declared included)."""
    result = await session.execute(
        select(FeatureOverride.key, FeatureOverride.enabled, FeatureOverride.source).where(
            FeatureOverride.tenant_id == tenant_id
        )
    )
    return {
        key: Stored(enabled=enabled, source="override" if source == "override" else "opt_in")
        for key, enabled, source in result.tuples()
    }


async def set_opt_in(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    key: str,
    *,
    enabled: bool,
    set_by: str,
    set_at: datetime,
) -> bool:
    """Store the tenant's opt-in (or out) of `key`; False, changing nothing, when the flag's row
    is an override (which an opt-in never replaces). Safe against a concurrent first write."""
    await session.execute(
        insert_ignoring_conflicts(
            session,
            FeatureOverride,
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            key=key,
            enabled=enabled,
            source="opt_in",
            set_by=set_by,
            set_at=set_at,
            created_at=set_at,
            updated_at=set_at,
        )
    )
    result = await session.execute(
        update(FeatureOverride)
        .where(
            FeatureOverride.tenant_id == tenant_id,
            FeatureOverride.key == key,
            FeatureOverride.source == "opt_in",
        )
        .values(enabled=enabled, set_by=set_by, set_at=set_at, updated_at=set_at)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))
