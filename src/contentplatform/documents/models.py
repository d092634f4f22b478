from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Index, Integer, String, Text, Uuid, text
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, SoftDeleteMixin, TenantMixin, UTCDateTime

LIVE = text("deleted_at IS NULL")


class Document(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    __tablename__ = "documents"
    __table_args__ = (
        # One live document per storage path: a new upload there is a new version of it.
        Index(
            "uq_documents_tenant_id_storage_path_live",
            "tenant_id",
            "storage_path",
            unique=True,
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        ),
        # At most one primary knowledge document per tenant, even under racing requests.
        Index(
            "uq_documents_tenant_id_primary",
            "tenant_id",
            unique=True,
            sqlite_where=text("is_primary AND deleted_at IS NULL"),
            postgresql_where=text("is_primary AND deleted_at IS NULL"),
        ),
        Index("ix_documents_tenant_id_content_hash", "tenant_id", "content_hash"),
        Index("ix_documents_tenant_id_created_at", "tenant_id", "created_at"),
    )

    filename: Mapped[str] = mapped_column(String(255), nullable=False)
    file_type: Mapped[str] = mapped_column(String(10), nullable=False)
    storage_path: Mapped[str] = mapped_column(String(1024), nullable=False)
    source: Mapped[str] = mapped_column(String(20), nullable=False, default="upload")
    source_metadata: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    is_primary: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False, default="pending")
    error: Mapped[str | None] = mapped_column(Text)
    chunk_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    document_version: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    content_hash: Mapped[str | None] = mapped_column(String(64))
    size_bytes: Mapped[int | None] = mapped_column(Integer)
    # Where the extracted text of the current version lives in object storage.
    text_path: Mapped[str | None] = mapped_column(String(1100))
    # Each (re)try of an ingestion gets its own workflow id and credit reservation.
    ingest_attempt: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    ingest_reservation_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    ingest_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    archived_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    generation_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
