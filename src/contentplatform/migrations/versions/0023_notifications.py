"""In-app notifications and watches (issue 20)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0023_notifications"
down_revision = "0022_webhook_endpoints"


def upgrade() -> None:
    op.create_table(
        "watches",
        *shapes.owned(),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(20), nullable=False),
        sa.Column("resource_id", sa.Uuid(), nullable=False),
        sa.Column("events", sa.JSON(), nullable=True),
        sa.Column("channels", sa.JSON(), nullable=False),
        sa.Column("muted_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("watches"),
        sa.UniqueConstraint(
            "tenant_id",
            "subject",
            "resource_type",
            "resource_id",
            name=op.f("uq_watches_tenant_id_subject_resource_type_resource_id"),
        ),
    )
    shapes.index_tenant("watches")
    op.create_index(
        "ix_watches_tenant_id_resource", "watches", ["tenant_id", "resource_type", "resource_id"]
    )

    op.create_table(
        "notifications",
        *shapes.owned(),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("type", sa.String(60), nullable=False),
        sa.Column("category", sa.String(20), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("body", sa.String(1000), nullable=False),
        sa.Column("resource_type", sa.String(40), nullable=False),
        sa.Column("resource_id", sa.Uuid(), nullable=True),
        sa.Column("url", sa.String(500), nullable=False),
        sa.Column("actor_id", sa.String(255), nullable=True),
        sa.Column("read_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        *shapes.keys("notifications"),
        sa.UniqueConstraint("event_id", "subject", name=op.f("uq_notifications_event_id_subject")),
    )
    shapes.index_tenant("notifications")
    op.create_index(
        "ix_notifications_recipient", "notifications", ["tenant_id", "subject", "created_at"]
    )
    op.create_index(
        "ix_notifications_unread",
        "notifications",
        ["tenant_id", "subject"],
        postgresql_where=sa.text("read_at IS NULL"),
        sqlite_where=sa.text("read_at IS NULL"),
    )
    op.create_index("ix_notifications_created_at", "notifications", ["created_at"])


def downgrade() -> None:
    op.drop_table("notifications")
    op.drop_table("watches")
