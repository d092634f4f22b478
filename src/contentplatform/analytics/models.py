"""The tables of analytics: exports (a report written to a file in object storage). The
figures themselves are read from the domains that hold them; analytics keeps no copy."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime

# An export still to be written: at most MAX_ACTIVE of them per organization.
ACTIVE_STATUSES = ("queued", "running")
ACTIVE = text("status IN ('queued', 'running')")
# A written file still kept: the sweep expires it once file_expires_at has passed.
KEPT = text("status = 'succeeded'")


class Export(RecordMixin, TenantMixin, Base):
    """One export of a report: queued -> running -> succeeded | failed | cancelled, and a
    succeeded one expired once its file is deleted (file_expires_at)."""

    __tablename__ = "analytics_exports"
    __table_args__ = (
        Index("ix_analytics_exports_tenant_id_created_at", "tenant_id", "created_at"),
        # The same idempotency key names one export of an organization, even under racing
        # creates (NULL keys are all distinct).
        Index(
            "uq_analytics_exports_tenant_id_idempotency_key",
            "tenant_id",
            "idempotency_key",
            unique=True,
        ),
        # The organization's active exports (the 5 allowed) and the reconciler's sweep.
        Index(
            "ix_analytics_exports_active",
            "tenant_id",
            "status",
            sqlite_where=ACTIVE,
            postgresql_where=ACTIVE,
        ),
        # The expiry sweep: kept files by when they go.
        Index(
            "ix_analytics_exports_kept",
            "file_expires_at",
            sqlite_where=KEPT,
            postgresql_where=KEPT,
        ),
    )

    report: Mapped[str] = mapped_column(String(40), nullable=False)
    format: Mapped[str] = mapped_column(String(10), nullable=False)  # csv | jsonl
    params: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    # queued | running | succeeded | failed | cancelled | expired
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    row_count: Mapped[int | None] = mapped_column(Integer)
    bytes: Mapped[int | None] = mapped_column(BigInteger)
    storage_path: Mapped[str | None] = mapped_column(String(1024))
    file_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    error_code: Mapped[str | None] = mapped_column(String(40))
    error_message: Mapped[str | None] = mapped_column(Text)
    idempotency_key: Mapped[str | None] = mapped_column(String(128))
    created_by: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
