from __future__ import annotations

from contentplatform import API_VERSION, __version__
from contentplatform.auth.context import Access
from contentplatform.core import actors
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import Empty
from contentplatform.system import service
from contentplatform.system.schemas import (
    Health,
    ServiceVersion,
    SystemStatus,
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


@router.get("status", "/v1/system/status", access=Access.public)
async def status(ctx: Context, _: Empty) -> SystemStatus:
    """Component status for a status page (no authentication).

    The overall status (`operational`, `degraded`, `outage`) and each component's: `api`,
    `database`, `workers` (the durable queues' lag), `search` (the embeddings server, when
    configured), `storage`, `llm`, `identity_provider`, `payments`, `mail`. Judged from passive
    signals only: the last outcomes of the service's real calls, the queues' lag and one
    database read; never a probe that costs money. `checked_at` is when that signal was seen;
    null for a component not used yet (reported operational). Cached 15 s; never a host name,
    version or error text. An outage of a provider degrades the whole; an outage of the
    database or the workers is one. `/readyz` stays the orchestrator's probe."""
    workers_here = bool(getattr(ctx.request.app.state, "durable_workers", False))
    return await service.status(ctx.runtime, workers_here=workers_here)


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
        # The superadmin acting through an impersonation session (admin.startImpersonation).
        impersonated_by=actors.current().impersonated_by,
    )
