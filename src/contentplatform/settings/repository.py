"""Every query on the settings tables; the tenant always comes first."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.settings.models import BrandVoice, ContentRule, ContentStrategy, TenantSettings

Versioned = type[BrandVoice] | type[ContentStrategy]


async def settings_of(session: AsyncSession, tenant_id: uuid.UUID) -> TenantSettings | None:
    result = await session.execute(
        select(TenantSettings).where(TenantSettings.tenant_id == tenant_id)
    )
    return result.scalar_one_or_none()


async def latest(
    session: AsyncSession, tenant_id: uuid.UUID, model: Versioned
) -> BrandVoice | ContentStrategy | None:
    """The current version (the highest) of the tenant's voice or strategy."""
    result = await session.execute(
        select(model).where(model.tenant_id == tenant_id).order_by(model.version.desc()).limit(1)
    )
    found = result.scalar_one_or_none()
    assert found is None or isinstance(found, BrandVoice | ContentStrategy)
    return found


async def rules(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    enabled: bool | None = None,
    rule_type: str | None = None,
) -> list[ContentRule]:
    """The tenant's rules, oldest first."""
    statement = select(ContentRule).where(ContentRule.tenant_id == tenant_id)
    if enabled is not None:
        statement = statement.where(ContentRule.enabled.is_(enabled))
    if rule_type is not None:
        statement = statement.where(ContentRule.type == rule_type)
    result = await session.execute(statement.order_by(ContentRule.created_at, ContentRule.id))
    return list(result.scalars())


async def rule(
    session: AsyncSession, tenant_id: uuid.UUID, rule_id: uuid.UUID
) -> ContentRule | None:
    result = await session.execute(
        select(ContentRule).where(ContentRule.tenant_id == tenant_id, ContentRule.id == rule_id)
    )
    return result.scalar_one_or_none()


async def count_rules(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    total = await session.scalar(
        select(func.count()).select_from(ContentRule).where(ContentRule.tenant_id == tenant_id)
    )
    return int(total or 0)


async def delete_rule(session: AsyncSession, tenant_id: uuid.UUID, rule_id: uuid.UUID) -> bool:
    result = await session.execute(
        delete(ContentRule)
        .where(ContentRule.tenant_id == tenant_id, ContentRule.id == rule_id)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))
