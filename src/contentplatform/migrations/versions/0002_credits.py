"""Credits: reservations and the append-only ledger (revision of 2026-11-22)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0002_credits"
down_revision = "0001_foundation"


def upgrade() -> None:
    op.create_table(
        "credit_reservations",
        *shapes.owned(),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("committed_amount", sa.Integer(), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        *shapes.timestamps(),
        *shapes.keys("credit_reservations"),
        sa.UniqueConstraint(
            "tenant_id",
            "kind",
            "idempotency_key",
            name=op.f("uq_credit_reservations_tenant_id_kind_idempotency_key"),
        ),
    )
    shapes.index_tenant("credit_reservations")
    op.create_index(
        "ix_credit_reservations_status_expires_at",
        "credit_reservations",
        ["status", "expires_at"],
    )
    op.create_table(
        "credit_ledger",
        *shapes.owned(),
        sa.Column("entry_type", sa.String(20), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(40), nullable=True),
        sa.Column("reservation_id", sa.Uuid(), nullable=True),
        sa.Column("period", sa.String(7), nullable=True),
        sa.Column("reason", sa.String(500), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        *shapes.keys("credit_ledger"),
        shapes.references("credit_ledger", "reservation_id", "credit_reservations", ondelete=None),
        sa.UniqueConstraint(
            "tenant_id",
            "entry_type",
            "period",
            name=op.f("uq_credit_ledger_tenant_id_entry_type_period"),
        ),
    )
    shapes.index_tenant("credit_ledger")


def downgrade() -> None:
    op.drop_table("credit_ledger")
    op.drop_table("credit_reservations")
