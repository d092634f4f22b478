"""Every query of billing. A tenant's rows are always read under its tenant id; the catalogue
and the events are nobody's."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, func, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.billing.models import CreditGrant, Invoice, PaymentEvent, Plan, Subscription
from contentplatform.kit.db import cross_tenant, insert_ignoring_conflicts, lock_rows
from contentplatform.kit.inbound import InboundEvents

# --- the catalogue ------------------------------------------------------------------------------


@cross_tenant("plans are the platform's catalogue, not a tenant's")
async def active_plans(session: AsyncSession) -> list[Plan]:
    result = await session.execute(
        select(Plan)
        .where(Plan.active.is_(True))
        .order_by(Plan.kind.desc(), Plan.price_amount, Plan.key)
    )
    return list(result.scalars())


@cross_tenant("plans are the platform's catalogue, not a tenant's")
async def plan_by_id(session: AsyncSession, plan_id: uuid.UUID) -> Plan | None:
    return await session.get(Plan, plan_id)


@cross_tenant("plans are the platform's catalogue, not a tenant's")
async def plan_by_price(session: AsyncSession, price_id: str) -> Plan | None:
    result = await session.execute(select(Plan).where(Plan.provider_price_id == price_id))
    return result.scalar_one_or_none()


@cross_tenant("plans are the platform's catalogue, not a tenant's")
async def plans_of_product(session: AsyncSession, product_id: str) -> list[Plan]:
    result = await session.execute(select(Plan).where(Plan.provider_product_id == product_id))
    return list(result.scalars())


@cross_tenant("plans are the platform's catalogue, not a tenant's")
async def upsert_plan(session: AsyncSession, price_id: str, values: dict[str, Any]) -> Plan:
    """The plan of this price, made or brought up to date."""
    await session.execute(
        insert_ignoring_conflicts(
            session, Plan, id=uuid.uuid4(), provider_price_id=price_id, **values
        )
    )
    plan = await plan_by_price(session, price_id)
    assert plan is not None  # inserted above, or there already
    for name, value in values.items():
        setattr(plan, name, value)
    return plan


@cross_tenant("plans are the platform's catalogue, not a tenant's")
async def deactivate_plans_except(session: AsyncSession, kept_price_ids: Sequence[str]) -> int:
    result = await session.execute(
        update(Plan)
        .where(Plan.active.is_(True), Plan.provider_price_id.not_in(list(kept_price_ids)))
        .values(active=False)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


# --- subscriptions ------------------------------------------------------------------------------


async def subscription_of(session: AsyncSession, tenant_id: uuid.UUID) -> Subscription | None:
    result = await session.execute(select(Subscription).where(Subscription.tenant_id == tenant_id))
    return result.scalar_one_or_none()


async def subscription_for_update(session: AsyncSession, tenant_id: uuid.UUID) -> Subscription:
    """The tenant's subscription row, locked (made first, status none, when it has none)."""
    await session.execute(
        insert_ignoring_conflicts(
            session,
            Subscription,
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            status="none",
            cancel_at_period_end=False,
        )
    )
    await lock_rows(session, Subscription, Subscription.tenant_id == tenant_id)
    result = await session.execute(
        select(Subscription)
        .where(Subscription.tenant_id == tenant_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return result.scalar_one()


@cross_tenant("finds the tenant a Stripe event names")
async def tenant_of_customer(session: AsyncSession, customer_id: str) -> uuid.UUID | None:
    result = await session.execute(
        select(Subscription.tenant_id).where(Subscription.customer_id == customer_id).limit(1)
    )
    return result.scalar_one_or_none()


@cross_tenant("finds the tenant a Stripe event names")
async def tenant_of_subscription(session: AsyncSession, subscription_id: str) -> uuid.UUID | None:
    result = await session.execute(
        select(Subscription.tenant_id)
        .where(Subscription.subscription_id == subscription_id)
        .limit(1)
    )
    return result.scalar_one_or_none()


# --- invoices -----------------------------------------------------------------------------------


async def invoices_page(
    session: AsyncSession, tenant_id: uuid.UUID, status: str | None, limit: int, offset: int
) -> tuple[list[Invoice], int]:
    criteria = [Invoice.tenant_id == tenant_id]
    if status is not None:
        criteria.append(Invoice.status == status)
    total = await session.scalar(select(func.count()).select_from(Invoice).where(*criteria))
    result = await session.execute(
        select(Invoice)
        .where(*criteria)
        .order_by(Invoice.provider_created_at.desc(), Invoice.created_at.desc(), Invoice.id)
        .limit(limit)
        .offset(offset)
    )
    return list(result.scalars()), int(total or 0)


async def invoice_for_update(
    session: AsyncSession, tenant_id: uuid.UUID, provider_invoice_id: str, currency: str
) -> Invoice:
    """The tenant's invoice of that provider id, locked (made first, as a draft, when new)."""
    await session.execute(
        insert_ignoring_conflicts(
            session,
            Invoice,
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            provider_invoice_id=provider_invoice_id,
            status="draft",
            currency=currency,
            amount_due=0,
            amount_paid=0,
        )
    )
    criteria = (Invoice.tenant_id == tenant_id, Invoice.provider_invoice_id == provider_invoice_id)
    await lock_rows(session, Invoice, *criteria)
    result = await session.execute(
        select(Invoice).where(*criteria).with_for_update().execution_options(populate_existing=True)
    )
    return result.scalar_one()


# --- grants -------------------------------------------------------------------------------------


async def claim_grant(
    session: AsyncSession, tenant_id: uuid.UUID, reference: str, **values: Any
) -> bool:
    """Record the grant of `reference`; False when it was recorded before (granted already)."""
    result = await session.execute(
        insert_ignoring_conflicts(
            session,
            CreditGrant,
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            reference=reference,
            revoked=False,
            **values,
        ).returning(CreditGrant.id)
    )
    return result.scalar_one_or_none() is not None


@cross_tenant("finds the grant a Stripe event's payment names, and so its tenant")
async def grant_of_payment(
    session: AsyncSession, charge_id: str | None, payment_intent_id: str | None
) -> CreditGrant | None:
    """The pack grant a charge (or its payment intent) paid for, locked."""
    criteria = []
    if charge_id:
        criteria.append(CreditGrant.charge_id == charge_id)
    if payment_intent_id:
        criteria.append(CreditGrant.payment_intent_id == payment_intent_id)
    if not criteria:
        return None

    result = await session.execute(
        select(CreditGrant)
        .where(CreditGrant.source == "top_up", or_(*criteria))
        .with_for_update()
        .limit(1)
    )
    return result.scalar_one_or_none()


# --- pieces of the operators' queries (admin.*), correlated with the enclosing query's tenant ----


def subscribed_plan_column(
    tenant_id: ColumnElement[uuid.UUID], paid_statuses: Collection[str], billing_configured: bool
) -> ColumnElement[Any]:
    """The plan of the subscription of the tenant whose id is `tenant_id`, when its status is
    one of `paid_statuses` and billing is configured; else null."""
    return (
        select(Subscription.plan_id)
        .where(
            Subscription.tenant_id == tenant_id,
            Subscription.status.in_(sorted(paid_statuses)),
            literal(billing_configured),
        )
        .limit(1)
        .correlate_except(Subscription)
        .scalar_subquery()
    )


def subscription_status_column(tenant_id: ColumnElement[uuid.UUID]) -> ColumnElement[Any]:
    """The status of the subscription of the tenant whose id is `tenant_id` (null: none)."""
    return (
        select(Subscription.status)
        .where(Subscription.tenant_id == tenant_id)
        .limit(1)
        .correlate_except(Subscription)
        .scalar_subquery()
    )


def plan_key_column(plan_id: ColumnElement[Any]) -> ColumnElement[Any]:
    """The key of the plan whose id is `plan_id` (null: none)."""
    return select(Plan.key).where(Plan.id == plan_id).correlate_except(Plan).scalar_subquery()


@cross_tenant("plans are the platform's catalogue, not a tenant's")
async def plan_keys(session: AsyncSession, kind: str) -> set[str]:
    """The keys of the catalogue's plans of this kind, retired ones too."""
    return set(await session.scalars(select(Plan.key).where(Plan.kind == kind).distinct()))


# --- events -------------------------------------------------------------------------------------

events = InboundEvents(PaymentEvent)


def inbound_listing() -> Select[Any]:
    """Every stored payment event (`InboundEvents.listing`), its tenant the one whose
    subscription has the event's customer (null: none)."""
    customer = PaymentEvent.payload["data"]["object"]["customer"].as_string()
    tenant = (
        select(Subscription.tenant_id)
        .where(Subscription.customer_id == customer)
        .limit(1)
        .correlate_except(Subscription)
        .scalar_subquery()
    )
    return events.listing(tenant)
