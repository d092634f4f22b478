"""The Admin operations (superadmins only, under /api/admin/): declarations only."""

from __future__ import annotations

from contentplatform.admin import schemas, service, usage
from contentplatform.admin.errors import (
    CreditsWouldGoNegative,
    FlagNotFound,
    GrantCannotExpire,
    IdempotencyKeyReused,
    InboundEventBusy,
    InboundEventNotFound,
    PlanNotFound,
    TenantNotFound,
    UnknownPlan,
)
from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import Empty
from contentplatform.support.errors import TicketNotFound
from contentplatform.support.schemas import TicketIdInput

router = ProcedureRouter("admin", tag="Admin")


# --- tenants ------------------------------------------------------------------------------------


@router.get("listTenants", "/api/admin/tenants", access=Access.superadmin)
async def list_tenants(ctx: Context, data: schemas.ListTenantsInput) -> schemas.TenantPage:
    """All tenants.

    Searched in names and IdP organization ids, filtered by status and by the plan that applies
    (an operator's override, else the paid subscription's), sorted by creation (newest first),
    name, or credits used in the last 30 days (most first). Superadmins only."""
    return await service.list_tenants(ctx.session, ctx.runtime, data)


@router.get(
    "getTenant", "/api/admin/tenants/{id}", access=Access.superadmin, errors=[TenantNotFound]
)
async def get_tenant(ctx: Context, data: schemas.TenantIdInput) -> schemas.TenantDetail:
    """One tenant in detail.

    Its summary, the operator's overrides, its flags set for it, its subscription, its credits
    used in the last 30 days by kind, open impersonation sessions and support tickets, and
    its suspension (why, when, by whom) while suspended."""
    return await service.get_tenant(ctx.session, ctx.runtime, data.id)


@router.patch(
    "updateTenant",
    "/api/admin/tenants/{id}",
    access=Access.superadmin,
    errors=[TenantNotFound, PlanNotFound],
)
async def update_tenant(ctx: Context, data: schemas.UpdateTenantInput) -> schemas.TenantDetail:
    """Override a tenant's plan or limits.

    `planOverride` names a plan of the catalogue that applies instead of the subscription's
    until `until` (none: until removed); `limitsOverride` gives limits that win over the
    plan's, each one given (null: unlimited). Left out: unchanged; null: removed. `note` says
    why; the change and the note are in the tenant's audit trail."""
    return await service.update_tenant(ctx.session, ctx.runtime, data)


@router.post(
    "setTenantStatus",
    "/api/admin/tenants/{id}/status",
    access=Access.superadmin,
    errors=[TenantNotFound],
)
async def set_tenant_status(
    ctx: Context, data: schemas.SetTenantStatusInput
) -> schemas.TenantDetail:
    """Suspend or reactivate a tenant.

    Suspended: every operation of the tenant answers 403 (detail: tenant suspended) at once, in
    every process; its public feed is 404; its schedules and outbound webhook deliveries wait;
    work already running finishes. Reactivated: each job whose runs were missed runs once (the
    missed occurrences are recorded as skipped), and deliveries resume. The tenant's admins
    are notified either way; `reason` is in its activity trail."""
    return await service.set_status(ctx.session, ctx.runtime, ctx.identity.subject, data)


# --- credits and usage --------------------------------------------------------------------------


@router.post(
    "grantCredits",
    "/api/admin/tenants/{id}/credit-grants",
    access=Access.superadmin,
    errors=[TenantNotFound, GrantCannotExpire, CreditsWouldGoNegative, IdempotencyKeyReused],
)
async def grant_credits(
    ctx: Context, data: schemas.GrantCreditsInput
) -> schemas.OperatorCreditGrant:
    """Grant (or claw back) credits.

    Positive: a new `admin_grant` bucket (expiring at `expiresAt`, if given). Negative: an
    `adjustment` drawn from the buckets that expire first, refused (409) when the tenant has
    fewer credits available. Replay-safe by `idempotencyKey`: the same key and body answer the
    first ledger entry again (with the balance now) and grant nothing; the same key with
    another body or tenant is 409."""
    return await service.grant_credits(ctx.session, ctx.runtime, ctx.identity.subject, data)


@router.get("usageOverview", "/api/admin/usage", access=Access.superadmin)
async def usage_overview(ctx: Context, data: schemas.UsageOverviewInput) -> schemas.PlatformUsage:
    """Platform-wide consumption and model cost.

    Credits, operations and tokens debited per UTC day or month, grouped by tenant, kind or
    plan (the tenant's current plan), the top `limit` groups by credits per bucket;
    `provider_cost_usd` prices the tokens with the same table as the AI-usage analytics
    (models it does not list count 0)."""
    return await usage.usage_overview(ctx.session, ctx.runtime, data)


# --- feature flags ------------------------------------------------------------------------------


@router.get("listFeatureFlags", "/api/admin/feature-flags", access=Access.superadmin)
async def list_feature_flags(ctx: Context, _: Empty) -> schemas.FlagList:
    """Feature flags and their rollout.

    Every flag declared in the code, with the operator's settings where stored (else its
    declaration and the global config): its rollout, the plans whose tenants have it (`plans`,
    applied), and how many tenants it is set for."""
    return await service.list_flags(ctx.session, ctx.runtime)


@router.patch(
    "updateFeatureFlag",
    "/api/admin/feature-flags/{key}",
    access=Access.superadmin,
    errors=[FlagNotFound, TenantNotFound, UnknownPlan],
)
async def update_feature_flag(ctx: Context, data: schemas.UpdateFlagInput) -> schemas.FlagView:
    """Change a flag's rollout or per-tenant overrides.

    Each setting given is stored (left out: unchanged) and wins over the declaration and the
    global config: `defaultEnabled` true turns it on for everyone, else it is on for the
    tenants whose current plan is one of `plans` (plan keys of the catalogue, `free` too;
    source `plan`), else for `rolloutPercent` of the other tenants by a stable hash of (flag,
    tenant) (a tenant in at 10 % stays in at 20 %), else it is off. A tenant's override (and
    its own opt-in) wins over all of them. `tenantOverrides` set it for tenants (null
    removes). Every cached evaluation is retired at once. Where billing is configured, a key
    in `plans` that is no plan of the catalogue is 400, naming it."""
    return await service.update_flag(ctx.session, ctx.runtime, ctx.identity.subject, data)


# --- inbound provider events --------------------------------------------------------------------


@router.get("listWebhookEvents", "/api/admin/webhook-events", access=Access.superadmin)
async def list_webhook_events(ctx: Context, data: schemas.ListInboundInput) -> schemas.InboundPage:
    """Inbound IdP and payment events and their processing.

    Both sources in one list, newest first; the tenant is the organization the event names
    (identity) or the subscription of its customer (payments), null when none."""
    return await service.list_inbound(ctx.session, data)


@router.post(
    "replayWebhookEvent",
    "/api/admin/webhook-events/{id}/replay",
    access=Access.superadmin,
    errors=[InboundEventNotFound, InboundEventBusy],
)
async def replay_webhook_event(ctx: Context, data: schemas.InboundIdInput) -> schemas.InboundEvent:
    """Process a stored inbound event again.

    The payload verified when it arrived goes through the same durable processing again (its
    handlers are idempotent); the answer is the event, `received` until it is processed. One
    still being processed is 409."""
    return await service.replay_inbound(ctx.session, ctx.identity.subject, data.id)


# --- support tickets (the rest of the staff's support operations are support's own) -----------


@router.get(
    "getSupportTicket",
    "/api/admin/support/tickets/{id}",
    access=Access.superadmin,
    errors=[TicketNotFound],
)
async def get_support_ticket(ctx: Context, data: TicketIdInput) -> schemas.SupportTicketDetail:
    """A ticket with internal notes and tenant context.

    `tenant` is the ticket's organization as admin.listTenants summarizes it (null for a
    contact-form message). `request_ids` are the cited ids as given; `requests` resolves each
    from the failed requests the service logged for the ticket's organization: its operation,
    method, status, problem code and time, or `found: false` (a request that succeeded, a 429,
    one older than 30 days, another organization's). Only requests of the organization's
    members answered with a problem are logged; search the service's own logs by `request_id`
    for the rest."""
    return await service.get_support_ticket(ctx.session, ctx.runtime, data.id)
