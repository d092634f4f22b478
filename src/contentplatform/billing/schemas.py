"""Inputs and records of billing.* and the payment-event receiver, and the plan limits other
domains check (`PlanLimits`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contentplatform.config import PLAN_LIMIT_KEYS
from contentplatform.credits.schemas import UsageBucket
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page, Record
from contentplatform.kit.text import Identifier

PlanKind = Literal["subscription", "credit_pack"]
SubscriptionStatus = Literal[
    "none", "trialing", "active", "past_due", "unpaid", "canceled", "incomplete"
]
InvoiceStatus = Literal["draft", "open", "paid", "uncollectible", "void"]
UsageKind = Literal[
    "documents.ingest",
    "generation.blog",
    "chat.message",
    "website_scan.profile",
    "seo.checkRankings",
    "seo.researchKeywords",
    "seo.runAiVisibility",
    "seoPlans.generate",
]

# The limits a plan sets: listed with the settings, which check the free plan's against them.
LIMIT_KEYS = PLAN_LIMIT_KEYS


class Limits(BaseModel):
    members: int | None = None
    documents: int | None = None
    storage_bytes: int | None = None
    active_jobs: int | None = None
    publishers: int | None = None
    webhook_endpoints: int | None = None
    api_keys: int | None = None
    crawl_pages: int | None = None


class PlanLimits(Limits):
    """What the tenant's current plan allows; None is unlimited. What quota and the guarded
    writes read (`billing.service.plan_limits`)."""

    model_config = ConfigDict(frozen=True)

    plan_key: str
    plan_name: str
    monthly_credits: int | None = None


class Plan(BaseModel):
    id: uuid.UUID | None = Field(description="Null for the built-in free plan.")
    key: str
    name: str
    kind: PlanKind
    interval: Literal["month", "year"] | None
    price_amount: int = Field(description="In the currency's minor units (cents).")
    currency: str
    monthly_credits: int
    pack_credits: int
    rollover_cap: int = Field(description="Credits carried into the next period at most.")
    limits: Limits
    features: list[str]
    is_current: bool


class PlanListing(Listing[Plan]):
    pass


class PaymentMethod(BaseModel):
    brand: str | None
    last4: str | None


class SubscriptionView(BaseModel):
    plan_id: uuid.UUID | None = Field(description="Null on the free plan.")
    plan_key: str
    status: SubscriptionStatus
    provider: Literal["stripe", "none"]
    current_period_start: datetime | None
    current_period_end: datetime | None
    cancel_at_period_end: bool
    trial_end: datetime | None
    next_grant_at: datetime | None
    payment_method: PaymentMethod | None = Field(description="Shown to admins only.")


class Invoice(Record):
    id: uuid.UUID
    provider_invoice_id: str
    number: str | None
    status: InvoiceStatus
    amount_due: int
    amount_paid: int
    currency: str
    period_start: datetime | None
    period_end: datetime | None
    hosted_invoice_url: str | None
    invoice_pdf_url: str | None
    created_at: datetime


class InvoicePage(Page[Invoice]):
    pass


class ListInvoicesInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    status: InvoiceStatus | None = None


URL_FIELD = Field(
    max_length=2048,
    description="An https URL on an allowed origin (CONTENTPLATFORM_BILLING_REDIRECT_ORIGINS).",
    examples=["https://app.example.com/billing/done"],
)


class CheckoutInput(Input):
    plan_id: uuid.UUID = Field(description="A subscription plan or a credit pack.")
    quantity: int = Field(1, ge=1, le=10, description="Credit packs only.")
    success_url: Identifier = URL_FIELD
    cancel_url: Identifier = URL_FIELD


class CheckoutSession(BaseModel):
    id: str
    url: str
    expires_at: datetime | None


class PortalInput(Input):
    return_url: Identifier = URL_FIELD
    flow: Literal["payment_method_update", "subscription_update", "subscription_cancel"] | None = (
        None
    )


class PortalSession(BaseModel):
    url: str
    expires_at: datetime | None


class UsageInput(Input):
    start_date: datetime
    end_date: datetime | None = Field(None, description="Default now; at most 366 days on.")
    bucket_width: Literal["1h", "1d", "1mo"] = Field(
        "1d", description="1h only for windows of 7 days or less."
    )
    group_by: Literal["kind", "user", "job"] | None = None
    kind: UsageKind | None = None


class UsageListing(Listing[UsageBucket]):
    """credits.usage's buckets, as billing.getUsage lists them."""


class PaymentEventInput(Input):
    """The signature header; the body is read raw (verified before it is parsed)."""

    stripe_signature: Identifier | None = Field(
        None,
        alias="stripe-signature",
        max_length=2048,
        description="`t=<unix>,v1=<hex>[,v1=...]`: HMAC-SHA256 of `<t>.<body>`.",
        json_schema_extra={"in": "header"},
    )


class EventReceipt(BaseModel):
    received: bool
    duplicate: bool
