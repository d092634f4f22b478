"""The failed requests support tickets cite: each request of an organization's member answered
with a problem (never a 429), kept 30 days (support/request_log.py).

Revision 0042_failed_requests of 2026-12-07 (issue 40).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0042_failed_requests"
down_revision = "0041_impersonations"


def upgrade() -> None:
    op.create_table(
        "support_failed_requests",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("request_id", sa.String(length=128), nullable=False),
        sa.Column("operation", sa.String(length=100), nullable=False),
        sa.Column("method", sa.String(length=10), nullable=False),
        sa.Column("status", sa.SmallInteger(), nullable=False),
        sa.Column("code", sa.String(length=40), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_support_failed_requests_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_support_failed_requests")),
    )
    op.create_index(
        "ix_support_failed_requests_tenant_id_request_id",
        "support_failed_requests",
        ["tenant_id", "request_id"],
    )
    op.create_index(
        "ix_support_failed_requests_created_at", "support_failed_requests", ["created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_support_failed_requests_created_at", table_name="support_failed_requests")
    op.drop_index(
        "ix_support_failed_requests_tenant_id_request_id", table_name="support_failed_requests"
    )
    op.drop_table("support_failed_requests")
