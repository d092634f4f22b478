from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime


class GenerationRun(RecordMixin, TenantMixin, Base):
    """One execution of the article pipeline for one draft."""

    __tablename__ = "generation_runs"
    __table_args__ = (
        # The same idempotency key of a tenant always means the same run.
        UniqueConstraint("tenant_id", "idempotency_key"),
        Index("ix_generation_runs_tenant_id_created_at", "tenant_id", "created_at"),
        Index("ix_generation_runs_status", "status"),
        Index("ix_generation_runs_tenant_id_workflow_id", "tenant_id", "workflow_id", "created_at"),
    )

    kind: Mapped[str] = mapped_column(String(20), nullable=False)  # blog | regenerate
    # queued -> running (<-> waiting_review at a review gate) -> succeeded | failed | cancelled
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    step: Mapped[str | None] = mapped_column(String(20))
    percent: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # {code, message, retryable}
    draft_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("drafts.id", ondelete="CASCADE"), nullable=False, index=True
    )
    job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    instance_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    idempotency_key: Mapped[str] = mapped_column(String(255), nullable=False)
    # What was asked: topic, keywords, contentInstructions, documentIds.
    request: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    reservation_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    credits_committed: Mapped[int | None] = mapped_column(Integer)
    # The model calls this run made (or reused from the run it retries without their having been
    # paid), by the fingerprint of each call's inputs: {fingerprint: {step, input_tokens,
    # output_tokens, words}}. What it costs is priced from these (charges.charge_of), also
    # when it is cancelled half way. Keyed so that a step run again after a crash counts once.
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    retry_of: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    created_by: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The workflow definition the run follows, frozen when it was asked for (a version published
    # later never changes a run in flight): the workflow and version (None: the built-in
    # definition; a version None with a workflow: its working definition, a test run), and
    # `{name, steps}` as workflows.service.Definition holds them.
    workflow_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    workflow_version: Mapped[int | None] = mapped_column(Integer)
    definition: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    trigger: Mapped[str] = mapped_column(
        String(20), nullable=False, default="api"
    )  # api|test|job_instance
    # Each step's progress: [{key, type, name, status, attempts, started_at, finished_at,
    # output_summary, error}], score and finalize appended (tokens and credits from `usage`).
    steps: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    # At a review gate: when the wait ends and the run fails.
    waiting_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # What a succeeded run wrote: {title, excerpt, seo_score} (a test run's only output when it
    # keeps no draft).
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
