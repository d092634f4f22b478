"""Credits: reservations and the append-only ledger.

Revision ID: 0002_credits
Revises: 0001_foundation
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision: str = "0002_credits"
down_revision: str | None = "0001_foundation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "credit_reservations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("committed_amount", sa.Integer(), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credit_reservations")),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_credit_reservations_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "tenant_id",
            "kind",
            "idempotency_key",
            name=op.f("uq_credit_reservations_tenant_id_kind_idempotency_key"),
        ),
    )
    op.create_index(op.f("ix_credit_reservations_tenant_id"), "credit_reservations", ["tenant_id"])
    op.create_index(
        "ix_credit_reservations_status_expires_at",
        "credit_reservations",
        ["status", "expires_at"],
    )
    op.create_table(
        "credit_ledger",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("entry_type", sa.String(20), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(40), nullable=True),
        sa.Column("reservation_id", sa.Uuid(), nullable=True),
        sa.Column("period", sa.String(7), nullable=True),
        sa.Column("reason", sa.String(500), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credit_ledger")),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_credit_ledger_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["reservation_id"],
            ["credit_reservations.id"],
            name=op.f("fk_credit_ledger_reservation_id_credit_reservations"),
        ),
        sa.UniqueConstraint(
            "tenant_id",
            "entry_type",
            "period",
            name=op.f("uq_credit_ledger_tenant_id_entry_type_period"),
        ),
    )
    op.create_index(op.f("ix_credit_ledger_tenant_id"), "credit_ledger", ["tenant_id"])


def downgrade() -> None:
    op.drop_table("credit_ledger")
    op.drop_table("credit_reservations")
