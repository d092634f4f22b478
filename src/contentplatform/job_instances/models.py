from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    Uuid,
    event,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime

# Instances planned ahead (jobInstances.create) that no run has taken yet.
WAITING = text("status = 'pending' AND run_id IS NULL")


class JobInstance(RecordMixin, TenantMixin, Base):
    """One occurrence of a job: planned, run, skipped or failed."""

    __tablename__ = "job_instances"
    __table_args__ = (
        # One instance per occurrence, however many schedulers tick or retry.
        UniqueConstraint("job_id", "scheduled_date"),
        Index("ix_job_instances_tenant_id_scheduled_date", "tenant_id", "scheduled_date"),
        # Automation analytics count from this index alone (job_instances.repository): finished
        # runs by when they finished, runs in flight (finished_at NULL) by their start, and
        # ranks their durations.
        Index(
            "ix_job_instances_runs",
            "tenant_id",
            "finished_at",
            "started_at",
            "status",
            "job_id",
            "duration_ms",
        ),
        Index("ix_job_instances_tenant_id_started_at", "tenant_id", "started_at"),
        Index(
            "ix_job_instances_waiting",
            "scheduled_date",
            sqlite_where=WAITING,
            postgresql_where=WAITING,
        ),
    )

    job_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False
    )
    scheduled_date: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    day_mode: Mapped[str] = mapped_column(String(20), nullable=False)  # generate|select_existing
    keywords: Mapped[list[str] | None] = mapped_column(JSON)
    content_instructions: Mapped[str | None] = mapped_column(Text)
    images: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    document_ids: Mapped[list[str] | None] = mapped_column(JSON)
    # pending | running | completed | failed | skipped
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    step: Mapped[str | None] = mapped_column(String(20))
    percent: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    topic: Mapped[str | None] = mapped_column(String(500))
    draft_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    # Why it failed or was skipped.
    error: Mapped[str | None] = mapped_column(Text)
    # A failed instance's reason code (job_instances.service.PROBLEMS); None unless failed.
    problem: Mapped[str | None] = mapped_column(String(40))
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # A run that ran to its end (completed or failed, having started): finished_at - started_at
    # in whole milliseconds, never below 0; None otherwise. Kept by `_keep_duration` whenever the
    # row is written, so that analytics sum and rank an integer the index holds rather than
    # working it out of two instants for every run of a period.
    duration_ms: Mapped[int | None] = mapped_column(BigInteger)


# The statuses of a run that ran to its end: a duration is theirs.
TIMED = ("completed", "failed")


def run_duration_ms(instance: JobInstance) -> int | None:
    if instance.status not in TIMED or instance.started_at is None or instance.finished_at is None:
        return None
    return max(0, round((instance.finished_at - instance.started_at).total_seconds() * 1000))


@event.listens_for(JobInstance, "before_insert")
@event.listens_for(JobInstance, "before_update")
def _keep_duration(_mapper: Any, _connection: Any, instance: JobInstance) -> None:
    instance.duration_ms = run_duration_ms(instance)
