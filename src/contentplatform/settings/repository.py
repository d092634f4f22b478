"""Every query on the settings tables; the tenant always comes first."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import cross_tenant
from contentplatform.settings.models import (
    ApiKey,
    BrandVoice,
    ContentRule,
    ContentStrategy,
    TenantSettings,
)

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


async def latest_strategies(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, ContentStrategy]:
    """The current version of the strategy of each of these tenants that has one."""
    newest = (
        select(ContentStrategy.tenant_id, func.max(ContentStrategy.version).label("version"))
        .where(ContentStrategy.tenant_id.in_(set(tenant_ids)))
        .group_by(ContentStrategy.tenant_id)
        .subquery()
    )
    result = await session.execute(
        select(ContentStrategy).join(
            newest,
            (ContentStrategy.tenant_id == newest.c.tenant_id)
            & (ContentStrategy.version == newest.c.version),
        )
    )
    return {row.tenant_id: row for row in result.scalars()}


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


async def api_keys(session: AsyncSession, tenant_id: uuid.UUID) -> list[ApiKey]:
    """The tenant's API keys, revoked ones included, newest first."""
    result = await session.execute(
        select(ApiKey)
        .where(ApiKey.tenant_id == tenant_id)
        .order_by(ApiKey.created_at.desc(), ApiKey.id)
    )
    return list(result.scalars())


async def api_key(session: AsyncSession, tenant_id: uuid.UUID, key_id: uuid.UUID) -> ApiKey | None:
    result = await session.execute(
        select(ApiKey).where(ApiKey.tenant_id == tenant_id, ApiKey.id == key_id)
    )
    return result.scalar_one_or_none()


@cross_tenant("an API key is how its tenant is found")
async def api_key_by_hash(session: AsyncSession, secret_hash: str) -> ApiKey | None:
    """The key a caller presents, whichever tenant's: the one query without a tenant, as the
    key is what names the tenant (as an organization id does for a token)."""
    result = await session.execute(select(ApiKey).where(ApiKey.secret_hash == secret_hash))
    return result.scalar_one_or_none()


async def revoke_api_keys_of(
    session: AsyncSession, tenant_id: uuid.UUID, created_by: str, at: datetime
) -> list[tuple[uuid.UUID, str, str, str]]:
    """Revoke every live key of the tenant that `created_by` made: (id, name, prefix, role) of
    each."""
    result = await session.execute(
        update(ApiKey)
        .where(
            ApiKey.tenant_id == tenant_id,
            ApiKey.created_by == created_by,
            ApiKey.revoked_at.is_(None),
        )
        .values(revoked_at=at, revoked_by="system:member-removed", updated_at=at)
        .returning(ApiKey.id, ApiKey.name, ApiKey.prefix, ApiKey.role)
        .execution_options(synchronize_session=False)
    )
    return [(key_id, name, prefix, role) for key_id, name, prefix, role in result]
