"""The llms.txt generated for a tenant's site (seo.generateLlmsTxt), one per tenant.

Revision 0045_seo_llms_txt of 2026-12-07 (issue 41).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0045_seo_llms_txt"
down_revision = "0044_page_audit_facts"


def upgrade() -> None:
    op.create_table(
        "seo_llms_txt",
        sa.Column("snapshot_id", sa.Uuid(), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("sections", sa.JSON(), nullable=False),
        sa.Column("link_count", sa.Integer(), nullable=False),
        sa.Column("generated_at", UTCDateTime(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["snapshot_id"],
            ["crawl_snapshots.id"],
            name=op.f("fk_seo_llms_txt_snapshot_id_crawl_snapshots"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_seo_llms_txt_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_llms_txt")),
        sa.UniqueConstraint("tenant_id", name="uq_seo_llms_txt_tenant_id"),
    )
    op.create_index(op.f("ix_seo_llms_txt_tenant_id"), "seo_llms_txt", ["tenant_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_seo_llms_txt_tenant_id"), table_name="seo_llms_txt")
    op.drop_table("seo_llms_txt")
