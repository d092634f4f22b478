"""The tenant's settings, its brand voice and content strategy (one row per version), its
content rules and its API keys."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime


class TenantSettings(RecordMixin, TenantMixin, Base):
    """What the tenant changed of its settings (snake_case groups, as the record shows them);
    what it never set reads as the default (schemas.py). The tenant's name is `tenants.name`."""

    __tablename__ = "tenant_settings"
    __table_args__ = (UniqueConstraint("tenant_id"),)

    values: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    updated_by: Mapped[str | None] = mapped_column(String(255))


class BrandVoice(RecordMixin, TenantMixin, Base):
    """One version of the brand voice: each update adds a row, the highest version is current
    (a draft's provenance names the version it was written with, so the old ones stay)."""

    __tablename__ = "brand_voices"
    __table_args__ = (UniqueConstraint("tenant_id", "version"),)

    version: Mapped[int] = mapped_column(Integer, nullable=False)
    values: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    updated_by: Mapped[str | None] = mapped_column(String(255))


class ContentStrategy(RecordMixin, TenantMixin, Base):
    """One version of the content strategy, as BrandVoice."""

    __tablename__ = "content_strategies"
    __table_args__ = (UniqueConstraint("tenant_id", "version"),)

    version: Mapped[int] = mapped_column(Integer, nullable=False)
    values: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    updated_by: Mapped[str | None] = mapped_column(String(255))


class ContentRule(RecordMixin, TenantMixin, Base):
    """An editorial lint rule: its `config` was validated for its `type` (rules.py)."""

    __tablename__ = "content_rules"

    name: Mapped[str] = mapped_column(String(100), nullable=False)
    type: Mapped[str] = mapped_column(String(40), nullable=False)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    severity: Mapped[str] = mapped_column(String(10), nullable=False)  # error | warning
    stages: Mapped[list[str]] = mapped_column(JSON, nullable=False)  # generation|review|publish
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    created_by: Mapped[str | None] = mapped_column(String(255))


class ApiKey(RecordMixin, TenantMixin, Base):
    """A credential for server-to-server use: fixes the tenant, acts as member or editor. Only
    the SHA-256 of the secret is kept (auth/api_keys.py). A key acts as a user of its own
    (`user_id`, subject `apikey_<id>`), so what it creates names the key, not whoever made it."""

    __tablename__ = "api_keys"

    name: Mapped[str] = mapped_column(String(100), nullable=False)
    prefix: Mapped[str] = mapped_column(String(20), nullable=False)
    secret_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    role: Mapped[str] = mapped_column(String(10), nullable=False)  # member | editor
    user_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    )
    # The identity provider's id of the admin who made it (removing them revokes it).
    created_by: Mapped[str] = mapped_column(String(255), nullable=False)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_by: Mapped[str | None] = mapped_column(String(255))
