"""Feature flags for a tenant: evaluated from the registry (flags.py), the operator's config
and the tenant's stored choices, kept 30 seconds per tenant in the runtime's cache.

`require` is what the guard calls for an operation declared behind a flag: on a cache hit it
reads the tenant's evaluation without touching the database. Below tenants, above core: it
imports no domain but the outbox (an opt-in or out is audited as `feature.opt_in_changed`);
the tenant's plan (a setting's `plans`) is read through the reader billing registers
(`plan_source`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

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
from contentplatform.features.flags import FLAGS, Evaluation, Flag, Setting
from contentplatform.kit.db import after_commit, utcnow

CACHE_SECONDS = 30.0


def cache_scope(tenant_id: uuid.UUID) -> str:
    """What a change of the tenant's flags retires from the cache at once."""
    return f"features:{tenant_id}"


# What a change of a flag's settings (every tenant's evaluation) retires at once: every
# tenant's cached evaluation is keyed by this scope's current token.
SETTINGS_SCOPE = "features"
SETTINGS_TOKEN_SECONDS = 86_400.0


async def _settings_token(runtime: Runtime) -> str:
    async def produce() -> str:
        return uuid.uuid4().hex

    return await runtime.cache.get_or_set(SETTINGS_SCOPE, "token", SETTINGS_TOKEN_SECONDS, produce)


async def retire_all(runtime: Runtime) -> None:
    """Retire every tenant's cached evaluation (a flag's settings changed)."""
    await runtime.cache.invalidate(SETTINGS_SCOPE)


def _cache_key(config: Mapping[str, bool | int]) -> str:
    """The evaluation's key in its scope, naming the flags and the config it was made with: a
    process started with another CONTENTPLATFORM_FEATURES (or another build's flags) never
    reads an evaluation made under the old ones, even through a shared Redis."""
    configured = ",".join(f"{key}={value}" for key, value in sorted(config.items()))
    return f"evaluation:{','.join(FLAGS)}:{configured}"


# How the key of a tenant's current plan is read (a flag setting's `plans`). Billing knows it
# and sits above: it registers its reader here when it is imported (`plan_source`), as every
# process that serves or works imports every domain. None registered: no plan applies.
PlanReader = Callable[[AsyncSession, uuid.UUID], Awaitable[str]]
_plan_readers: list[PlanReader] = []


def plan_source(reader: PlanReader) -> PlanReader:
    """Register how a tenant's current plan's key is read (billing's `plan_key`); one source,
    a second registration replaces the first."""
    _plan_readers[:] = [reader]
    return reader


async def _plan_of(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
    return await _plan_readers[0](session, tenant_id) if _plan_readers else None


async def evaluate(
    session: AsyncSession, settings: Settings, tenant_id: uuid.UUID
) -> dict[str, Evaluation]:
    """Every declared flag for the tenant, from the database (no cache). The tenant's plan is
    read only when a stored setting lists plans."""
    stored = await repository.stored(session, tenant_id)
    operator = await repository.settings(session)
    listed = any(setting.plans for setting, _ in operator.values())
    plan = await _plan_of(session, tenant_id) if listed else None
    return {
        key: flags.evaluate(
            flag,
            tenant_id,
            settings.features,
            stored.get(key),
            operator[key][0] if key in operator else None,
            plan=plan,
        )
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

    key = f"{_cache_key(runtime.settings.features)}:{await _settings_token(runtime)}"
    text = await runtime.cache.get_or_set(cache_scope(tenant_id), key, CACHE_SECONDS, produce)
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
    operator = await repository.settings(session)
    data = [
        _feature(
            flags.effective(flag, operator[key][0] if key in operator else None), *evaluation[key]
        )
        for key, flag in FLAGS.items()
    ]
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
    operator = (await repository.settings(session)).get(key)
    flag = flags.effective(flag, operator[0] if operator else None)
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


async def stored_overrides(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, flags.Stored]:
    """The tenant's stored choices (the operator's overrides and its opt-ins), by flag key."""
    return await repository.stored(session, tenant_id)


# --- the operator's settings (admin.listFeatureFlags, admin.updateFeatureFlag) -----------------


@dataclass(frozen=True)
class FlagState:
    """A declared flag as the operator set it: its settings, how many tenants it is set for,
    and when its settings last changed (None: never, the declaration applies)."""

    flag: Flag
    rollout_percent: int | None
    plans: tuple[str, ...]
    tenant_overrides: int
    updated_at: datetime | None


async def flag_states(session: AsyncSession, settings: Settings) -> list[FlagState]:
    """Every declared flag, in the registry's order."""
    operator = await repository.settings(session)
    counts = await repository.override_counts(session)
    found = []
    for key, flag in FLAGS.items():
        setting, updated_at = operator.get(key, (None, None))
        configured = settings.features.get(key)
        percent = (
            setting.rollout_percent
            if setting is not None
            else configured
            if isinstance(configured, int) and not isinstance(configured, bool)
            else None
        )
        found.append(
            FlagState(
                flag=flags.effective(flag, setting),
                rollout_percent=percent,
                plans=setting.plans if setting is not None else (),
                tenant_overrides=counts.get(key, 0),
                updated_at=updated_at,
            )
        )
    return found


async def save_setting(
    session: AsyncSession, runtime: Runtime, key: str, setting: Setting, *, by: str
) -> None:
    """Store the operator's setting of declared flag `key` (404 unknown); every tenant's cached
    evaluation is retired once this commits."""
    if key not in FLAGS:
        raise FeatureNotFound(key)
    await repository.save_setting(session, key, setting, by=by, at=utcnow())
    retire_all_after_commit(session, runtime)


def retire_after_commit(session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID) -> None:
    """Retire the tenant's cached evaluation once this transaction commits (what decides its
    flags changed: its plan, say)."""

    async def invalidate() -> None:
        await runtime.cache.invalidate(cache_scope(tenant_id))

    after_commit(session, invalidate)


def retire_all_after_commit(session: AsyncSession, runtime: Runtime) -> None:
    """Retire every tenant's cached evaluation once this transaction commits."""

    async def invalidate() -> None:
        await retire_all(runtime)

    after_commit(session, invalidate)


async def set_override(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    key: str,
    *,
    enabled: bool | None,
    by: str,
) -> None:
    """The operator's override of declared flag `key` for the tenant (None removes it, and any
    opt-in); the tenant's cached evaluation is retired once this commits."""
    if key not in FLAGS:
        raise FeatureNotFound(key)
    await repository.set_override(
        session, tenant_id, key, enabled=enabled, set_by=by, set_at=utcnow()
    )

    async def invalidate() -> None:
        await runtime.cache.invalidate(cache_scope(tenant_id))

    after_commit(session, invalidate)
