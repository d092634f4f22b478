"""Documents (revision of 2026-11-22)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0003_documents"
down_revision = "0002_credits"

LIVE = sa.text("deleted_at IS NULL")
LIVE_PRIMARY = sa.text("is_primary AND deleted_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "documents",
        *shapes.owned(),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("file_type", sa.String(10), nullable=False),
        sa.Column("storage_path", sa.String(1024), nullable=False),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("source_metadata", sa.JSON(), nullable=False),
        sa.Column("is_primary", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("document_version", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=True),
        sa.Column("size_bytes", sa.Integer(), nullable=True),
        sa.Column("text_path", sa.String(1100), nullable=True),
        sa.Column("ingest_attempt", sa.Integer(), nullable=False),
        sa.Column("ingest_reservation_id", sa.Uuid(), nullable=True),
        sa.Column("ingest_started_at", UTCDateTime(), nullable=True),
        sa.Column("archived_at", UTCDateTime(), nullable=True),
        sa.Column("generation_count", sa.Integer(), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("documents"),
    )
    shapes.index_tenant("documents")
    op.create_index(
        "uq_documents_tenant_id_storage_path_live",
        "documents",
        ["tenant_id", "storage_path"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )
    op.create_index(
        "uq_documents_tenant_id_primary",
        "documents",
        ["tenant_id"],
        unique=True,
        sqlite_where=LIVE_PRIMARY,
        postgresql_where=LIVE_PRIMARY,
    )
    op.create_index(
        "ix_documents_tenant_id_content_hash", "documents", ["tenant_id", "content_hash"]
    )
    op.create_index("ix_documents_tenant_id_created_at", "documents", ["tenant_id", "created_at"])


def downgrade() -> None:
    op.drop_table("documents")
