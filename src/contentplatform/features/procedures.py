"""The Features operations: declarations only; the rules live in flags.py and service.py.

Every member reads the flags as they apply to the organization; only an admin opts it in or
out of a beta.
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.features import schemas, service
from contentplatform.features.errors import (
    FeatureNotFound,
    FeatureNotOptional,
    FeatureOverridden,
)
from contentplatform.kit.schemas import Empty

router = ProcedureRouter("features", tag="Features")


@router.get("list", "/v1/features", access=Access.member)
async def list_features(ctx: Context, _: Empty) -> schemas.FeatureList:
    """Feature flags as evaluated for this tenant.

    Each flag says whether it is on and what decided it (`source`): the operator's override for
    this organization, its own opt-in or opt-out, the operator's rollout to a percentage of
    organizations, or the default. Evaluations are cached for 30 seconds per organization; an
    opt-in or opt-out shows at once. An operation behind a flag that is off answers 403
    FORBIDDEN naming the flag."""
    return await service.list_features(ctx.session, ctx.runtime, ctx.tenant.tenant_id)


@router.procedure(
    "setOptIn",
    "PUT",
    "/v1/features/{key}",
    access=Access.admin,
    errors=[FeatureNotFound, FeatureNotOptional, FeatureOverridden],
)
async def set_opt_in(ctx: Context, data: schemas.SetOptInInput) -> schemas.Feature:
    """Opt the tenant in or out of a beta feature.

    Only flags with `opt_in_allowed` (403 otherwise, naming the flag); an unknown key is 404,
    and a flag the operator set for this organization is 409. The choice wins over the
    operator's rollout and default (not over an override) and applies at once (on every process
    when they share Redis; without it, other processes within the 30 seconds of their cache)."""
    return await service.set_opt_in(
        ctx.session,
        ctx.runtime,
        ctx.tenant.tenant_id,
        ctx.identity.subject,
        data.key,
        enabled=data.enabled,
    )
