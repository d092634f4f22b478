from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    Uuid,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, SoftDeleteMixin, TenantMixin, UTCDateTime

# A job is scheduled exactly when it has a next run: paused, completed and deleted jobs have none.
SCHEDULED = text("deleted_at IS NULL AND next_run_at IS NOT NULL")


class Job(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    """A schedule of articles: what to write (topics, keywords, documents) and when."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_tenant_id_created_at", "tenant_id", "created_at"),
        # What the scheduler's tick reads: scheduled jobs by next_run_at, across tenants.
        Index("ix_jobs_due", "next_run_at", sqlite_where=SCHEDULED, postgresql_where=SCHEDULED),
    )

    name: Mapped[str] = mapped_column(String(100), nullable=False)
    job_type: Mapped[str] = mapped_column(String(20), nullable=False)  # one_off|recurring|scheduled
    # active | paused | processing | error | completed
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    cron_expression: Mapped[str | None] = mapped_column(String(120))
    # UTC instants as ISO 8601 strings, sorted.
    scheduled_dates: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    topics: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    topic_source: Mapped[str] = mapped_column(
        String(20), nullable=False
    )  # manual|knowledge|seo_plan
    # How many topics were used so far: the next run takes topics[topic_cursor % len(topics)].
    topic_cursor: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    keywords: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    content_instructions: Mapped[str | None] = mapped_column(Text)
    document_ids: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    auto_publish: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    auto_publish_threshold: Mapped[int | None] = mapped_column(Integer)
    publisher_connection_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    seo_action_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    # The workflow its runs use (its published version when a run starts); None: the
    # organization's default workflow, else the built-in definition. Never deleted while named.
    workflow_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, ForeignKey("workflows.id"))
    # A version of it the job's runs keep following whatever is published later; None: the
    # version live when each run starts.
    workflow_version: Mapped[int | None] = mapped_column(Integer)
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_by: Mapped[str | None] = mapped_column(String(255))
