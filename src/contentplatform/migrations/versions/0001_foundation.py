"""Foundation: tenants, users, memberships (revision of 2026-11-22)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.migrations import shapes

revision = "0001_foundation"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "tenants",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("idp_org_id", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        *shapes.timestamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
        sa.UniqueConstraint("idp_org_id", name=op.f("uq_tenants_idp_org_id")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("idp_user_id", sa.String(255), nullable=False),
        sa.Column("email", sa.String(320), nullable=True),
        sa.Column("name", sa.String(255), nullable=True),
        *shapes.timestamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("idp_user_id", name=op.f("uq_users_idp_user_id")),
    )
    op.create_table(
        "memberships",
        *shapes.owned(),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        *shapes.timestamps(),
        *shapes.keys("memberships"),
        shapes.references("memberships", "user_id", "users"),
        sa.UniqueConstraint("tenant_id", "user_id", name=op.f("uq_memberships_tenant_id_user_id")),
    )
    shapes.index_tenant("memberships")
    op.create_index(op.f("ix_memberships_user_id"), "memberships", ["user_id"])


def downgrade() -> None:
    op.drop_table("memberships")
    op.drop_table("users")
    op.drop_table("tenants")
