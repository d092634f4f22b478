"""The feature flags, declared in code, and how one is evaluated for a tenant.

A flag is decided by the first of these that speaks for it (`evaluate`):

1. the tenant's override (`feature_overrides`, source `override`): set by the operator for one
   tenant (admin.updateFeatureFlag's `tenantOverrides`);
2. the tenant's own opt-in or opt-out (source `opt_in`), for flags that allow one;
3. the operator's stored setting of the flag (`feature_flag_settings`, admin.updateFeatureFlag),
   which also replaces its stage, default and opt-in: on for every tenant when
   `default_enabled` (source `default`), else on for a tenant whose current plan is one of its
   `plans` (plan keys of billing's catalogue; source `plan`), else on for `rollout_percent` %
   of tenants (source `rollout`), else off (source `default`);
4. else the operator's global config (`CONTENTPLATFORM_FEATURES`): true/false for every tenant
   (source `default`), or a percentage of tenants, chosen by a stable hash of the flag and the
   tenant (source `rollout`);
5. the flag's default here (source `default`).

The plan comes after the tenant's own word (the operator's override, an opt-in or out) and
before the rollout: a plan's tenants have the flag whatever their place in the rollout, and
the rest are rolled out to. Features sits below billing: the caller passes the tenant's plan
key in (features/service.py reads it through the reader billing registers).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Stage = Literal["alpha", "beta", "ga", "deprecated"]
Source = Literal["default", "plan", "rollout", "override", "opt_in"]
# What a tenant's stored row may say (models.FeatureOverride.source).
StoredSource = Literal["override", "opt_in"]


@dataclass(frozen=True)
class Flag:
    key: str
    stage: Stage
    default: bool
    # Whether a tenant's admin may opt in or out of it (features.setOptIn).
    opt_in_allowed: bool
    description: str


FLAGS: dict[str, Flag] = {
    flag.key: flag
    for flag in (
        Flag(
            key="chat",
            stage="ga",
            default=True,
            opt_in_allowed=False,
            description="Chat over the tenant's knowledge (chat.*)",
        ),
        Flag(
            key="topic_suggestions",
            stage="beta",
            default=True,
            opt_in_allowed=True,
            description="Topic suggestions from the knowledge base (generation.suggestTopics)",
        ),
    )
}


@dataclass(frozen=True)
class Stored:
    """A tenant's stored choice for one flag (a `feature_overrides` row)."""

    enabled: bool
    source: StoredSource


@dataclass(frozen=True)
class Setting:
    """The operator's stored settings of a flag (admin.updateFeatureFlag), which replace its
    declared stage, default and opt-in, and the global config's word on it."""

    stage: Stage
    default_enabled: bool
    rollout_percent: int | None
    plans: tuple[str, ...]
    opt_in_allowed: bool


def effective(flag: Flag, setting: Setting | None) -> Flag:
    """The flag as the operator's setting makes it (stage, default, opt-in)."""
    if setting is None:
        return flag
    return Flag(
        key=flag.key,
        stage=setting.stage,
        default=setting.default_enabled,
        opt_in_allowed=setting.opt_in_allowed,
        description=flag.description,
    )


@dataclass(frozen=True)
class Evaluation:
    enabled: bool
    source: Source


def check_config(config: Mapping[str, bool | int]) -> None:
    """Refuse a global config (CONTENTPLATFORM_FEATURES) naming a flag that is not declared, or
    giving a flag anything but true/false or a percentage 0-100 (ValueError, naming it)."""
    for key, value in config.items():
        if key not in FLAGS:
            known = ", ".join(sorted(FLAGS))
            raise ValueError(
                f"CONTENTPLATFORM_FEATURES names an unknown feature flag {key!r} (known: {known})"
            )
        if not isinstance(value, bool) and not (isinstance(value, int) and 0 <= value <= 100):
            raise ValueError(
                f"CONTENTPLATFORM_FEATURES[{key!r}] must be true, false or a percentage 0-100, "
                f"not {value!r}"
            )


def bucket(key: str, tenant_id: uuid.UUID) -> int:
    """Where the tenant falls, 0-99, in the rollout of flag `key`: the same on every process
    and every run (SHA-256, not Python's salted hash()), and independent between flags."""
    digest = hashlib.sha256(f"{key}:{tenant_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100


def in_rollout(key: str, tenant_id: uuid.UUID, percent: int) -> bool:
    """Whether a rollout of `key` to `percent` % of tenants includes this one (a tenant in at
    10 % stays in at 20 %)."""
    return bucket(key, tenant_id) < percent


def evaluate(
    flag: Flag,
    tenant_id: uuid.UUID,
    config: Mapping[str, bool | int],
    stored: Stored | None,
    setting: Setting | None = None,
    *,
    plan: str | None = None,
) -> Evaluation:
    """The flag for this tenant, and what decided it (see the module's docstring); `plan`: the
    key of the tenant's current plan (None: unknown, no plan applies)."""
    flag = effective(flag, setting)
    if stored is not None and stored.source == "override":
        return Evaluation(stored.enabled, "override")
    if stored is not None and stored.source == "opt_in" and flag.opt_in_allowed:
        return Evaluation(stored.enabled, "opt_in")
    if setting is not None:
        # The operator's setting replaces the global config: on for everyone, else for the
        # tenants of its plans, else the percentage of tenants (by the same stable hash), else
        # off.
        if setting.default_enabled:
            return Evaluation(True, "default")
        if plan is not None and plan in setting.plans:
            return Evaluation(True, "plan")
        if setting.rollout_percent is not None:
            return Evaluation(in_rollout(flag.key, tenant_id, setting.rollout_percent), "rollout")
        return Evaluation(False, "default")
    configured = config.get(flag.key)
    if isinstance(configured, bool):
        return Evaluation(configured, "default")
    if isinstance(configured, int):
        return Evaluation(in_rollout(flag.key, tenant_id, configured), "rollout")
    return Evaluation(flag.default, "default")
