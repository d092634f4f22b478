"""The tenant's settings, its brand voice and content strategy (one row per version), and its
content rules."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin


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
