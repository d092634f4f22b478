"""PageSpeed results (seo.runPageSpeed): one row per URL and strategy measured, its runs'
medians, their spread and the Chrome UX Report field data.

Revision 0049_seo_pagespeed of 2026-12-07 (issue 41).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0049_seo_pagespeed"
down_revision = "0048_seo_audits"

PENDING = sa.text("status = 'pending'")


def upgrade() -> None:
    op.create_table(
        "seo_pagespeed_results",
        sa.Column("sync_run_id", sa.Uuid(), nullable=True),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("url_hash", sa.String(length=64), nullable=False),
        sa.Column("strategy", sa.String(length=10), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("categories", sa.JSON(), nullable=False),
        sa.Column("runs_wanted", sa.Integer(), nullable=False),
        sa.Column("scores", sa.JSON(), nullable=True),
        sa.Column("lab", sa.JSON(), nullable=True),
        sa.Column("field", sa.JSON(), nullable=True),
        sa.Column("failed_audits", sa.JSON(), nullable=False),
        sa.Column("runs", sa.JSON(), nullable=False),
        sa.Column("spread", sa.JSON(), nullable=True),
        sa.Column("lighthouse_version", sa.String(length=40), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("fetched_at", UTCDateTime(), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_seo_pagespeed_results_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_pagespeed_results")),
    )
    op.create_index(
        op.f("ix_seo_pagespeed_results_tenant_id"), "seo_pagespeed_results", ["tenant_id"]
    )
    op.create_index(
        "ix_seo_pagespeed_results_tenant_id_created_at",
        "seo_pagespeed_results",
        ["tenant_id", "created_at"],
    )
    op.create_index(
        "ix_seo_pagespeed_results_latest",
        "seo_pagespeed_results",
        ["tenant_id", "url_hash", "strategy", "created_at"],
    )
    op.create_index(
        "ix_seo_pagespeed_results_run", "seo_pagespeed_results", ["tenant_id", "sync_run_id"]
    )
    op.create_index(
        "ix_seo_pagespeed_results_pending",
        "seo_pagespeed_results",
        ["created_at"],
        sqlite_where=PENDING,
        postgresql_where=PENDING,
    )


def downgrade() -> None:
    for name in (
        "ix_seo_pagespeed_results_pending",
        "ix_seo_pagespeed_results_run",
        "ix_seo_pagespeed_results_latest",
        "ix_seo_pagespeed_results_tenant_id_created_at",
        "ix_seo_pagespeed_results_tenant_id",
    ):
        op.drop_index(name, table_name="seo_pagespeed_results")
    op.drop_table("seo_pagespeed_results")
