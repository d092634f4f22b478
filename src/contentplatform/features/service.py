"""Feature flags for a tenant: evaluated from the registry (flags.py), the operator's config
and the tenant's stored choices, kept 30 seconds per tenant in the runtime's cache.

`require` is what the guard calls for an operation declared behind a flag: on a cache hit it
reads the tenant's evaluation without touching the database. Below tenants, above core: it
imports no domain but the outbox (an opt-in or out is audited as `feature.opt_in_changed`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.core.runtime import Runtime
from contentplatform.events import service as events
from contentplatform.features import flags, repository, schemas
from contentplatform.features.errors import (
    FeatureDisabled,
    FeatureNotFound,
    FeatureNotOptional,
    FeatureOverridden,
)
from contentplatform.features.flags import FLAGS, Evaluation, Flag
from contentplatform.kit.db import after_commit, utcnow

CACHE_SECONDS = 30.0


def cache_scope(tenant_id: uuid.UUID) -> str:
    """What a change of the tenant's flags retires from the cache at once."""
    return f"features:{tenant_id}"


def _cache_key(config: Mapping[str, bool | int]) -> str:
    """The evaluation's key in its scope, naming the flags and the config it was made with: a
    process started with another CONTENTPLATFORM_FEATURES (or another build's flags) never
    reads an evaluation made under the old ones, even through a shared Redis."""
    configured = ",".join(f"{key}={value}" for key, value in sorted(config.items()))
    return f"evaluation:{','.join(FLAGS)}:{configured}"


async def evaluate(
    session: AsyncSession, settings: Settings, tenant_id: uuid.UUID
) -> dict[str, Evaluation]:
    """Every declared flag for the tenant, from the database (no cache)."""
    stored = await repository.stored(session, tenant_id)
    return {
        key: flags.evaluate(flag, tenant_id, settings.features, stored.get(key))
        for key, flag in FLAGS.items()
    }


async def _evaluation(
    runtime: Runtime, tenant_id: uuid.UUID, session: AsyncSession | None = None
) -> dict[str, list[object]]:
    """The tenant's evaluation through the cache, as it is stored there: key -> [enabled,
    source]. A miss reads it with `session`, or in a unit of work of its own."""

    async def produce() -> str:
        if session is not None:
            found = await evaluate(session, runtime.settings, tenant_id)
        else:
            async with runtime.db.unit_of_work() as own:
                found = await evaluate(own, runtime.settings, tenant_id)
        return json.dumps({key: [value.enabled, value.source] for key, value in found.items()})

    text = await runtime.cache.get_or_set(
        cache_scope(tenant_id), _cache_key(runtime.settings.features), CACHE_SECONDS, produce
    )
    evaluation: dict[str, list[object]] = json.loads(text)
    return evaluation


async def require(runtime: Runtime, tenant_id: uuid.UUID, key: str) -> None:
    """FeatureDisabled (403, naming the flag) unless flag `key` is on for the tenant. A key
    that is not declared is a mistake in the code that declares the operation (KeyError)."""
    if key not in FLAGS:
        raise KeyError(f"no feature flag {key!r} is declared (features/flags.py)")
    evaluation = await _evaluation(runtime, tenant_id)
    if evaluation[key][0] is not True:
        raise FeatureDisabled(key)


def _feature(flag: Flag, enabled: object, source: object) -> schemas.Feature:
    return schemas.Feature.model_validate(
        {
            "key": flag.key,
            "enabled": enabled,
            "source": source,
            "stage": flag.stage,
            "opt_in_allowed": flag.opt_in_allowed,
            "description": flag.description,
        }
    )


async def list_features(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID
) -> schemas.FeatureList:
    """Every declared flag as evaluated for the tenant (cached), in the registry's order."""
    evaluation = await _evaluation(runtime, tenant_id, session)
    data = [_feature(flag, *evaluation[key]) for key, flag in FLAGS.items()]
    return schemas.FeatureList(data=data, total=len(data))


async def set_opt_in(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    subject: str,
    key: str,
    *,
    enabled: bool,
) -> schemas.Feature:
    """Opt the tenant in or out of flag `key` (404 unknown, 403 not optional, 409 set by the
    operator for this tenant); its cached evaluation is retired once this commits."""
    flag = FLAGS.get(key)
    if flag is None:
        raise FeatureNotFound(key)
    if not flag.opt_in_allowed:
        raise FeatureNotOptional(key)
    before = (await evaluate(session, runtime.settings, tenant_id))[key]
    stored = await repository.set_opt_in(
        session, tenant_id, key, enabled=enabled, set_by=subject, set_at=utcnow()
    )
    if not stored:
        raise FeatureOverridden(key)

    async def invalidate() -> None:
        await runtime.cache.invalidate(cache_scope(tenant_id))

    after_commit(session, invalidate)
    evaluation = (await evaluate(session, runtime.settings, tenant_id))[key]
    # Audited when it changed what applies (opting in twice is no change).
    changes = events.changes_between(
        {"enabled": before.enabled, "source": before.source},
        {"enabled": evaluation.enabled, "source": evaluation.source},
    )
    if changes:
        events.emit(
            session,
            tenant_id,
            "feature.opt_in_changed",
            resource_id=None,
            payload={"key": key, "enabled": evaluation.enabled},
            changes=changes,
        )
    return _feature(flag, evaluation.enabled, evaluation.source)
