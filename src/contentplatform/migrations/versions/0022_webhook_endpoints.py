"""Outbound webhook endpoints and their deliveries (issue 20)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0022_webhook_endpoints"
down_revision = "0021_publisher_secrets"


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        *shapes.owned(),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("description", sa.String(200), nullable=True),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(20), nullable=True),
        sa.Column("secret_sealed", sa.Text(), nullable=False),
        sa.Column("secret_hint", sa.String(8), nullable=False),
        sa.Column("previous_secret_sealed", sa.Text(), nullable=True),
        sa.Column("previous_secret_expires_at", UTCDateTime(), nullable=True),
        sa.Column("failing_since", UTCDateTime(), nullable=True),
        sa.Column("last_delivery_status", sa.String(20), nullable=True),
        sa.Column("last_delivery_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("webhook_endpoints"),
    )
    shapes.index_tenant("webhook_endpoints")

    op.create_table(
        "webhook_deliveries",
        *shapes.owned(),
        sa.Column("endpoint_id", sa.Uuid(), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("event_type", sa.String(60), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("test", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("round_attempts", sa.Integer(), nullable=False),
        sa.Column("round_started_at", UTCDateTime(), nullable=True),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=True),
        sa.Column("request_body", sa.Text(), nullable=False),
        sa.Column("response_excerpt", sa.Text(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("webhook_deliveries"),
        shapes.references("webhook_deliveries", "endpoint_id", "webhook_endpoints"),
        sa.UniqueConstraint(
            "endpoint_id", "event_id", name=op.f("uq_webhook_deliveries_endpoint_id_event_id")
        ),
    )
    shapes.index_tenant("webhook_deliveries")
    op.create_index(
        "ix_webhook_deliveries_endpoint_id_created_at",
        "webhook_deliveries",
        ["endpoint_id", "created_at"],
    )
    op.create_index("ix_webhook_deliveries_created_at", "webhook_deliveries", ["created_at"])
    op.create_index(
        "ix_webhook_deliveries_tenant_id_event_id", "webhook_deliveries", ["tenant_id", "event_id"]
    )
    op.create_index(
        "ix_webhook_deliveries_pending",
        "webhook_deliveries",
        ["next_attempt_at"],
        postgresql_where=sa.text("status = 'pending'"),
        sqlite_where=sa.text("status = 'pending'"),
    )

    op.create_table(
        "webhook_attempts",
        *shapes.owned(),
        sa.Column("delivery_id", sa.Uuid(), nullable=False),
        sa.Column("endpoint_id", sa.Uuid(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("succeeded", sa.Boolean(), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("response_excerpt", sa.Text(), nullable=True),
        *shapes.keys("webhook_attempts"),
        shapes.references("webhook_attempts", "delivery_id", "webhook_deliveries"),
        sa.UniqueConstraint("delivery_id", "n", name=op.f("uq_webhook_attempts_delivery_id_n")),
    )
    shapes.index_tenant("webhook_attempts")
    op.create_index("ix_webhook_attempts_endpoint_id_at", "webhook_attempts", ["endpoint_id", "at"])


def downgrade() -> None:
    op.drop_table("webhook_attempts")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_endpoints")
