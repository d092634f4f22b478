"""The payment provider's events applied: each stored once by its id, then applied by type
(a checkout completed, a subscription changed or ended, an invoice, a refund). Grants are
recorded per reference (a checkout session, an invoice), so two events naming the same
payment grant once; a subscription event older (`created`) than the last one applied changes
nothing; one that changes the plan or the status writes `subscription.updated`. Never commits.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.billing import repository, service
from contentplatform.billing.models import Invoice, Plan, Subscription
from contentplatform.billing.provider import SOURCE, CatalogPrice, instant, ref_id, text
from contentplatform.credits import buckets as credit_buckets
from contentplatform.events import service as events
from contentplatform.kit.db import utcnow
from contentplatform.kit.inbound import IGNORED, PROCESSED, RECEIVED
from contentplatform.tenants import service as tenants


async def receive_event(
    session: AsyncSession, event_id: str, type: str, payload: dict[str, Any]
) -> uuid.UUID | None:
    """Store a verified event once; its row id, or None when it was stored before."""
    return await repository.events.record(session, SOURCE, event_id, type, payload)


def changes_catalog(type: str) -> bool:
    """Whether the event is about the catalogue (a product or a price)."""
    return type.startswith(("product.", "price."))


async def needs_catalog(session: AsyncSession, event_id: uuid.UUID) -> str | None:
    """Whether Stripe's catalogue is read before the event is applied: "required" when a
    product or price changed; "wanted" when a subscription names a price not mirrored yet (its
    price.created is late, or a price was made and sold within the hour), which would otherwise
    leave the subscription on no plan; None when not."""
    event = await repository.events.for_update(session, event_id)
    if event is None or event.status != RECEIVED:
        return None
    if changes_catalog(event.type):
        return "required"
    if not event.type.startswith("customer.subscription."):
        return None
    data = service.as_dict(event.payload.get("data"))
    item = _first_item(service.as_dict(data.get("object")))
    price_id = ref_id(item.get("price")) if item else None
    unknown = price_id is not None and await repository.plan_by_price(session, price_id) is None
    return "wanted" if unknown else None


async def process_event(
    session: AsyncSession, event_id: uuid.UUID, catalog: list[CatalogPrice] | None = None
) -> str:
    """Apply a stored event, once: its new status, or the status it had when handled before.
    `catalog` is Stripe's catalogue as just read, when the event needs it (needs_catalog)."""
    event = await repository.events.for_update(session, event_id)
    if event is None:
        return "missing"
    if event.status != RECEIVED:
        return event.status
    data = event.payload.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    created = instant(event.payload.get("created")) or event.created_at
    handler = HANDLERS.get(event.type)
    if catalog is not None:
        await service.mirror_catalog(session, catalog)
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
    await repository.events.fail(session, event_id, reason)


# Each handler applies one type of event's object; it returns None when applied, or why it was
# ignored (stored on the event).


async def _tenant_of(session: AsyncSession, obj: dict[str, Any]) -> uuid.UUID | None:
    """The tenant an object is about: the stored customer's, else the one our metadata names."""
    customer = ref_id(obj.get("customer"))
    if customer is not None:
        found = await repository.tenant_of_customer(session, customer)
        if found is not None:
            return found
    metadata = service.as_dict(obj.get("metadata"))
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
    metadata = service.as_dict(obj.get("metadata"))
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
        await credit_buckets.grant(
            session,
            tenant_id,
            source="top_up",
            amount=amount,
            expires_at=utcnow() + service.PACK_VALIDITY,
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
    status = "canceled" if deleted else status if status in service.STATUSES else "incomplete"
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
    replaced = (
        row.subscription_id not in (None, subscription_id) and row.status in service.PAID_STATUSES
    )
    if replaced and (deleted or obj.get("status") not in service.PAID_STATUSES):
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
    """`subscription.updated`: the plan or the status changed (plans by key; none: no plan);
    the tenant's feature flags are evaluated again once this commits (a flag's `plans`)."""
    service.plan_changed(session, tenant_id)

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
    if plan is None or row.status not in service.PAID_STATUSES:
        await credit_buckets.set_grant_policy(
            session,
            tenant_id,
            monthly_credits=None,  # the configured free grant
            automatic=True,
            paused=False,
            rollover_cap=0,
        )
        return
    await credit_buckets.set_grant_policy(
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
    period = service.as_dict(line.get("period")) if line else {}
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
    period = service.as_dict(line.get("period")) if line else {}
    period_end = instant(period.get("end")) or instant(obj.get("period_end"))
    if plan is None or plan.monthly_credits <= 0 or period_end is None:
        return
    if await repository.claim_grant(
        session, tenant_id, invoice_id, source="monthly_grant", amount=plan.monthly_credits
    ):
        await credit_buckets.grant(
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
    await credit_buckets.revoke_grant(
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
