"""The rules of billing: which plan a tenant is on and what it allows, the catalogue mirrored
from Stripe, checkout and portal sessions, and the payment provider's events applied. Never
commits.

Which plan applies (its limits and its grants):
- no subscription, or `incomplete`, `unpaid` or `canceled`: the built-in free plan (limits from
  CONTENTPLATFORM_FREE_PLAN_LIMITS, unlimited when unset; the monthly calendar grant of
  CONTENTPLATFORM_CREDITS_MONTHLY_GRANT);
- `trialing` or `active`: the subscribed plan; its credits come from paid invoices, once each;
- `past_due`: the subscribed plan still, grants paused, the balance still usable.

Every event is applied once (stored by its id); grants are recorded per reference (a checkout
session, an invoice) so two events naming the same payment grant once; a subscription event
older (`created`) than the last one applied changes nothing. One that changes the plan or the
status writes `subscription.updated` to the outbox.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import ColumnElement, Select, func
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.billing import repository, schemas
from contentplatform.billing.errors import (
    AlreadySubscribed,
    BillingUnavailable,
    NoCustomer,
    NotForSale,
    PlanLimitReached,
    PlanNotFound,
    RedirectNotAllowed,
)
from contentplatform.billing.models import Plan, Subscription
from contentplatform.billing.provider import CatalogPrice, Stripe, instant
from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.credits import usage as credit_usage
from contentplatform.features import service as features
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError
from contentplatform.kit.schemas import offset_of
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

FREE_KEY, FREE_NAME = "free", "Free"
# On these the subscribed plan applies; on any other status the free plan does.
PAID_STATUSES = frozenset({"trialing", "active", "past_due"})
STATUSES = frozenset({"trialing", "active", "past_due", "unpaid", "canceled", "incomplete"})
PACK_VALIDITY = timedelta(days=365)
MAX_USAGE_WINDOW = timedelta(days=366)
MAX_HOURLY_WINDOW = timedelta(days=7)


def as_dict(value: object) -> dict[str, Any]:
    """A nested Stripe object, or an empty one where it is missing or not an object."""
    return value if isinstance(value, dict) else {}


def _settings() -> Settings:
    return runtime.current().settings


# --- plans and their limits ---------------------------------------------------------------------


def free_plan(settings: Settings, is_current: bool) -> schemas.Plan:
    return schemas.Plan(
        id=None,
        key=FREE_KEY,
        name=FREE_NAME,
        kind="subscription",
        interval=None,
        price_amount=0,
        currency="usd",
        monthly_credits=settings.monthly_credit_grant,
        pack_credits=0,
        rollover_cap=0,
        limits=schemas.Limits(**settings.free_plan_limits),
        features=[],
        is_current=is_current,
    )


def _plan_view(plan: Plan, is_current: bool) -> schemas.Plan:
    return schemas.Plan(
        id=plan.id,
        key=plan.key,
        name=plan.name,
        kind=plan.kind,
        interval=plan.interval,
        price_amount=plan.price_amount,
        currency=plan.currency,
        monthly_credits=plan.monthly_credits,
        pack_credits=plan.pack_credits,
        rollover_cap=plan.rollover_cap,
        limits=schemas.Limits.model_validate(plan.limits),
        features=list(plan.features),
        is_current=is_current,
    )


async def _current_plan(session: AsyncSession, tenant_id: uuid.UUID) -> Plan | None:
    """The subscribed plan when it applies (see the module's docstring); None: the free plan.
    The operator's plan override (admin.updateTenant) wins until its `until`."""
    override = (await tenants.overrides_of(session, tenant_id)).plan_id
    if override is not None and (plan := await repository.plan_by_id(session, override)):
        return plan
    if not _settings().billing_configured:
        return None  # billing not configured: every tenant is on the free plan
    row = await repository.subscription_of(session, tenant_id)
    if row is None or row.plan_id is None or row.status not in PAID_STATUSES:
        return None
    return await repository.plan_by_id(session, row.plan_id)


@features.plan_source
async def plan_key(session: AsyncSession, tenant_id: uuid.UUID) -> str:
    """The key of the plan that applies to the tenant (`free` when none does): what a feature
    flag's `plans` are matched with (registered with features, which sits below billing)."""
    plan = await _current_plan(session, tenant_id)
    return plan.key if plan is not None else FREE_KEY


async def plan_keys(session: AsyncSession) -> frozenset[str] | None:
    """Every key a tenant's plan may have: the free plan's and each subscription plan's of the
    catalogue (a retired one's too: a subscription on it still names it). None when billing is
    not configured: the catalogue is not kept in step with the provider then, and a key cannot
    be checked against it."""
    if not _settings().billing_configured:
        return None
    return frozenset({FREE_KEY, *await repository.plan_keys(session, "subscription")})


def plan_changed(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """The plan that applies to the tenant may have changed (its subscription, an operator's
    override): once this commits, its feature flags are evaluated again (a flag's `plans`)."""
    features.retire_after_commit(session, runtime.current(), tenant_id)


async def plan_exists(session: AsyncSession, plan_id: uuid.UUID) -> bool:
    """Whether the catalogue has the plan (an operator's override names one: admin.updateTenant)."""
    return await repository.plan_by_id(session, plan_id) is not None


async def plan_limits(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.PlanLimits:
    """What the tenant's plan allows (None: unlimited), for quota and the guarded writes; each
    limit the operator overrides for the tenant (admin.updateTenant) wins over the plan's."""
    plan = await _current_plan(session, tenant_id)
    overridden = (await tenants.overrides_of(session, tenant_id)).limits or {}
    if plan is None:
        settings = _settings()
        return schemas.PlanLimits(
            plan_key=FREE_KEY,
            plan_name=FREE_NAME,
            monthly_credits=settings.monthly_credit_grant,
            **(dict(settings.free_plan_limits) | overridden),
        )
    limits = schemas.Limits.model_validate(plan.limits)
    return schemas.PlanLimits(
        plan_key=plan.key,
        plan_name=plan.name,
        monthly_credits=plan.monthly_credits,
        **(limits.model_dump() | overridden),
    )


async def check_limit(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    key: str,
    used: int | Callable[[], Awaitable[int]],
    adding: int = 1,
) -> None:
    """Refuse (PlanLimitReached, 403) a write that takes `key` past the plan's limit.

    `used` may be a function counting it: then it is counted only when the plan has a limit
    (an unlimited plan, the default, costs the write no count)."""
    limit = getattr(await plan_limits(session, tenant_id), key)
    if limit is None:
        return
    count = used if isinstance(used, int) else await used()
    if count + adding > limit:
        raise PlanLimitReached(key, limit)


# What each domain stores for a tenant, in bytes (documents, media): the plan's `storage_bytes`
# limit counts them all, though no domain here knows the others.
StorageCounter = Callable[[AsyncSession, uuid.UUID], Awaitable[int]]
_storage_counters: dict[str, StorageCounter] = {}


def counts_storage(name: str) -> Callable[[StorageCounter], StorageCounter]:
    """Register a domain's count of a tenant's stored bytes under `name`."""

    def register(counter: StorageCounter) -> StorageCounter:
        _storage_counters[name] = counter
        return counter

    return register


async def stored_bytes(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """Every byte the tenant keeps with us, as the `storage_bytes` limit counts it."""
    return sum([await count(session, tenant_id) for count in _storage_counters.values()])


async def check_storage(session: AsyncSession, tenant_id: uuid.UUID, adding: int) -> None:
    """Refuse (PlanLimitReached, 403) storing `adding` more bytes past the plan's limit; what
    is stored is counted only when the plan has one."""
    if adding > 0:
        await check_limit(
            session, tenant_id, "storage_bytes", lambda: stored_bytes(session, tenant_id), adding
        )


async def list_plans(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.PlanListing:
    current = await _current_plan(session, tenant_id)
    settings = _settings()
    plans = [free_plan(settings, current is None)]
    # Nothing can be bought without billing configured: the catalogue a previous configuration
    # mirrored stays stored, unlisted.
    sold = await repository.active_plans(session) if settings.billing_configured else []
    for plan in sold:
        is_current = current is not None and plan.id == current.id
        plans.append(_plan_view(plan, is_current))
    return schemas.PlanListing(data=plans, total=len(plans))


async def get_subscription(
    session: AsyncSession, tenant_id: uuid.UUID, *, with_payment_method: bool
) -> schemas.SubscriptionView:
    row = await repository.subscription_of(session, tenant_id)
    plan = await repository.plan_by_id(session, row.plan_id) if row and row.plan_id else None
    status = row.status if row is not None else "none"
    paid = plan is not None and status in PAID_STATUSES
    if row is None or not paid:
        next_grant_at = _next_month(utcnow()) if not paid else None
    else:
        next_grant_at = row.current_period_end if status != "past_due" else None
    method = None
    if with_payment_method and row is not None and row.payment_method_last4:
        method = schemas.PaymentMethod(
            brand=row.payment_method_brand, last4=row.payment_method_last4
        )
    return schemas.SubscriptionView(
        plan_id=plan.id if paid and plan is not None else None,
        plan_key=plan.key if paid and plan is not None else FREE_KEY,
        status=status,
        provider="stripe" if row is not None and row.subscription_id else "none",
        current_period_start=row.current_period_start if row else None,
        current_period_end=row.current_period_end if row else None,
        cancel_at_period_end=row.cancel_at_period_end if row else False,
        trial_end=row.trial_end if row else None,
        next_grant_at=next_grant_at,
        payment_method=method,
    )


def _next_month(moment: datetime) -> datetime:
    first = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (first + timedelta(days=32)).replace(day=1)


# --- the operators' views (admin.*): SQL over every tenant, correlated with its tenant id -------


def plan_id_column(
    tenant_id: ColumnElement[uuid.UUID], *, now: datetime, billing_configured: bool
) -> ColumnElement[Any]:
    """`_current_plan` as SQL, for the tenant whose id is the enclosing query's `tenant_id`:
    the operator's override until its end, else the subscribed plan on a paid status (when
    billing is configured), else null (the free plan)."""
    return func.coalesce(
        tenants.plan_override_column(tenant_id, now),
        repository.subscribed_plan_column(tenant_id, PAID_STATUSES, billing_configured),
    )


def plan_key_column(
    tenant_id: ColumnElement[uuid.UUID], *, now: datetime, billing_configured: bool
) -> ColumnElement[Any]:
    """`plan_key` as SQL: the key of `plan_id_column`'s plan, `free` when none applies."""
    plan = plan_id_column(tenant_id, now=now, billing_configured=billing_configured)
    return func.coalesce(repository.plan_key_column(plan), FREE_KEY)


def subscription_status_column(tenant_id: ColumnElement[uuid.UUID]) -> ColumnElement[Any]:
    """The status of the subscription of the tenant whose id is the enclosing query's
    `tenant_id`; `none` without one."""
    return func.coalesce(repository.subscription_status_column(tenant_id), "none")


def inbound_events() -> Select[Any]:
    """Every stored payment event as the operators' list shows it (admin.listWebhookEvents):
    `id`, `provider_event_id`, `type`, `tenant_id` (the tenant whose subscription has the
    event's customer), `status`, `error`, `received_at`, `processed_at`; a statement to filter
    and run."""
    return repository.inbound_listing()


async def reset_event(session: AsyncSession, event_id: uuid.UUID) -> bool:
    """Set a stored event back to `received`, to be processed again (admin.replayWebhookEvent
    starts its workflow); False when there is no such event."""
    return await repository.events.reset(session, event_id)


# --- invoices and usage -------------------------------------------------------------------------


async def list_invoices(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListInvoicesInput
) -> schemas.InvoicePage:
    rows, total = await repository.invoices_page(
        session, tenant_id, data.status, data.limit, offset_of(data.page, data.limit)
    )
    return schemas.InvoicePage(
        data=[schemas.Invoice.model_validate(row) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


async def usage(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UsageInput
) -> schemas.UsageListing:
    end = data.end_date or utcnow()
    start = data.start_date
    if start.tzinfo is None or end.tzinfo is None:
        raise _bad("startDate", "must carry a time zone (e.g. 2026-01-01T00:00:00Z)")
    if end <= start:
        raise _bad("endDate", "must be after startDate")
    if end - start > MAX_USAGE_WINDOW:
        raise _bad("endDate", "the window is at most 366 days")
    if data.bucket_width == "1h" and end - start > MAX_HOURLY_WINDOW:
        raise _bad("bucketWidth", "1h buckets are for windows of 7 days or less")
    found = await credit_usage.usage(
        session,
        tenant_id,
        start=start,
        end=end,
        bucket_width=data.bucket_width,
        group_by=data.group_by,
        kind=data.kind,
    )
    return schemas.UsageListing.model_validate(found, from_attributes=True)


def _bad(field: str, reason: str) -> BadRequest:
    return BadRequest(f"{field} {reason}.", errors=[FieldError(field, reason)])


# --- checkout and portal ------------------------------------------------------------------------


def check_return_url(
    settings: Settings, field: str, url: str, tenant_origins: Sequence[str] = ()
) -> None:
    """An https URL on an allowed origin: the operator's (billing's, else the team's) or the
    tenant's own (settings: security.allowedRedirectOrigins); none set at all: any https URL."""
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    listed = [*(settings.billing_redirect_origins or settings.team_redirect_origins)]
    allowed = {o.rstrip("/").lower() for o in [*listed, *tenant_origins]}
    if parts.scheme != "https" or not parts.hostname or (allowed and origin not in allowed):
        raise RedirectNotAllowed(
            f"{field} must be an https URL on an allowed origin.",
            errors=[FieldError(field, "must be an https URL on an allowed origin")],
        )


def _require_provider(settings: Settings) -> None:
    if not settings.billing_configured:
        raise BillingUnavailable(
            "Billing is not configured here (CONTENTPLATFORM_STRIPE_SECRET_KEY): every "
            "organization is on the free plan and nothing can be bought.",
            extensions={"retryable": False},
        )


async def _customer(
    session: AsyncSession, provider: Stripe, tenant_id: uuid.UUID
) -> tuple[Subscription, str]:
    """The tenant's subscription row and its Stripe customer, made at Stripe on first need."""
    row = await repository.subscription_for_update(session, tenant_id)
    if row.customer_id is None:
        name = await tenants.name_of(session, tenant_id)
        row.customer_id = await provider.create_customer(str(tenant_id), name)
    return row, row.customer_id


async def create_checkout(
    session: AsyncSession,
    provider: Stripe,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.CheckoutInput,
    *,
    tenant_origins: Sequence[str] = (),
) -> schemas.CheckoutSession:
    check_return_url(settings, "successUrl", data.success_url, tenant_origins)
    check_return_url(settings, "cancelUrl", data.cancel_url, tenant_origins)
    plan = await repository.plan_by_id(session, data.plan_id)
    if plan is None or not plan.active:
        raise PlanNotFound(f"There is no plan or credit pack {data.plan_id} for sale.")
    _require_provider(settings)
    if plan.price_amount < 0:
        raise NotForSale("This plan cannot be bought.")
    if plan.kind == "subscription" and data.quantity != 1:
        raise _bad("quantity", "a plan is bought one at a time")
    row = await repository.subscription_of(session, tenant_id)
    if plan.kind == "subscription" and row is not None and row.status in PAID_STATUSES:
        raise AlreadySubscribed(
            "The organization has a subscription already; change plans in the customer portal."
        )
    row, customer_id = await _customer(session, provider, tenant_id)
    reference = str(tenant_id)
    metadata = {"tenant_id": reference, "plan_id": str(plan.id), "quantity": str(data.quantity)}
    params: dict[str, Any] = {
        "mode": "subscription" if plan.kind == "subscription" else "payment",
        "customer": customer_id,
        "client_reference_id": reference,
        "metadata": metadata,
        "line_items": [{"price": plan.provider_price_id, "quantity": data.quantity}],
        "success_url": data.success_url,
        "cancel_url": data.cancel_url,
    }
    if plan.kind == "subscription":
        params["subscription_data"] = {"metadata": {"tenant_id": reference}}
    else:
        params["payment_intent_data"] = {"metadata": metadata}
    made = await provider.create_checkout(params)
    return schemas.CheckoutSession(
        id=str(made.get("id")), url=str(made.get("url")), expires_at=instant(made.get("expires_at"))
    )


async def create_portal(
    session: AsyncSession,
    provider: Stripe,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.PortalInput,
    *,
    tenant_origins: Sequence[str] = (),
) -> schemas.PortalSession:
    check_return_url(settings, "returnUrl", data.return_url, tenant_origins)
    row = await repository.subscription_of(session, tenant_id)
    if row is None or row.customer_id is None:
        raise NoCustomer(
            "The organization has no customer at the payment provider yet: buy a plan or a "
            "credit pack first."
        )
    _require_provider(settings)
    params: dict[str, Any] = {"customer": row.customer_id, "return_url": data.return_url}
    if data.flow is not None:
        flow: dict[str, Any] = {"type": data.flow}
        if data.flow != "payment_method_update":
            if row.subscription_id is None:
                raise NoCustomer("The organization has no subscription to change or cancel.")
            key = "subscription_update" if data.flow == "subscription_update" else data.flow
            flow[key] = {"subscription": row.subscription_id}
        params["flow_data"] = flow
    made = await provider.create_portal(params)
    # The URL is a single-use bearer credential: it is returned, never logged.
    return schemas.PortalSession(
        url=str(made.get("url")), expires_at=instant(made.get("expires_at"))
    )


# --- the catalogue ------------------------------------------------------------------------------


async def mirror_catalog(session: AsyncSession, prices: list[CatalogPrice]) -> int:
    """Bring the plans in line with Stripe's prices of ours; the others become inactive."""
    for price in prices:
        await repository.upsert_plan(
            session, price.price_id, {"provider_product_id": price.product_id, **price.values}
        )
    await repository.deactivate_plans_except(session, [p.price_id for p in prices])
    return len(prices)
