"""Workflows, their published versions."""

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

from contentplatform.kit.db import (
    Base,
    RecordMixin,
    SoftDeleteMixin,
    TenantMixin,
    UTCDateTime,
    utcnow,
)

# The organization's default workflow (a deleted one is never the default).
DEFAULT = text("is_default AND deleted_at IS NULL")


class Workflow(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    """A pipeline definition: its working definition (`steps`, edited freely, saved even when
    it breaks a rule) and the numbers of its versions (workflow_versions): the latest, and the
    one new runs use (`published_version`, null until the first is published)."""

    __tablename__ = "workflows"
    __table_args__ = (
        Index("ix_workflows_tenant_id_updated_at", "tenant_id", "updated_at"),
        # One default per organization, even under racing setDefaults.
        Index(
            "uq_workflows_tenant_id_default",
            "tenant_id",
            unique=True,
            sqlite_where=DEFAULT,
            postgresql_where=DEFAULT,
        ),
    )

    name: Mapped[str] = mapped_column(String(100), nullable=False)
    description: Mapped[str | None] = mapped_column(Text)
    # [{key, type, name, enabled, config, on_error, retries, timeout_seconds}, ...] (catalog.step)
    steps: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False)
    status: Mapped[str] = mapped_column(String(10), nullable=False)  # active | archived
    is_default: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    published_version: Mapped[int | None] = mapped_column(Integer)
    # 0 until the first version is published.
    latest_version: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # The identity provider's id of whoever created it.
    created_by: Mapped[str | None] = mapped_column(String(255))


class WorkflowVersion(TenantMixin, Base):
    """One immutable version of a workflow: its steps as they were published, numbered from 1
    without gaps. A rollback copies an older version forward (`source_version`), so history is
    only ever appended to. Kept when the workflow is deleted: runs in flight keep reading it."""

    __tablename__ = "workflow_versions"
    __table_args__ = (UniqueConstraint("workflow_id", "version"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    workflow_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("workflows.id", ondelete="CASCADE"), nullable=False
    )
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    steps: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False)
    notes: Mapped[str | None] = mapped_column(Text)
    # The version a rollback copied; null for one published from the working definition.
    source_version: Mapped[int | None] = mapped_column(Integer)
    created_by: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
