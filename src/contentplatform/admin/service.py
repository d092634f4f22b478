"""The rules of the Admin operations: the operators' view of every tenant, their overrides,
suspension, credit grants, feature flag settings and inbound provider events (usage.py: the
platform's consumption). Never commits.

Every change is written to the tenant's activity trail (events.emit) with the superadmin as the
actor (the request's actor: core/actors.py). A flag's platform-wide settings concern no tenant:
they are logged, and each tenant override is in that tenant's trail.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.admin import repository, schemas
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
from contentplatform.billing import durable as billing_durable
from contentplatform.billing import service as billing
from contentplatform.core.runtime import Runtime
from contentplatform.credits import operations as credit_operations
from contentplatform.credits import service as credits
from contentplatform.credits import usage as credit_usage
from contentplatform.events import service as events
from contentplatform.features import service as features
from contentplatform.features.flags import FLAGS, Setting
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.kit.inbound import start_processing
from contentplatform.kit.schemas import window_of
from contentplatform.support import service as support
from contentplatform.team import durable as team_durable
from contentplatform.team import service as team
from contentplatform.tenants import service as tenants
from contentplatform.tenants.models import Tenant

log = logging.getLogger(__name__)

USAGE_WINDOW = timedelta(days=30)


# --- tenants ------------------------------------------------------------------------------------


async def list_tenants(
    session: AsyncSession, runtime: Runtime, data: schemas.ListTenantsInput
) -> schemas.TenantPage:
    now = utcnow()
    rows, total = await repository.tenants_page(
        session,
        now=now,
        since=now - USAGE_WINDOW,
        billing_configured=runtime.settings.billing_configured,
        search=data.search,
        status=data.status,
        plan_id=data.plan_id,
        sort_by=data.sort_by,
        **window_of(data),
    )
    summaries = [schemas.TenantSummary.model_validate(row._mapping) for row in rows]
    return schemas.TenantPage(data=summaries, total=total, page=data.page, limit=data.limit)


async def _tenant(session: AsyncSession, tenant_id: uuid.UUID) -> Tenant:
    tenant = await tenants.tenant_by_id(session, tenant_id)
    if tenant is None:
        raise TenantNotFound(tenant_id)
    return tenant


async def get_support_ticket(
    session: AsyncSession, runtime: Runtime, ticket_id: uuid.UUID
) -> schemas.SupportTicketDetail:
    """A ticket as staff read it (support's), with its organization's summary."""
    ticket = await support.staff_get(session, ticket_id)
    summary = None
    if ticket.tenant_id is not None:
        now = utcnow()
        summary = await repository.tenant_summary(
            session,
            ticket.tenant_id,
            now=now,
            since=now - USAGE_WINDOW,
            billing_configured=runtime.settings.billing_configured,
        )
    tenant = schemas.TenantSummary.model_validate(dict(summary._mapping)) if summary else None
    return schemas.SupportTicketDetail(**ticket.model_dump(), tenant=tenant)


async def get_tenant(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID
) -> schemas.TenantDetail:
    """The tenant in detail: its numbers only (every figure is read for this tenant)."""
    tenant = await _tenant(session, tenant_id)
    now = utcnow()
    since = now - USAGE_WINDOW
    summary = await repository.tenant_summary(
        session,
        tenant_id,
        now=now,
        since=since,
        billing_configured=runtime.settings.billing_configured,
    )
    assert summary is not None, "the tenant exists"
    # Settled (this month's grant in, expired buckets out), as credits.getBalance shows it.
    monthly = (await billing.plan_limits(session, tenant_id)).monthly_credits
    available = (await credits.balance(session, tenant_id, monthly_grant=monthly)).available
    overrides = await tenants.overrides_of(session, tenant_id, now)
    stored = await features.stored_overrides(session, tenant_id)
    usage = await credit_usage.by_kind_since(session, tenant_id, since)
    return schemas.TenantDetail(
        **(dict(summary._mapping) | {"credits_available": available}),
        plan_override=(
            schemas.PlanOverride(plan_id=overrides.plan_id, until=overrides.plan_until)
            if overrides.plan_id
            else None
        ),
        limits_override=overrides.limits,
        feature_overrides=[
            schemas.TenantFeatureOverride(key=key, enabled=value.enabled, source=value.source)
            for key, value in sorted(stored.items())
        ],
        subscription=await billing.get_subscription(session, tenant_id, with_payment_method=True),
        usage_30d_by_kind=[
            schemas.TenantKindUsage(kind=kind, credits=used, operations=count)
            for kind, used, count in usage
        ],
        active_impersonations=await repository.active_impersonations(session, tenant_id, now),
        open_tickets=await support.open_tickets(session, tenant_id),
        suspension=(
            schemas.Suspension(
                reason=tenant.suspended_reason or "",
                at=tenant.suspended_at,
                by=tenant.suspended_by,
            )
            if tenant.status == "suspended" and tenant.suspended_at is not None
            else None
        ),
    )


async def update_tenant(
    session: AsyncSession, runtime: Runtime, data: schemas.UpdateTenantInput
) -> schemas.TenantDetail:
    """Set or remove the plan and limits overrides (a field left out is unchanged)."""
    await tenants.lock_tenant(session, data.id)
    tenant = await _tenant(session, data.id)
    before = {
        "plan_override": _plan_override_of(tenant),
        "limits_override": tenant.limits_override,
    }
    given = data.model_fields_set
    if "plan_override" in given:
        if data.plan_override is None:
            tenant.plan_override_id = tenant.plan_override_until = None
        else:
            if not await billing.plan_exists(session, data.plan_override.plan_id):
                raise PlanNotFound(f"There is no plan {data.plan_override.plan_id}.")
            tenant.plan_override_id = data.plan_override.plan_id
            tenant.plan_override_until = data.plan_override.until
        # Its flags are evaluated again (a flag's `plans`) once this commits.
        billing.plan_changed(session, tenant.id)
    if "limits_override" in given:
        limits = data.limits_override
        tenant.limits_override = (
            None if limits is None else limits.model_dump(exclude_unset=True) or None
        )
    after = {
        "plan_override": _plan_override_of(tenant),
        "limits_override": tenant.limits_override,
    }
    events.emit(
        session,
        tenant.id,
        "tenant.overridden",
        resource_id=tenant.id,
        payload={"note": data.note},
        changes=events.changes_between(before, after),
    )
    await session.flush()
    return await get_tenant(session, runtime, tenant.id)


def _plan_override_of(tenant: Tenant) -> dict[str, Any] | None:
    if tenant.plan_override_id is None:
        return None
    until = tenant.plan_override_until
    return {"plan_id": str(tenant.plan_override_id), "until": until.isoformat() if until else None}


async def set_status(
    session: AsyncSession, runtime: Runtime, operator: str, data: schemas.SetTenantStatusInput
) -> schemas.TenantDetail:
    """Suspend or reactivate the tenant. Its cached access is retired in every process once
    this commits, so the next request of any of its members or keys is refused (or admitted)
    at once; its admins hear of it. Setting the status it has changes nothing."""
    await tenants.lock_tenant(session, data.id)
    tenant = await _tenant(session, data.id)
    changed = await tenants.set_status(
        session, tenant, data.status, reason=data.reason, by=operator, at=utcnow()
    )
    if changed:
        kind = "tenant.suspended" if data.status == "suspended" else "tenant.reactivated"
        events.emit(
            session, tenant.id, kind, resource_id=tenant.id, payload={"reason": data.reason}
        )
        org_id = tenant.idp_org_id

        async def publish() -> None:
            await runtime.invalidations.publish(tenants.access_scope(org_id))

        after_commit(session, publish)
    await session.flush()
    return await get_tenant(session, runtime, tenant.id)


# --- credits ------------------------------------------------------------------------------------


def _request_hash(data: schemas.GrantCreditsInput) -> str:
    body = data.model_dump(mode="json", exclude={"idempotency_key"})
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


async def grant_credits(
    session: AsyncSession, runtime: Runtime, operator: str, data: schemas.GrantCreditsInput
) -> schemas.OperatorCreditGrant:
    """A grant (an admin_grant bucket) or a clawback (an adjustment), once per idempotency
    key: the same key and body answer the first ledger entry again with the balance now; the
    same key with another body or tenant is 409."""
    now = utcnow()
    if data.expires_at is not None and (data.amount < 0 or data.expires_at <= now):
        raise GrantCannotExpire(
            "`expiresAt` goes with a grant (a positive amount) only, and in the future."
        )
    await tenants.lock_tenant(session, data.id)
    await _tenant(session, data.id)
    request_hash = _request_hash(data)
    monthly = (await billing.plan_limits(session, data.id)).monthly_credits
    found = await repository.grant_by_key(session, data.idempotency_key)
    if found is not None:
        if found.request_hash != request_hash:
            raise IdempotencyKeyReused(
                "This idempotency key was used with another tenant or body; use a new key."
            )
        entry = await credit_operations.ledger_entry(session, data.id, found.ledger_entry_id)
        assert entry is not None, "a recorded grant has its ledger entry"
        balance = await credits.balance(session, data.id, monthly_grant=monthly)
        return schemas.OperatorCreditGrant(ledger_entry=entry, balance=balance)
    # Settles the tenant (its monthly grant in, expired buckets out) under its credit lock.
    await credits.balance(session, data.id, monthly_grant=monthly)
    description = f"Operator: {data.reason}"
    if data.amount > 0:
        entry = await credit_operations.grant_by_operator(
            session,
            data.id,
            amount=data.amount,
            expires_at=data.expires_at,
            reference=f"admin:{data.idempotency_key}",
            description=description,
            operator=operator,
        )
    else:
        clawed = await credit_operations.claw_back_by_operator(
            session, data.id, amount=-data.amount, description=description, operator=operator
        )
        if clawed is None:
            raise CreditsWouldGoNegative(
                f"The tenant has fewer than {-data.amount} credits available; a clawback "
                "cannot take the balance below zero."
            )
        entry = clawed
    try:
        async with session.begin_nested():
            await repository.add_grant(
                session,
                data.id,
                idempotency_key=data.idempotency_key,
                request_hash=request_hash,
                ledger_entry_id=entry.id,
                amount=data.amount,
                granted_by=operator,
            )
    except IntegrityError:
        # The same key used at the same moment for another tenant (whose lock is not ours):
        # this request's grant is rolled back with the refusal.
        raise IdempotencyKeyReused(
            "This idempotency key was used with another tenant or body; use a new key."
        ) from None
    events.emit(
        session,
        data.id,
        "credits.adjusted",
        resource_id=entry.id,
        payload={"amount": data.amount, "reason": data.reason},
    )
    balance = await credits.balance(session, data.id, monthly_grant=monthly)
    return schemas.OperatorCreditGrant(ledger_entry=entry, balance=balance)


# --- feature flags ------------------------------------------------------------------------------


def _flag_view(state: features.FlagState) -> schemas.FlagView:
    flag = state.flag
    return schemas.FlagView(
        key=flag.key,
        description=flag.description,
        stage=flag.stage,
        default_enabled=flag.default,
        rollout_percent=state.rollout_percent,
        plans=list(state.plans),
        opt_in_allowed=flag.opt_in_allowed,
        tenant_overrides=state.tenant_overrides,
        updated_at=state.updated_at,
    )


async def list_flags(session: AsyncSession, runtime: Runtime) -> schemas.FlagList:
    states = await features.flag_states(session, runtime.settings)
    return schemas.FlagList(data=[_flag_view(state) for state in states], total=len(states))


async def update_flag(
    session: AsyncSession, runtime: Runtime, operator: str, data: schemas.UpdateFlagInput
) -> schemas.FlagView:
    """Change the flag's settings (each field left out stays as it is) and its overrides for
    tenants; unknown key 404, an override for an unknown tenant 404, a key in `plans` that is
    no plan of billing's catalogue 400 (where billing keeps one: `_check_plans`)."""
    if data.key not in FLAGS:
        raise FlagNotFound(data.key)
    if data.plans:
        await _check_plans(session, data.plans)
    [current] = [
        s for s in await features.flag_states(session, runtime.settings) if s.flag.key == data.key
    ]
    given = data.model_fields_set - {"key", "tenant_overrides"}
    if given:
        flag = current.flag
        setting = Setting(
            stage=data.stage if data.stage is not None else flag.stage,
            default_enabled=(
                data.default_enabled if data.default_enabled is not None else flag.default
            ),
            rollout_percent=(
                data.rollout_percent if "rollout_percent" in given else current.rollout_percent
            ),
            plans=tuple(data.plans) if data.plans is not None else current.plans,
            opt_in_allowed=(
                data.opt_in_allowed if data.opt_in_allowed is not None else flag.opt_in_allowed
            ),
        )
        await features.save_setting(session, runtime, data.key, setting, by=operator)
        log.info("feature flag %s set by %s: %s", data.key, operator, setting)
    for key, enabled in (data.tenant_overrides or {}).items():
        tenant_id = uuid.UUID(key)
        await _tenant(session, tenant_id)
        await features.set_override(
            session, runtime, tenant_id, data.key, enabled=enabled, by=operator
        )
        events.emit(
            session,
            tenant_id,
            "feature.overridden",
            resource_id=None,
            payload={"key": data.key, "enabled": enabled},
        )
    # Every evaluation retired however little changed (an operator asking again sees it at once).
    features.retire_all_after_commit(session, runtime)
    [state] = [
        s for s in await features.flag_states(session, runtime.settings) if s.flag.key == data.key
    ]
    return _flag_view(state)


async def _check_plans(session: AsyncSession, plans: list[str]) -> None:
    """Each of a flag's `plans` is a plan of billing's catalogue (the free plan's key too), when
    billing keeps one (configured); else they are stored unchecked."""
    known = await billing.plan_keys(session)
    if known is None:
        return
    unknown = [(n, key) for n, key in enumerate(plans) if key not in known]
    if unknown:
        listed = ", ".join(sorted(known))
        raise UnknownPlan(
            f"`plans` names no plan of the catalogue: {', '.join(k for _, k in unknown)} "
            f"(plans: {listed}).",
            errors=[
                FieldError(f"plans.{n}", f"is no plan of the catalogue ({listed})")
                for n, _ in unknown
            ],
        )


# --- inbound provider events --------------------------------------------------------------------


def _inbound(row: Row[Any]) -> schemas.InboundEvent:
    return schemas.InboundEvent.model_validate(dict(row._mapping))


async def list_inbound(
    session: AsyncSession, data: schemas.ListInboundInput
) -> schemas.InboundPage:
    rows, total = await repository.inbound_page(
        session,
        sources=[data.source] if data.source else ["identity", "payments"],
        status=data.status,
        type_=data.type,
        tenant_id=data.tenant_id,
        **window_of(data),
    )
    return schemas.InboundPage(
        data=[_inbound(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def replay_inbound(
    session: AsyncSession, operator: str, event_id: uuid.UUID
) -> schemas.InboundEvent:
    """Process the stored (verified when it arrived) event again through its source's durable
    workflow, under a workflow id of its own (the first one's never runs twice); its handlers
    are idempotent. One still `received` is being processed: 409."""
    found = await repository.inbound_event(session, event_id)
    if found is None:
        raise InboundEventNotFound(event_id)
    if found.status == "received":
        raise InboundEventBusy("The event is still being processed; replay it once it settles.")
    source = found.source
    reset = team.reset_event if source == "identity" else billing.reset_event
    reset_done = await reset(session, event_id)
    assert reset_done, "found just before"
    await repository.add_replay(session, source, event_id, operator, utcnow())
    attempt = uuid.uuid4().hex[:12]
    if source == "identity":
        start_processing(
            session,
            event_id,
            team_durable.process_event,
            lambda stored: f"{team_durable.event_workflow_id(stored)}:replay:{attempt}",
        )
    else:
        start_processing(
            session,
            event_id,
            billing_durable.process_event,
            lambda stored: f"{billing_durable.event_workflow_id(stored)}:replay:{attempt}",
        )
    if found.tenant_id is not None:
        events.emit(
            session,
            found.tenant_id,
            "inbound_event.replayed",
            resource_id=event_id,
            payload={"source": source, "type": found.type},
        )
    replayed = await repository.inbound_event(session, event_id)
    assert replayed is not None, "found just before"
    return _inbound(replayed)
