from __future__ import annotations

from contentplatform import API_VERSION, __version__
from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import Empty
from contentplatform.system.schemas import (
    Health,
    ServiceVersion,
    WhoAmI,
    WhoAmIOrganization,
    WhoAmIUser,
)
from contentplatform.tenants import service as tenants

router = ProcedureRouter("system", tag="System")


@router.get("health", "/v1/system/health", access=Access.public)
async def health(ctx: Context, _: Empty) -> Health:
    """Liveness of the API (no authentication).

    Answers `{status: ok}` while the process serves requests; it reads nothing else (use
    `/readyz` to know the database and workers are up)."""
    return Health(status="ok")


@router.get("version", "/v1/system/version", access=Access.user)
async def version(ctx: Context, _: Empty) -> ServiceVersion:
    """Build and API version (any valid token; no organization needed).

    The package version, the API version of the reference it implements, the build's commit and
    time when the build set them, and the environment (local, staging, production)."""
    return ServiceVersion(
        version=__version__,
        api_version=API_VERSION,
        commit=ctx.settings.build_commit,
        build_time=ctx.settings.build_time,
        environment=ctx.settings.env.value,
    )


@router.get("whoami", "/v1/system/whoami", access=Access.member)
async def whoami(ctx: Context, _: Empty) -> WhoAmI:
    """The caller as the API sees it: user, organization, tenant and role.

    What the token and the organization header resolve to: the member's profile, the
    organization and its tenant id, the role (member, editor, admin), whether the caller is a
    platform superadmin, and how it signed in (a user token or an API key). A first call by a
    new member of the organization adds them."""
    tenant = ctx.tenant
    member = await tenants.member_profile(ctx.session, tenant)
    return WhoAmI(
        user=WhoAmIUser(**member.model_dump()),
        organization=WhoAmIOrganization(idp_org_id=tenant.org_id, name=tenant.org_name),
        tenant_id=tenant.tenant_id,
        role=tenant.role.value,
        superadmin=ctx.identity.superadmin,
        auth=ctx.identity.auth,
        impersonated_by=None,
    )
