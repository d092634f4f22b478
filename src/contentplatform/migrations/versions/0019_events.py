"""The events outbox, which is also the activity trail (issue 20)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0019_events"
down_revision = "0018_billing"


def upgrade() -> None:
    op.create_table(
        "events",
        *shapes.owned(),
        sa.Column("type", sa.String(60), nullable=False),
        sa.Column("scope", sa.String(10), nullable=False),
        sa.Column("actor_type", sa.String(10), nullable=False),
        sa.Column("actor_id", sa.String(255), nullable=True),
        sa.Column("actor_name", sa.String(255), nullable=True),
        sa.Column("impersonated_by", sa.String(255), nullable=True),
        sa.Column("resource_type", sa.String(40), nullable=False),
        sa.Column("resource_id", sa.Uuid(), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("changes", sa.JSON(), nullable=True),
        sa.Column("ip", sa.String(64), nullable=True),
        sa.Column("user_agent", sa.String(500), nullable=True),
        sa.Column("request_id", sa.String(64), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("dispatched_at", UTCDateTime(), nullable=True),
        *shapes.keys("events"),
    )
    shapes.index_tenant("events")
    op.create_index("ix_events_tenant_id_created_at", "events", ["tenant_id", "created_at"])
    op.create_index(
        "ix_events_tenant_id_resource", "events", ["tenant_id", "resource_type", "resource_id"]
    )
    op.create_index(
        "ix_events_undispatched",
        "events",
        ["created_at"],
        postgresql_where=sa.text("dispatched_at IS NULL"),
        sqlite_where=sa.text("dispatched_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_table("events")
