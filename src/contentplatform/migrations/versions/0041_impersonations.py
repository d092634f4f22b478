"""Impersonation sessions (admin.startImpersonation) and the superadmins seen.

Revision 0041_impersonations of 2026-12-06 (issue 40).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0041_impersonations"
down_revision = "0040_admin"

OPEN_SESSION = sa.text("ended_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "impersonation_sessions",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("actor", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("user_subject", sa.String(length=255), nullable=False),
        sa.Column("synthetic", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("ticket_id", sa.Uuid(), nullable=True),
        sa.Column("mode", sa.String(length=20), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("ended_at", UTCDateTime(), nullable=True),
        sa.Column("ended_by", sa.String(length=255), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_impersonation_sessions_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_impersonation_sessions_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_impersonation_sessions")),
    )
    op.create_index(
        op.f("ix_impersonation_sessions_tenant_id"),
        "impersonation_sessions",
        ["tenant_id"],
        unique=False,
    )
    op.create_index(
        "uq_impersonation_sessions_open_actor",
        "impersonation_sessions",
        ["actor"],
        unique=True,
        sqlite_where=OPEN_SESSION,
        postgresql_where=OPEN_SESSION,
    )
    op.create_table(
        "known_superadmins",
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_known_superadmins")),
        sa.UniqueConstraint("subject", name=op.f("uq_known_superadmins_subject")),
    )


def downgrade() -> None:
    op.drop_table("known_superadmins")
    op.drop_index("uq_impersonation_sessions_open_actor", table_name="impersonation_sessions")
    op.drop_index(op.f("ix_impersonation_sessions_tenant_id"), table_name="impersonation_sessions")
    op.drop_table("impersonation_sessions")
