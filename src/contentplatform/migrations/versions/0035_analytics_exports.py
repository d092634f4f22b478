"""Analytics exports: a report written by a durable workflow to a file in object storage
(issue 38).

Revision 0035_analytics_exports of 2026-12-06.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0035_analytics_exports"
down_revision = "0034_ai_usage"

ACTIVE = sa.text("status IN ('queued', 'running')")
KEPT = sa.text("status = 'succeeded'")


def upgrade() -> None:
    op.create_table(
        "analytics_exports",
        *shapes.owned(),
        sa.Column("report", sa.String(40), nullable=False),
        sa.Column("format", sa.String(10), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("row_count", sa.Integer(), nullable=True),
        sa.Column("bytes", sa.BigInteger(), nullable=True),
        sa.Column("storage_path", sa.String(1024), nullable=True),
        sa.Column("file_expires_at", UTCDateTime(), nullable=True),
        sa.Column("error_code", sa.String(40), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("idempotency_key", sa.String(128), nullable=True),
        sa.Column("created_by", sa.String(255), nullable=True),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("analytics_exports"),
    )
    shapes.index_tenant("analytics_exports")
    op.create_index(
        "ix_analytics_exports_tenant_id_created_at",
        "analytics_exports",
        ["tenant_id", "created_at"],
    )
    op.create_index(
        "uq_analytics_exports_tenant_id_idempotency_key",
        "analytics_exports",
        ["tenant_id", "idempotency_key"],
        unique=True,
    )
    op.create_index(
        "ix_analytics_exports_active",
        "analytics_exports",
        ["tenant_id", "status"],
        sqlite_where=ACTIVE,
        postgresql_where=ACTIVE,
    )
    op.create_index(
        "ix_analytics_exports_kept",
        "analytics_exports",
        ["file_expires_at"],
        sqlite_where=KEPT,
        postgresql_where=KEPT,
    )


def downgrade() -> None:
    op.drop_table("analytics_exports")
