"""Media assets and their attachments to drafts (issue 22)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0026_media"
down_revision = "0025_crawl_runs"

LIVE = sa.text("deleted_at IS NULL")
FEATURED = sa.text("role = 'featured'")


def upgrade() -> None:
    op.create_table(
        "media_assets",
        *shapes.owned(),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("mime_type", sa.String(50), nullable=False),
        sa.Column("storage", sa.String(10), nullable=False),
        sa.Column("storage_path", sa.String(1024), nullable=True),
        sa.Column("hotlink_url", sa.Text(), nullable=True),
        sa.Column("hotlink_thumbnail_url", sa.Text(), nullable=True),
        sa.Column("renditions", sa.JSON(), nullable=False),
        sa.Column("thumbnail_path", sa.String(1024), nullable=True),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("content_hash", sa.String(64), nullable=True),
        sa.Column("title", sa.String(255), nullable=True),
        sa.Column("alt_text", sa.Text(), nullable=True),
        sa.Column("caption", sa.Text(), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("tag_keys", sa.Text(), nullable=False),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("provider", sa.String(40), nullable=True),
        sa.Column("provider_asset_id", sa.String(255), nullable=True),
        sa.Column("license", sa.JSON(), nullable=False),
        sa.Column("license_verified", sa.Boolean(), nullable=False),
        sa.Column("license_expires_at", UTCDateTime(), nullable=True),
        sa.Column("created_by", sa.String(255), nullable=True),
        *shapes.timestamps(),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *shapes.keys("media_assets"),
    )
    shapes.index_tenant("media_assets")
    op.create_index(
        "ix_media_assets_tenant_id_created_at_live",
        "media_assets",
        ["tenant_id", "created_at"],
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )
    op.create_index(
        "uq_media_assets_tenant_id_content_hash_live",
        "media_assets",
        ["tenant_id", "content_hash"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )
    op.create_index(
        "ix_media_assets_tenant_id_storage_path", "media_assets", ["tenant_id", "storage_path"]
    )
    op.create_index(
        "uq_media_assets_tenant_id_provider_asset_live",
        "media_assets",
        ["tenant_id", "provider", "provider_asset_id"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )

    op.create_table(
        "media_attachments",
        *shapes.owned(),
        sa.Column("media_id", sa.Uuid(), nullable=False),
        sa.Column("draft_id", sa.Uuid(), nullable=False),
        sa.Column("role", sa.String(10), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("attached_at", UTCDateTime(), nullable=False),
        *shapes.keys("media_attachments"),
        shapes.references("media_attachments", "media_id", "media_assets"),
        shapes.references("media_attachments", "draft_id", "drafts"),
        sa.UniqueConstraint(
            "media_id",
            "draft_id",
            "role",
            name=op.f("uq_media_attachments_media_id_draft_id_role"),
        ),
    )
    shapes.index_tenant("media_attachments")
    op.create_index("ix_media_attachments_draft_id", "media_attachments", ["draft_id"])
    op.create_index(
        "uq_media_attachments_draft_id_featured",
        "media_attachments",
        ["draft_id"],
        unique=True,
        sqlite_where=FEATURED,
        postgresql_where=FEATURED,
    )


def downgrade() -> None:
    for table in ("media_attachments", "media_assets"):
        op.drop_table(table)
