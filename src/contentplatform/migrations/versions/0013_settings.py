"""Tenant settings, brand voice, content strategy and content rules (issue 18)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.migrations import shapes

revision = "0013_settings"
down_revision = "0012_chunk_vectors"

# The brand voice and the content strategy: one row per version.
VERSIONED = ("brand_voices", "content_strategies")


def upgrade() -> None:
    op.create_table(
        "tenant_settings",
        *shapes.owned(),
        sa.Column("values", sa.JSON(), nullable=False),
        sa.Column("updated_by", sa.String(255), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("tenant_settings"),
        sa.UniqueConstraint("tenant_id", name="uq_tenant_settings_tenant_id"),
    )
    shapes.index_tenant("tenant_settings")
    for table in VERSIONED:
        op.create_table(
            table,
            *shapes.owned(),
            sa.Column("version", sa.Integer(), nullable=False),
            sa.Column("values", sa.JSON(), nullable=False),
            sa.Column("updated_by", sa.String(255), nullable=True),
            *shapes.timestamps(),
            *shapes.keys(table),
            sa.UniqueConstraint("tenant_id", "version", name=f"uq_{table}_tenant_id_version"),
        )
        shapes.index_tenant(table)
    op.create_table(
        "content_rules",
        *shapes.owned(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("type", sa.String(40), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("severity", sa.String(10), nullable=False),
        sa.Column("stages", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("content_rules"),
    )
    shapes.index_tenant("content_rules")


def downgrade() -> None:
    for table in ("content_rules", *reversed(VERSIONED), "tenant_settings"):
        op.drop_index(op.f(f"ix_{table}_tenant_id"), table_name=table)
        op.drop_table(table)
