"""API keys: made, listed and revoked by admins (settings.*ApiKey*), resolved by the guard.

A key fixes its tenant and acts as member or editor, never more; the routers of team and
settings (and, as they come, billing administration and webhook endpoints) refuse keys whatever
their role (core/procedures.py `api_keys`). The guard keeps a resolved key a few seconds
(tenants/guard.py); a revocation, a removal of the admin who made it, or turning keys off
retires what every process holds at once (the organization's access scope, published after
commit), and the short life of an entry bounds it where no Redis carries the message.

Making and revoking a key are audit events (`api_key.created`, `api_key.revoked`): its name,
prefix and role, never the key.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth import api_keys
from contentplatform.auth.context import Identity, KeyAccess, Role, TenantAccess
from contentplatform.billing import service as billing
from contentplatform.events import service as events
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.invalidation import Invalidations
from contentplatform.kit.schemas import Success
from contentplatform.settings import repository, schemas
from contentplatform.settings.errors import (
    ApiKeyNotFound,
    ApiKeysDisabled,
    InvalidApiKey,
    TooManyApiKeys,
)
from contentplatform.settings.models import ApiKey
from contentplatform.tenants import service as tenants

# Live (unrevoked, unexpired) keys a tenant may hold at once.
MAX_LIVE_KEYS = 50
# How finely a key's last use is recorded: a write per key per minute at most, not per request.
USE_RESOLUTION = timedelta(minutes=1)


def subject_of(key_id: uuid.UUID) -> str:
    """The subject a key acts as: what records it makes name as their author."""
    return f"apikey_{key_id.hex}"


def _record(key: ApiKey) -> schemas.ApiKey:
    return schemas.ApiKey.model_validate(key)


def _live(key: ApiKey, now: datetime) -> bool:
    return key.revoked_at is None and (key.expires_at is None or key.expires_at > now)


async def keys_enabled(session: AsyncSession, tenant_id: uuid.UUID) -> bool:
    """`security.apiKeysEnabled` of the tenant's settings (on unless an admin turned it off)."""
    row = await repository.settings_of(session, tenant_id)
    security = (row.values if row is not None else {}).get("security") or {}
    return bool(security.get("api_keys_enabled", True))


def announce_after_commit(session: AsyncSession, bus: Invalidations, org_id: str) -> None:
    """Once committed, every process drops what it holds of the organization's keys (and its
    members' access: one scope for both, tenants.access_scope)."""

    async def publish() -> None:
        await bus.publish(tenants.access_scope(org_id))

    after_commit(session, publish)


async def live_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    now = utcnow()
    return sum(_live(key, now) for key in await repository.api_keys(session, tenant_id))


async def list_keys(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.ApiKeyList:
    found = await repository.api_keys(session, tenant_id)
    return schemas.ApiKeyList(data=[_record(key) for key in found], total=len(found))


async def create_key(
    session: AsyncSession, tenant: TenantAccess, by: str, data: schemas.CreateApiKeyInput
) -> schemas.CreatedApiKey:
    await tenants.lock_tenant(session, tenant.tenant_id)
    if not await keys_enabled(session, tenant.tenant_id):
        raise ApiKeysDisabled(
            "API keys are turned off for this organization (settings: security.apiKeysEnabled)."
        )
    now = utcnow()
    live = [key for key in await repository.api_keys(session, tenant.tenant_id) if _live(key, now)]
    if len(live) >= MAX_LIVE_KEYS:
        raise TooManyApiKeys(
            f"This organization has {MAX_LIVE_KEYS} live API keys, the most it may have: "
            "revoke one first."
        )
    await billing.check_limit(session, tenant.tenant_id, "api_keys", used=len(live))
    key_id = uuid.uuid4()
    secret, prefix = api_keys.new_key()
    key = ApiKey(
        id=key_id,
        tenant_id=tenant.tenant_id,
        name=data.name,
        prefix=prefix,
        secret_hash=api_keys.digest(secret),
        role=data.role,
        user_id=await tenants.key_user(session, subject_of(key_id), data.name),
        created_by=by,
        expires_at=now + timedelta(days=data.expires_in_days) if data.expires_in_days else None,
        created_at=now,
        updated_at=now,
    )
    session.add(key)
    await session.flush()
    _announce(session, "api_key.created", key.tenant_id, key.id, key.name, key.prefix, key.role)
    return schemas.CreatedApiKey(**_record(key).model_dump(), secret=secret)


def _announce(
    session: AsyncSession,
    type_: str,
    tenant_id: uuid.UUID,
    key_id: uuid.UUID,
    name: str,
    prefix: str,
    role: str,
    **more: object,
) -> None:
    events.emit(
        session,
        tenant_id,
        type_,
        resource_id=key_id,
        payload={"key_id": key_id, "name": name, "prefix": prefix, "role": role, **more},
    )


async def revoke_key(
    session: AsyncSession, bus: Invalidations, tenant: TenantAccess, by: str, key_id: uuid.UUID
) -> Success:
    """Revoke a key (again: nothing changes). Refused everywhere at once (see the module)."""
    key = await repository.api_key(session, tenant.tenant_id, key_id)
    if key is None:
        raise ApiKeyNotFound(key_id)
    if key.revoked_at is None:
        key.revoked_at = key.updated_at = utcnow()
        key.revoked_by = by
        announce_after_commit(session, bus, tenant.org_id)
        _announce(session, "api_key.revoked", key.tenant_id, key.id, key.name, key.prefix, key.role)
    return Success(success=True)


async def revoke_keys_of(session: AsyncSession, tenant_id: uuid.UUID, member: str) -> int:
    """A member left: the keys they made stop working (the caller announces the removal, which
    retires the keys too). How many were revoked."""
    revoked = await repository.revoke_api_keys_of(session, tenant_id, member, utcnow())
    for key_id, name, prefix, role in revoked:
        _announce(
            session,
            "api_key.revoked",
            tenant_id,
            key_id,
            name,
            prefix,
            role,
            reason="member_removed",
        )
    return len(revoked)


async def resolve(session: AsyncSession, secret: str) -> KeyAccess:
    """What the key `secret` may do: 401 when unknown, revoked or expired; 403 when its tenant
    is suspended or turned keys off. Records its use (to the minute)."""
    key = await repository.api_key_by_hash(session, api_keys.digest(secret))
    if key is None:
        raise InvalidApiKey("This API key is not valid.")
    now = utcnow()
    if key.revoked_at is not None:
        raise InvalidApiKey("This API key has been revoked.")
    if key.expires_at is not None and key.expires_at <= now:
        raise InvalidApiKey(f"This API key expired at {key.expires_at.isoformat()}.")
    tenant = await tenants.key_access(session, key.tenant_id, key.user_id, Role(key.role))
    if not await keys_enabled(session, key.tenant_id):
        raise ApiKeysDisabled(
            "API keys are turned off for this organization (settings: security.apiKeysEnabled)."
        )
    if key.last_used_at is None or now - key.last_used_at >= USE_RESOLUTION:
        key.last_used_at = now
    identity = Identity(
        subject=subject_of(key.id),
        email=None,
        name=key.name,
        superadmin=False,
        organizations={},
        organization_names={},
        auth="api_key",
    )
    return KeyAccess(key_id=key.id, identity=identity, tenant=tenant, expires_at=key.expires_at)
