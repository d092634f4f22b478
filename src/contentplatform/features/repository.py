"""Every query on `feature_overrides` (the tenant always comes first) and on the operator's
`feature_flag_settings` (platform rows)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.features.flags import Setting, Stored
from contentplatform.features.models import FeatureFlagSetting, FeatureOverride
from contentplatform.kit.db import cross_tenant, insert_ignoring_conflicts


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


async def set_override(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    key: str,
    *,
    enabled: bool | None,
    set_by: str,
    set_at: datetime,
) -> None:
    """The operator's override of `key` for the tenant (it replaces an opt-in); None removes
    whatever the tenant's row for the flag says."""
    await session.execute(
        delete(FeatureOverride).where(
            FeatureOverride.tenant_id == tenant_id, FeatureOverride.key == key
        )
    )
    if enabled is not None:
        session.add(
            FeatureOverride(
                tenant_id=tenant_id,
                key=key,
                enabled=enabled,
                source="override",
                set_by=set_by,
                set_at=set_at,
            )
        )
        await session.flush()


def _setting(row: FeatureFlagSetting) -> Setting:
    return Setting(
        stage=row.stage,  # type: ignore[arg-type]
        default_enabled=row.default_enabled,
        rollout_percent=row.rollout_percent,
        plans=tuple(row.plans),
        opt_in_allowed=row.opt_in_allowed,
    )


@cross_tenant("the operator's flag settings are platform rows")
async def settings(session: AsyncSession) -> dict[str, tuple[Setting, datetime]]:
    """Every stored flag setting, and when it changed, by key."""
    rows = await session.scalars(select(FeatureFlagSetting))
    return {row.key: (_setting(row), row.updated_at) for row in rows}


@cross_tenant("the operator's flag settings are platform rows")
async def save_setting(
    session: AsyncSession, key: str, setting: Setting, *, by: str, at: datetime
) -> None:
    """Store the flag's setting (one row per key; a concurrent first write loses to the other's
    insert and updates it)."""
    values = {
        "stage": setting.stage,
        "default_enabled": setting.default_enabled,
        "rollout_percent": setting.rollout_percent,
        "plans": list(setting.plans),
        "opt_in_allowed": setting.opt_in_allowed,
        "updated_by": by,
        "updated_at": at,
    }
    await session.execute(
        insert_ignoring_conflicts(
            session, FeatureFlagSetting, id=uuid.uuid4(), key=key, created_at=at, **values
        )
    )
    await session.execute(
        update(FeatureFlagSetting)
        .where(FeatureFlagSetting.key == key)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


@cross_tenant("counts the operator's overrides of each flag across tenants")
async def override_counts(session: AsyncSession) -> dict[str, int]:
    """How many tenants the operator set each flag for (source `override`)."""
    result = await session.execute(
        select(FeatureOverride.key, func.count())
        .where(FeatureOverride.source == "override")
        .group_by(FeatureOverride.key)
    )
    return {key: int(count) for key, count in result.tuples()}
