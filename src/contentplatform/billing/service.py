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

import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

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
from contentplatform.billing.models import Invoice, Plan, Subscription
from contentplatform.billing.provider import (
    SOURCE,
    CatalogPrice,
    Stripe,
    instant,
    ref_id,
    text,
)
from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.events import service as events
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError
from contentplatform.kit.schemas import offset_of
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

FREE_KEY, FREE_NAME = "free", "Free"
PROCESSED, IGNORED = "processed", "ignored"
# On these the subscribed plan applies; on any other status the free plan does.
PAID_STATUSES = frozenset({"trialing", "active", "past_due"})
STATUSES = frozenset({"trialing", "active", "past_due", "unpaid", "canceled", "incomplete"})
PACK_VALIDITY = timedelta(days=365)
MAX_USAGE_WINDOW = timedelta(days=366)
MAX_HOURLY_WINDOW = timedelta(days=7)


def _dict(value: object) -> dict[str, Any]:
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
    """The subscribed plan when it applies (see the module's docstring); None: the free plan."""
    if not _settings().billing_configured:
        return None  # billing not configured: every tenant is on the free plan
    row = await repository.subscription_of(session, tenant_id)
    if row is None or row.plan_id is None or row.status not in PAID_STATUSES:
        return None
    return await repository.plan_by_id(session, row.plan_id)


async def plan_limits(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.PlanLimits:
    """What the tenant's plan allows (None: unlimited), for quota and the guarded writes."""
    plan = await _current_plan(session, tenant_id)
    if plan is None:
        settings = _settings()
        return schemas.PlanLimits(
            plan_key=FREE_KEY,
            plan_name=FREE_NAME,
            monthly_credits=settings.monthly_credit_grant,
            **settings.free_plan_limits,
        )
    limits = schemas.Limits.model_validate(plan.limits)
    return schemas.PlanLimits(
        plan_key=plan.key,
        plan_name=plan.name,
        monthly_credits=plan.monthly_credits,
        **limits.model_dump(),
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
    found = await credits.usage(
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


# --- payment events -----------------------------------------------------------------------------


async def receive_event(
    session: AsyncSession, event_id: str, type: str, payload: dict[str, Any]
) -> uuid.UUID | None:
    """Store a verified event once; its row id, or None when it was stored before."""
    return await repository.record_event(session, SOURCE, event_id, type, payload)


def changes_catalog(type: str) -> bool:
    """Whether the event is about the catalogue (a product or a price)."""
    return type.startswith(("product.", "price."))


async def needs_catalog(session: AsyncSession, event_id: uuid.UUID) -> str | None:
    """Whether Stripe's catalogue is read before the event is applied: "required" when a
    product or price changed; "wanted" when a subscription names a price not mirrored yet (its
    price.created is late, or a price was made and sold within the hour), which would otherwise
    leave the subscription on no plan; None when not."""
    event = await repository.event_for_update(session, event_id)
    if event is None or event.status != "received":
        return None
    if changes_catalog(event.type):
        return "required"
    if not event.type.startswith("customer.subscription."):
        return None
    data = _dict(event.payload.get("data"))
    item = _first_item(_dict(data.get("object")))
    price_id = ref_id(item.get("price")) if item else None
    unknown = price_id is not None and await repository.plan_by_price(session, price_id) is None
    return "wanted" if unknown else None


async def process_event(
    session: AsyncSession, event_id: uuid.UUID, catalog: list[CatalogPrice] | None = None
) -> str:
    """Apply a stored event, once: its new status, or the status it had when handled before.
    `catalog` is Stripe's catalogue as just read, when the event needs it (needs_catalog)."""
    event = await repository.event_for_update(session, event_id)
    if event is None:
        return "missing"
    if event.status != "received":
        return event.status
    data = event.payload.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    created = instant(event.payload.get("created")) or event.created_at
    handler = HANDLERS.get(event.type)
    if catalog is not None:
        await mirror_catalog(session, catalog)
    if changes_catalog(event.type) and catalog is not None:
        event.status = PROCESSED
    elif handler is None or not isinstance(obj, dict):
        event.status = IGNORED
    else:
        reason = await handler(session, obj, created)
        event.status, event.error = (PROCESSED, None) if reason is None else (IGNORED, reason)
    event.processed_at = utcnow()
    return event.status


async def fail_event(session: AsyncSession, event_id: uuid.UUID, reason: str) -> None:
    event = await repository.event_for_update(session, event_id)
    if event is not None and event.status == "received":
        event.status, event.error, event.processed_at = "failed", reason[:2000], utcnow()


async def unprocessed_events(session: AsyncSession, before: datetime) -> list[uuid.UUID]:
    return [event.id for event in await repository.unprocessed_events(session, before)]


# Each handler applies one type of event's object; it returns None when applied, or why it was
# ignored (stored on the event).


async def _tenant_of(session: AsyncSession, obj: dict[str, Any]) -> uuid.UUID | None:
    """The tenant an object is about: the stored customer's, else the one our metadata names."""
    customer = ref_id(obj.get("customer"))
    if customer is not None:
        found = await repository.tenant_of_customer(session, customer)
        if found is not None:
            return found
    metadata = _dict(obj.get("metadata"))
    for named in (obj.get("client_reference_id"), metadata.get("tenant_id")):
        if isinstance(named, str) and named:
            try:
                tenant_id = uuid.UUID(named)
            except ValueError:
                continue
            if await tenants.active_tenant(session, str(tenant_id)) == tenant_id:
                return tenant_id
    return None


async def _checkout_completed(
    session: AsyncSession, obj: dict[str, Any], created: datetime
) -> str | None:
    tenant_id = await _tenant_of(session, obj)
    session_id = text(obj.get("id"))
    if tenant_id is None or session_id is None:
        return "names no tenant of ours"
    row = await repository.subscription_for_update(session, tenant_id)
    row.customer_id = row.customer_id or ref_id(obj.get("customer"))
    if obj.get("mode") == "subscription":
        row.subscription_id = ref_id(obj.get("subscription")) or row.subscription_id
        return None
    if obj.get("mode") != "payment":
        return f"a checkout of mode {obj.get('mode')!r}"
    if obj.get("payment_status") != "paid":
        return "not paid yet (checkout.session.async_payment_succeeded grants it)"
    metadata = _dict(obj.get("metadata"))
    plan = None
    with contextlib.suppress(ValueError):
        plan = await repository.plan_by_id(session, uuid.UUID(str(metadata.get("plan_id"))))
    quantity = str(metadata.get("quantity", "1"))
    count = int(quantity) if quantity.isdigit() and len(quantity) < 3 else 0
    if plan is None or plan.kind != "credit_pack" or not 1 <= count <= 10:
        return "names no credit pack of ours"
    amount = plan.pack_credits * count
    claimed = await repository.claim_grant(
        session,
        tenant_id,
        session_id,
        source="top_up",
        amount=amount,
        quantity=count,
        payment_intent_id=ref_id(obj.get("payment_intent")),
    )
    if claimed and amount > 0:
        await credits.grant(
            session,
            tenant_id,
            source="top_up",
            amount=amount,
            expires_at=utcnow() + PACK_VALIDITY,
            reference=session_id,
            description=f"{count} x {plan.name}"[:255],
        )
    return None


async def _subscription_changed(
    session: AsyncSession, obj: dict[str, Any], created: datetime, *, deleted: bool = False
) -> str | None:
    tenant_id = await _tenant_of(session, obj)
    if tenant_id is None:
        return "names no tenant of ours"
    row = await repository.subscription_for_update(session, tenant_id)
    subscription_id = text(obj.get("id"))
    status = obj.get("status")
    status = "canceled" if deleted else status if status in STATUSES else "incomplete"
    if row.provider_updated_at is not None and created < row.provider_updated_at:
        return "older than the subscription's state already applied"
    # Stripe's `created` is in whole seconds, and a subscription often changes twice in one
    # (created incomplete, then active): of two events of the same second, the one earlier in
    # the subscription's life is the older, whichever arrives last.
    if (
        created == row.provider_updated_at
        and subscription_id == row.subscription_id
        and _lifecycle(status) < _lifecycle(row.status)
    ):
        return "as old as the subscription's state applied, and earlier in its life"
    # Another subscription of the tenant is the live one: this one's end is history.
    replaced = row.subscription_id not in (None, subscription_id) and row.status in PAID_STATUSES
    if replaced and (deleted or obj.get("status") not in PAID_STATUSES):
        return "about a subscription that is not the tenant's current one"
    item = _first_item(obj)
    price_id = ref_id(item.get("price")) if item else None
    plan = await repository.plan_by_price(session, price_id) if price_id else None
    before = (row.plan_id, row.status)
    row.provider_updated_at = created
    row.subscription_id = subscription_id
    row.customer_id = ref_id(obj.get("customer")) or row.customer_id
    row.status = status
    row.plan_id = plan.id if plan is not None else row.plan_id
    row.current_period_start = instant(
        obj.get("current_period_start") or (item or {}).get("current_period_start")
    )
    row.current_period_end = instant(
        obj.get("current_period_end") or (item or {}).get("current_period_end")
    )
    row.cancel_at_period_end = bool(obj.get("cancel_at_period_end"))
    row.trial_end = instant(obj.get("trial_end"))
    _payment_method(row, obj.get("default_payment_method"))
    await _apply_grant_policy(session, tenant_id, row, plan)
    if (row.plan_id, row.status) != before:
        await _announce_subscription(session, tenant_id, row, plan, *before)
    return None


async def _announce_subscription(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    row: Subscription,
    plan: Plan | None,
    previous_plan_id: uuid.UUID | None,
    previous_status: str,
) -> None:
    """`subscription.updated`: the plan or the status changed (plans by key; none: no plan)."""

    async def key_of(plan_id: uuid.UUID | None) -> str | None:
        if plan_id is None:
            return None
        if plan is not None and plan.id == plan_id:
            return plan.key
        found = await repository.plan_by_id(session, plan_id)
        return found.key if found is not None else None

    events.emit(
        session,
        tenant_id,
        "subscription.updated",
        resource_id=tenant_id,
        payload={
            "plan": await key_of(row.plan_id),
            "status": row.status,
            "previous_plan": await key_of(previous_plan_id),
            "previous_status": previous_status,
        },
    )


# The order a subscription's statuses come in (a tie-break for events of the same second).
SUBSCRIPTION_LIFE = ("incomplete", "trialing", "active", "past_due", "unpaid", "canceled")


def _lifecycle(status: str) -> int:
    return SUBSCRIPTION_LIFE.index(status) if status in SUBSCRIPTION_LIFE else -1


def _first_item(obj: dict[str, Any]) -> dict[str, Any] | None:
    items = obj.get("items")
    data = items.get("data") if isinstance(items, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    return first if isinstance(first, dict) else None


def _payment_method(row: Subscription, method: object) -> None:
    card = method.get("card") if isinstance(method, dict) else None
    if isinstance(card, dict):
        row.payment_method_brand = text(card.get("brand"), 40)
        row.payment_method_last4 = text(card.get("last4"), 4)


async def _apply_grant_policy(
    session: AsyncSession, tenant_id: uuid.UUID, row: Subscription, plan: Plan | None
) -> None:
    """Free: the calendar grant. Paid: grants from paid invoices. past_due: grants paused."""
    if plan is None or row.status not in PAID_STATUSES:
        await credits.set_grant_policy(
            session,
            tenant_id,
            monthly_credits=None,  # the configured free grant
            automatic=True,
            paused=False,
            rollover_cap=0,
        )
        return
    await credits.set_grant_policy(
        session,
        tenant_id,
        monthly_credits=plan.monthly_credits,
        automatic=False,
        paused=row.status == "past_due",
        rollover_cap=plan.rollover_cap,
    )


async def _subscription_deleted(
    session: AsyncSession, obj: dict[str, Any], created: datetime
) -> str | None:
    return await _subscription_changed(session, obj, created, deleted=True)


async def _invoice_event(
    session: AsyncSession, obj: dict[str, Any], created: datetime
) -> str | None:
    tenant_id = await _tenant_of(session, obj)
    invoice_id = text(obj.get("id"))
    if tenant_id is None or invoice_id is None:
        return "names no tenant of ours"
    invoice = await repository.invoice_for_update(
        session, tenant_id, invoice_id, text(obj.get("currency"), 3) or "usd"
    )
    if _newer_invoice(invoice, obj.get("status"), created):
        _copy_invoice(invoice, obj, created)
    if obj.get("status") == "paid":
        await _grant_period(session, tenant_id, invoice_id, obj)
    return None


# An invoice's statuses in the order they come (draft, open, then one of the last three).
INVOICE_LIFE = {"draft": 0, "open": 1, "paid": 2, "uncollectible": 2, "void": 2}


def _newer_invoice(invoice: Invoice, status: object, created: datetime) -> bool:
    """Whether the event's invoice is newer than the one kept: a later `created`, or the same
    second (finalized and paid often share one) and not earlier in the invoice's life."""
    if invoice.provider_updated_at is None or created > invoice.provider_updated_at:
        return True
    if created < invoice.provider_updated_at:
        return False
    return INVOICE_LIFE.get(str(status), -1) >= INVOICE_LIFE.get(invoice.status, -1)


def _copy_invoice(invoice: Invoice, obj: dict[str, Any], created: datetime) -> None:
    status = obj.get("status")
    line = _first_line(obj)
    period = _dict(line.get("period")) if line else {}
    invoice.provider_updated_at = created
    invoice.status = (
        status if status in {"draft", "open", "paid", "uncollectible", "void"} else (invoice.status)
    )
    invoice.number = text(obj.get("number"), 100)
    invoice.amount_due = _amount(obj.get("amount_due"))
    invoice.amount_paid = _amount(obj.get("amount_paid"))
    invoice.currency = text(obj.get("currency"), 3) or invoice.currency
    invoice.period_start = instant(period.get("start")) or instant(obj.get("period_start"))
    invoice.period_end = instant(period.get("end")) or instant(obj.get("period_end"))
    invoice.hosted_invoice_url = _https(obj.get("hosted_invoice_url"))
    invoice.invoice_pdf_url = _https(obj.get("invoice_pdf"))
    invoice.subscription_id = _invoice_subscription(obj)
    invoice.provider_created_at = instant(obj.get("created"))


def _amount(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _https(value: object) -> str | None:
    found = text(value, 2048)
    return found if found is not None and found.startswith("https://") else None


def _first_line(obj: dict[str, Any]) -> dict[str, Any] | None:
    lines = obj.get("lines")
    data = lines.get("data") if isinstance(lines, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    return first if isinstance(first, dict) else None


def _invoice_subscription(obj: dict[str, Any]) -> str | None:
    """The invoice's subscription (top level in older API versions, under `parent` now)."""
    found = ref_id(obj.get("subscription"))
    parent = obj.get("parent")
    details = parent.get("subscription_details") if isinstance(parent, dict) else None
    if found is None and isinstance(details, dict):
        found = ref_id(details.get("subscription"))
    return found


def _line_price(line: dict[str, Any] | None) -> str | None:
    if line is None:
        return None
    found = ref_id(line.get("price"))
    pricing = line.get("pricing")
    details = pricing.get("price_details") if isinstance(pricing, dict) else None
    if found is None and isinstance(details, dict):
        found = ref_id(details.get("price"))
    return found


async def _grant_period(
    session: AsyncSession, tenant_id: uuid.UUID, invoice_id: str, obj: dict[str, Any]
) -> None:
    """A paid subscription invoice grants its period's credits, once per invoice."""
    if _invoice_subscription(obj) is None:
        return
    line = _first_line(obj)
    price_id = _line_price(line)
    plan = await repository.plan_by_price(session, price_id) if price_id else None
    if plan is None:
        row = await repository.subscription_of(session, tenant_id)
        plan = await repository.plan_by_id(session, row.plan_id) if row and row.plan_id else None
    period = _dict(line.get("period")) if line else {}
    period_end = instant(period.get("end")) or instant(obj.get("period_end"))
    if plan is None or plan.monthly_credits <= 0 or period_end is None:
        return
    if await repository.claim_grant(
        session, tenant_id, invoice_id, source="monthly_grant", amount=plan.monthly_credits
    ):
        await credits.grant(
            session,
            tenant_id,
            source="monthly_grant",
            amount=plan.monthly_credits,
            expires_at=period_end,
            reference=invoice_id,
            description=f"{plan.name}: the period's credits"[:255],
        )


async def _charge_refunded(
    session: AsyncSession, obj: dict[str, Any], created: datetime
) -> str | None:
    if not obj.get("refunded"):
        return "a partial refund: the pack's credits stay (an admin adjusts them by hand)"
    grant = await repository.grant_of_payment(
        session, text(obj.get("id")), ref_id(obj.get("payment_intent"))
    )
    if grant is None:
        return "refunds no credit pack of ours"
    if grant.revoked:
        return None
    grant.revoked = True
    await credits.revoke_grant(
        session,
        grant.tenant_id,
        grant.reference,
        amount=None,
        description="The credit pack was refunded: its unspent credits are removed.",
    )
    return None


Handler = Any
HANDLERS: dict[str, Handler] = {
    "checkout.session.completed": _checkout_completed,
    "checkout.session.async_payment_succeeded": _checkout_completed,
    "customer.subscription.created": _subscription_changed,
    "customer.subscription.updated": _subscription_changed,
    "customer.subscription.deleted": _subscription_deleted,
    "invoice.finalized": _invoice_event,
    "invoice.paid": _invoice_event,
    "invoice.payment_failed": _invoice_event,
    "charge.refunded": _charge_refunded,
}
