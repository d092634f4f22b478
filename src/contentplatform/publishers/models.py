from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
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

# A tenant's default connection: at most one (a partial unique index).
DEFAULT = text("is_default AND deleted_at IS NULL")
# Attempts whose work is not done: what the reconciler looks at.
UNFINISHED = text("status IN ('scheduled', 'pending', 'running')")


class PublisherConnection(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    """A CMS or webhook target of one tenant. Credentials and the signing secret are stored
    encrypted (publishers/vault.py) and never leave the service; `credentials_hint` is shown."""

    __tablename__ = "publisher_connections"
    __table_args__ = (
        Index("ix_publisher_connections_tenant_id_created_at", "tenant_id", "created_at"),
        Index(
            "uq_publisher_connections_default",
            "tenant_id",
            unique=True,
            sqlite_where=DEFAULT,
            postgresql_where=DEFAULT,
        ),
    )

    name: Mapped[str] = mapped_column(String(100), nullable=False)
    type: Mapped[str] = mapped_column(String(20), nullable=False)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    credentials_sealed: Mapped[str | None] = mapped_column(Text)
    credentials_hint: Mapped[str | None] = mapped_column(String(100))
    signing_secret_sealed: Mapped[str | None] = mapped_column(Text)
    # After publishers.rotateSecret, the secret it replaced: webhook deliveries carry its
    # signature too until `previous_secret_expires_at`, so receivers can switch secrets.
    previous_signing_secret_sealed: Mapped[str | None] = mapped_column(Text)
    previous_secret_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(String(20), nullable=False)  # active | error | disabled
    is_default: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    capabilities: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    last_tested_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_test_ok: Mapped[bool | None] = mapped_column(Boolean)
    last_error: Mapped[str | None] = mapped_column(Text)


class PublishAttempt(RecordMixin, TenantMixin, Base):
    """One request to put a draft on a target (or take it down), with every try it took."""

    __tablename__ = "publish_attempts"
    __table_args__ = (
        Index("ix_publish_attempts_tenant_id_draft_id", "tenant_id", "draft_id", "created_at"),
        Index(
            "ix_publish_attempts_tenant_id_connection_id",
            "tenant_id",
            "connection_id",
            "created_at",
        ),
        Index(
            "ix_publish_attempts_unfinished",
            "created_at",
            sqlite_where=UNFINISHED,
            postgresql_where=UNFINISHED,
        ),
    )

    draft_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("drafts.id", ondelete="CASCADE"), nullable=False
    )
    connection_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("publisher_connections.id", ondelete="CASCADE"), nullable=False
    )
    mode: Mapped[str] = mapped_column(
        String(20), nullable=False
    )  # publish|draft|schedule|unpublish
    # scheduled | pending | running | succeeded | failed | cancelled
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    tries: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    draft_version: Mapped[int] = mapped_column(Integer, nullable=False)
    external_id: Mapped[str | None] = mapped_column(String(255))
    external_url: Mapped[str | None] = mapped_column(Text)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    triggered_by: Mapped[str] = mapped_column(
        String(20), nullable=False
    )  # user|auto_publish|schedule
    triggered_by_id: Mapped[str | None] = mapped_column(String(255))
    scheduled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Publication(RecordMixin, TenantMixin, Base):
    """A draft's copy on one target: republishing updates it rather than making another."""

    __tablename__ = "publications"
    __table_args__ = (UniqueConstraint("draft_id", "connection_id"),)

    draft_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("drafts.id", ondelete="CASCADE"), nullable=False
    )
    connection_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("publisher_connections.id", ondelete="CASCADE"), nullable=False
    )
    external_id: Mapped[str] = mapped_column(String(255), nullable=False)
    external_url: Mapped[str | None] = mapped_column(Text)
    remote_version: Mapped[str | None] = mapped_column(String(255))
    remote_status: Mapped[str] = mapped_column(String(20), nullable=False)
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
