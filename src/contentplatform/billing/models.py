"""Billing's tables: the plan catalogue (mirrored from the provider), each tenant's subscription,
its invoices, the payment events as received, and the grants made from them (one per reference)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime
from contentplatform.kit.inbound import InboundEventColumns


class Plan(RecordMixin, Base):
    """A plan or credit pack as the provider's product and price describe it (not a tenant's row:
    every tenant sees the same catalogue). A price gone from the provider stays, inactive, so a
    subscription on it still names its plan."""

    __tablename__ = "billing_plans"
    __table_args__ = (UniqueConstraint("provider_price_id"),)

    key: Mapped[str] = mapped_column(String(100), nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    # subscription | credit_pack
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    interval: Mapped[str | None] = mapped_column(String(10))
    price_amount: Mapped[int] = mapped_column(BigInteger, nullable=False)
    currency: Mapped[str] = mapped_column(String(3), nullable=False)
    monthly_credits: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    pack_credits: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    rollover_cap: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    # {members, documents, storage_bytes, active_jobs, publishers, webhook_endpoints, api_keys}:
    # an int each, or null for unlimited.
    limits: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    features: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    provider_product_id: Mapped[str] = mapped_column(String(255), nullable=False, index=True)
    provider_price_id: Mapped[str] = mapped_column(String(255), nullable=False)
    active: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)


class Subscription(RecordMixin, TenantMixin, Base):
    """A tenant's subscription as the provider last reported it (one row per tenant, made when
    the tenant first reaches the provider)."""

    __tablename__ = "billing_subscriptions"
    __table_args__ = (UniqueConstraint("tenant_id"),)

    plan_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    # none | trialing | active | past_due | unpaid | canceled | incomplete
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    customer_id: Mapped[str | None] = mapped_column(String(255), index=True)
    subscription_id: Mapped[str | None] = mapped_column(String(255), index=True)
    current_period_start: Mapped[datetime | None] = mapped_column(UTCDateTime)
    current_period_end: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cancel_at_period_end: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    trial_end: Mapped[datetime | None] = mapped_column(UTCDateTime)
    payment_method_brand: Mapped[str | None] = mapped_column(String(40))
    payment_method_last4: Mapped[str | None] = mapped_column(String(4))
    # The `created` time of the provider's event last applied to the subscription: an older
    # event is stale and changes nothing.
    provider_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Invoice(RecordMixin, TenantMixin, Base):
    """An invoice as the provider's invoice.* events last described it."""

    __tablename__ = "billing_invoices"
    __table_args__ = (UniqueConstraint("provider_invoice_id"),)

    provider_invoice_id: Mapped[str] = mapped_column(String(255), nullable=False)
    number: Mapped[str | None] = mapped_column(String(100))
    # draft | open | paid | uncollectible | void
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    amount_due: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    amount_paid: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    currency: Mapped[str] = mapped_column(String(3), nullable=False)
    period_start: Mapped[datetime | None] = mapped_column(UTCDateTime)
    period_end: Mapped[datetime | None] = mapped_column(UTCDateTime)
    hosted_invoice_url: Mapped[str | None] = mapped_column(Text)
    invoice_pdf_url: Mapped[str | None] = mapped_column(Text)
    subscription_id: Mapped[str | None] = mapped_column(String(255))
    provider_created_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The `created` time of the event last applied (an older one changes nothing).
    provider_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class PaymentEvent(InboundEventColumns, RecordMixin, Base):
    """An inbound event of the payment provider (kit/inbound.py), stored once per (source,
    event id) and then applied by a workflow. Not a tenant's row: product and price events
    name none."""

    __tablename__ = "payment_events"


class CreditGrant(RecordMixin, TenantMixin, Base):
    """A grant billing made (a pack's checkout session, a period's paid invoice), once per
    reference: a second event naming the same reference finds it and grants nothing."""

    __tablename__ = "billing_credit_grants"
    __table_args__ = (UniqueConstraint("reference"),)

    reference: Mapped[str] = mapped_column(String(255), nullable=False)
    # top_up | monthly_grant
    source: Mapped[str] = mapped_column(String(20), nullable=False)
    amount: Mapped[int] = mapped_column(BigInteger, nullable=False)
    # The charge that paid for it (refunds name the charge), when known.
    charge_id: Mapped[str | None] = mapped_column(String(255), index=True)
    payment_intent_id: Mapped[str | None] = mapped_column(String(255), index=True)
    revoked: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    quantity: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
