"""Billing: the plan catalogue mirrored from Stripe, each tenant's subscription, its invoices,
the payment events as received, and the grants made from them (issue 19)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0018_billing"
down_revision = "0017_credit_buckets"


def upgrade() -> None:
    op.create_table(
        "billing_plans",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("interval", sa.String(10), nullable=True),
        sa.Column("price_amount", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("monthly_credits", sa.BigInteger(), nullable=False),
        sa.Column("pack_credits", sa.BigInteger(), nullable=False),
        sa.Column("rollover_cap", sa.BigInteger(), nullable=False),
        sa.Column("limits", sa.JSON(), nullable=False),
        sa.Column("features", sa.JSON(), nullable=False),
        sa.Column("provider_product_id", sa.String(255), nullable=False),
        sa.Column("provider_price_id", sa.String(255), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        *shapes.timestamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_billing_plans")),
        sa.UniqueConstraint("provider_price_id", name=op.f("uq_billing_plans_provider_price_id")),
    )
    op.create_index(
        op.f("ix_billing_plans_provider_product_id"), "billing_plans", ["provider_product_id"]
    )

    op.create_table(
        "billing_subscriptions",
        *shapes.owned(),
        sa.Column("plan_id", sa.Uuid(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("customer_id", sa.String(255), nullable=True),
        sa.Column("subscription_id", sa.String(255), nullable=True),
        sa.Column("current_period_start", UTCDateTime(), nullable=True),
        sa.Column("current_period_end", UTCDateTime(), nullable=True),
        sa.Column("cancel_at_period_end", sa.Boolean(), nullable=False),
        sa.Column("trial_end", UTCDateTime(), nullable=True),
        sa.Column("payment_method_brand", sa.String(40), nullable=True),
        sa.Column("payment_method_last4", sa.String(4), nullable=True),
        sa.Column("provider_updated_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("billing_subscriptions"),
        sa.UniqueConstraint("tenant_id", name=op.f("uq_billing_subscriptions_tenant_id")),
    )
    shapes.index_tenant("billing_subscriptions")
    for column in ("customer_id", "subscription_id"):
        op.create_index(
            op.f(f"ix_billing_subscriptions_{column}"), "billing_subscriptions", [column]
        )

    op.create_table(
        "billing_invoices",
        *shapes.owned(),
        sa.Column("provider_invoice_id", sa.String(255), nullable=False),
        sa.Column("number", sa.String(100), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("amount_due", sa.BigInteger(), nullable=False),
        sa.Column("amount_paid", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("period_start", UTCDateTime(), nullable=True),
        sa.Column("period_end", UTCDateTime(), nullable=True),
        sa.Column("hosted_invoice_url", sa.Text(), nullable=True),
        sa.Column("invoice_pdf_url", sa.Text(), nullable=True),
        sa.Column("subscription_id", sa.String(255), nullable=True),
        sa.Column("provider_created_at", UTCDateTime(), nullable=True),
        sa.Column("provider_updated_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("billing_invoices"),
        sa.UniqueConstraint(
            "provider_invoice_id", name=op.f("uq_billing_invoices_provider_invoice_id")
        ),
    )
    shapes.index_tenant("billing_invoices")

    op.create_table(
        "payment_events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("source", sa.String(40), nullable=False),
        sa.Column("event_id", sa.String(255), nullable=False),
        sa.Column("type", sa.String(100), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("processed_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payment_events")),
        sa.UniqueConstraint("source", "event_id", name=op.f("uq_payment_events_source_event_id")),
    )
    op.create_index(op.f("ix_payment_events_status"), "payment_events", ["status"])

    op.create_table(
        "billing_credit_grants",
        *shapes.owned(),
        sa.Column("reference", sa.String(255), nullable=False),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("charge_id", sa.String(255), nullable=True),
        sa.Column("payment_intent_id", sa.String(255), nullable=True),
        sa.Column("revoked", sa.Boolean(), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        *shapes.timestamps(),
        *shapes.keys("billing_credit_grants"),
        sa.UniqueConstraint("reference", name=op.f("uq_billing_credit_grants_reference")),
    )
    shapes.index_tenant("billing_credit_grants")
    for column in ("charge_id", "payment_intent_id"):
        op.create_index(
            op.f(f"ix_billing_credit_grants_{column}"), "billing_credit_grants", [column]
        )


def downgrade() -> None:
    op.drop_table("billing_credit_grants")
    op.drop_table("payment_events")
    op.drop_table("billing_invoices")
    op.drop_table("billing_subscriptions")
    op.drop_table("billing_plans")
