"""Support: tickets, their messages and internal notes, contact-form submissions.

Revision 0039_support_tickets of 2026-12-06 (issue 40).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0039_support_tickets"
down_revision = "0038_mail_outbox"


def upgrade() -> None:
    op.create_table(
        "support_tickets",
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("number_scope", sa.String(length=36), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=10), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("category", sa.String(length=20), nullable=False),
        sa.Column("priority", sa.String(length=10), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=True),
        sa.Column("requester_name", sa.String(length=255), nullable=True),
        sa.Column("requester_email", sa.String(length=320), nullable=True),
        sa.Column("company", sa.String(length=200), nullable=True),
        sa.Column("topic", sa.String(length=20), nullable=True),
        sa.Column("request_ids", sa.JSON(), nullable=False),
        sa.Column("resource_type", sa.String(length=40), nullable=True),
        sa.Column("resource_id", sa.Uuid(), nullable=True),
        sa.Column("last_message_at", UTCDateTime(), nullable=False),
        sa.Column("first_response_at", UTCDateTime(), nullable=True),
        sa.Column("resolved_at", UTCDateTime(), nullable=True),
        sa.Column("closed_at", UTCDateTime(), nullable=True),
        sa.Column("close_reason", sa.String(length=500), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_support_tickets_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_support_tickets")),
        sa.UniqueConstraint(
            "number_scope", "number", name=op.f("uq_support_tickets_number_scope_number")
        ),
    )
    op.create_index(
        "ix_support_tickets_tenant_id_status", "support_tickets", ["tenant_id", "status"]
    )
    op.create_index("ix_support_tickets_last_message_at", "support_tickets", ["last_message_at"])
    op.create_table(
        "support_messages",
        sa.Column("ticket_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("author_type", sa.String(length=10), nullable=False),
        sa.Column("author_id", sa.String(length=255), nullable=True),
        sa.Column("author_name", sa.String(length=255), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("internal", sa.Boolean(), nullable=False),
        sa.Column("attachment_ids", sa.JSON(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["ticket_id"],
            ["support_tickets.id"],
            name=op.f("fk_support_messages_ticket_id_support_tickets"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_support_messages_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_support_messages")),
    )
    op.create_index(
        "ix_support_messages_ticket_id_created_at",
        "support_messages",
        ["ticket_id", "created_at"],
    )


def downgrade() -> None:
    op.drop_table("support_messages")
    op.drop_table("support_tickets")
