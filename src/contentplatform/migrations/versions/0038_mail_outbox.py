"""Mail: the outbox of messages sent over SMTP.

Revision 0038_mail_outbox of 2026-12-06 (issue 40).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0038_mail_outbox"
down_revision = "0037_seo_part_one"

UNSETTLED = sa.text("status IN ('queued', 'sending')")


def upgrade() -> None:
    op.create_table(
        "mail_outbox",
        sa.Column("message_id", sa.String(length=200), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("to_address", sa.String(length=254), nullable=False),
        sa.Column("reply_to", sa.String(length=254), nullable=True),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.Column("sent_at", UTCDateTime(), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_mail_outbox_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mail_outbox")),
        sa.UniqueConstraint("message_id", name=op.f("uq_mail_outbox_message_id")),
    )
    op.create_index(op.f("ix_mail_outbox_tenant_id"), "mail_outbox", ["tenant_id"], unique=False)
    op.create_index(
        "ix_mail_outbox_unsettled",
        "mail_outbox",
        ["created_at"],
        unique=False,
        postgresql_where=UNSETTLED,
        sqlite_where=UNSETTLED,
    )


def downgrade() -> None:
    op.drop_index("ix_mail_outbox_unsettled", table_name="mail_outbox")
    op.drop_index(op.f("ix_mail_outbox_tenant_id"), table_name="mail_outbox")
    op.drop_table("mail_outbox")
