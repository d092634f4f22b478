"""Media assets and their attachments to drafts.

An asset is an uploaded file kept in the object store (`storage` internal: the cleaned original
at `storage_path`, its web-sized renditions and thumbnail beside it) or a stock photo kept at
its provider (`storage` hotlink: `hotlink_url`, never copied). Its licence is a JSON object;
what the lists filter on is kept beside it in two columns (`license_verified`,
`license_expires_at`), written with it by the service.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, SoftDeleteMixin, TenantMixin, UTCDateTime

LIVE = text("deleted_at IS NULL")
FEATURED = text("role = 'featured'")


class MediaAsset(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    __tablename__ = "media_assets"
    __table_args__ = (
        Index(
            "ix_media_assets_tenant_id_created_at_live",
            "tenant_id",
            "created_at",
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        ),
        # One live asset per content in a tenant: a second upload of the same bytes is the
        # first asset (media.confirmUpload's `unchanged`), even under racing confirms.
        Index(
            "uq_media_assets_tenant_id_content_hash_live",
            "tenant_id",
            "content_hash",
            unique=True,
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        ),
        # Which asset a stored file is (a confirm at a path already taken).
        Index("ix_media_assets_tenant_id_storage_path", "tenant_id", "storage_path"),
        # And one live asset per stock photo (provider and its id).
        Index(
            "uq_media_assets_tenant_id_provider_asset_live",
            "tenant_id",
            "provider",
            "provider_asset_id",
            unique=True,
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        ),
    )

    kind: Mapped[str] = mapped_column(String(10), nullable=False)  # image | video
    filename: Mapped[str] = mapped_column(String(255), nullable=False)
    mime_type: Mapped[str] = mapped_column(String(50), nullable=False)
    storage: Mapped[str] = mapped_column(String(10), nullable=False)  # internal | hotlink
    # internal: the cleaned original in the object store.
    storage_path: Mapped[str | None] = mapped_column(String(1024))
    # hotlink: the provider's URL of the image and of its thumbnail (kept, never copied).
    hotlink_url: Mapped[str | None] = mapped_column(Text)
    hotlink_thumbnail_url: Mapped[str | None] = mapped_column(Text)
    # internal images: {name: {path, width, height, bytes}} ("w1600", "w800"; none larger
    # than the original), and the thumbnail's path.
    renditions: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    thumbnail_path: Mapped[str | None] = mapped_column(String(1024))
    # As shown (EXIF orientation applied); unknown for videos.
    width: Mapped[int | None] = mapped_column(Integer)
    height: Mapped[int | None] = mapped_column(Integer)
    size_bytes: Mapped[int | None] = mapped_column(BigInteger)
    # sha256 of the stored original (internal storage only).
    content_hash: Mapped[str | None] = mapped_column(String(64))
    title: Mapped[str | None] = mapped_column(String(255))
    alt_text: Mapped[str | None] = mapped_column(Text)
    caption: Mapped[str | None] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    # The tags lower-cased, one per line between line breaks ("\nsea\nsky\n"): what the tag
    # filter and the search match, alike on SQLite and PostgreSQL.
    tag_keys: Mapped[str] = mapped_column(Text, nullable=False, default="\n")
    source: Mapped[str] = mapped_column(String(20), nullable=False)  # upload|stock|ai_generated
    provider: Mapped[str | None] = mapped_column(String(40))
    provider_asset_id: Mapped[str | None] = mapped_column(String(255))
    # {type, source_name, source_url, attribution: {required, text, author_name, author_url},
    #  usage_rights: {commercial, editorial_only, modification}, expires_at, notes}
    license: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # A type, and an attribution text wherever attribution is required.
    license_verified: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    license_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The last licence alert told ("expiring:<expiry>" or "expired:<expiry>"), so each is told
    # once (media/durable.py).
    license_alerted: Mapped[str | None] = mapped_column(String(60))
    # The identity provider's id of whoever added it.
    created_by: Mapped[str | None] = mapped_column(String(255))


class MediaAttachment(TenantMixin, Base):
    """An asset used by a draft: as its featured image (one per draft), inline or in a
    gallery, at a position among the draft's attachments of that role."""

    __tablename__ = "media_attachments"
    __table_args__ = (
        UniqueConstraint("media_id", "draft_id", "role"),
        Index("ix_media_attachments_draft_id", "draft_id"),
        # One featured image per draft, even under racing attaches.
        Index(
            "uq_media_attachments_draft_id_featured",
            "draft_id",
            unique=True,
            sqlite_where=FEATURED,
            postgresql_where=FEATURED,
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    media_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("media_assets.id", ondelete="CASCADE"), nullable=False
    )
    draft_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("drafts.id", ondelete="CASCADE"), nullable=False
    )
    role: Mapped[str] = mapped_column(String(10), nullable=False)  # featured | inline | gallery
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    attached_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
