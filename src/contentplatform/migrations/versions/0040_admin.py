"""Admin: tenant suspension and overrides, feature flag settings, credit grants by key.

Revision 0040_admin of 2026-12-06 (issue 40).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0040_admin"
down_revision = "0039_support_tickets"

TENANT_COLUMNS = (
    "suspended_reason",
    "suspended_at",
    "suspended_by",
    "plan_override_id",
    "plan_override_until",
    "limits_override",
)


def upgrade() -> None:
    with op.batch_alter_table("tenants") as tenants:
        tenants.add_column(sa.Column("suspended_reason", sa.String(length=500), nullable=True))
        tenants.add_column(sa.Column("suspended_at", UTCDateTime(), nullable=True))
        tenants.add_column(sa.Column("suspended_by", sa.String(length=255), nullable=True))
        tenants.add_column(sa.Column("plan_override_id", sa.Uuid(), nullable=True))
        tenants.add_column(sa.Column("plan_override_until", UTCDateTime(), nullable=True))
        tenants.add_column(sa.Column("limits_override", sa.JSON(), nullable=True))
    op.create_table(
        "feature_flag_settings",
        sa.Column("key", sa.String(length=100), nullable=False),
        sa.Column("stage", sa.String(length=20), nullable=False),
        sa.Column("default_enabled", sa.Boolean(), nullable=False),
        sa.Column("rollout_percent", sa.Integer(), nullable=True),
        sa.Column("plans", sa.JSON(), nullable=False),
        sa.Column("opt_in_allowed", sa.Boolean(), nullable=False),
        sa.Column("updated_by", sa.String(length=255), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_feature_flag_settings")),
        sa.UniqueConstraint("key", name=op.f("uq_feature_flag_settings_key")),
    )
    op.create_table(
        "admin_credit_grants",
        sa.Column("idempotency_key", sa.String(length=255), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("ledger_entry_id", sa.Uuid(), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("granted_by", sa.String(length=255), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_admin_credit_grants_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admin_credit_grants")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_admin_credit_grants_idempotency_key")),
    )
    op.create_index(
        op.f("ix_admin_credit_grants_tenant_id"),
        "admin_credit_grants",
        ["tenant_id"],
        unique=False,
    )
    op.create_table(
        "inbound_event_replays",
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("replayed_by", sa.String(length=255), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbound_event_replays")),
    )
    op.create_index(
        op.f("ix_inbound_event_replays_event_id"),
        "inbound_event_replays",
        ["event_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_inbound_event_replays_event_id"), table_name="inbound_event_replays")
    op.drop_table("inbound_event_replays")
    op.drop_index(op.f("ix_admin_credit_grants_tenant_id"), table_name="admin_credit_grants")
    op.drop_table("admin_credit_grants")
    op.drop_table("feature_flag_settings")
    with op.batch_alter_table("tenants") as tenants:
        for column in reversed(TENANT_COLUMNS):
            tenants.drop_column(column)
