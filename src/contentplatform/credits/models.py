"""Credit buckets, the ledger (append-only), holds, and each tenant's grant policy."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime, utcnow


class EntryType(StrEnum):
    grant = "grant"
    debit = "debit"
    refund = "refund"
    expiry = "expiry"
    adjustment = "adjustment"


class BucketSource(StrEnum):
    monthly_grant = "monthly_grant"
    top_up = "top_up"
    admin_grant = "admin_grant"


class ActorType(StrEnum):
    user = "user"
    system = "system"
    admin = "admin"
    api_key = "api_key"


class ReservationStatus(StrEnum):
    held = "held"
    committed = "committed"
    released = "released"
    expired = "expired"


class Owner(StrEnum):
    """Who settles a hold: the client that reserved it through the API, or the metered
    operation that took (or adopted) it."""

    client = "client"
    operation = "operation"


class CreditBucket(RecordMixin, TenantMixin, Base):
    """Credits granted together and expiring together. `remaining` is the one mutable figure:
    the sum of a tenant's `remaining` always equals the sum of its ledger."""

    __tablename__ = "credit_buckets"
    # `reference` applies a grant once (a checkout session, an invoice, "monthly:2026-11").
    __table_args__ = (UniqueConstraint("tenant_id", "reference"),)

    source: Mapped[str] = mapped_column(String(20), nullable=False)
    granted: Mapped[int] = mapped_column(Integer, nullable=False)
    remaining: Mapped[int] = mapped_column(Integer, nullable=False)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    period: Mapped[str | None] = mapped_column(String(7))
    reference: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(String(500), nullable=False)


class CreditAccount(RecordMixin, TenantMixin, Base):
    """A tenant's grant policy, set by billing; no row is the free plan's default policy."""

    __tablename__ = "credit_accounts"
    __table_args__ = (UniqueConstraint("tenant_id"),)

    monthly_credits: Mapped[int | None] = mapped_column(Integer)
    automatic: Mapped[bool] = mapped_column(Boolean, nullable=False)
    paused: Mapped[bool] = mapped_column(Boolean, nullable=False)
    rollover_cap: Mapped[int] = mapped_column(Integer, nullable=False)


class CreditLedgerEntry(TenantMixin, Base):
    """One movement of credits in one bucket, signed, with the tenant's balance after it.
    Rows are only ever inserted, never updated or deleted."""

    __tablename__ = "credit_ledger"
    __table_args__ = (
        Index("ix_credit_ledger_tenant_id_created_at", "tenant_id", "created_at"),
        # AI usage's line items of one generation run or job instance (analytics.aiUsageEvents).
        Index("ix_credit_ledger_tenant_id_workflow_run_id", "tenant_id", "workflow_run_id"),
        Index("ix_credit_ledger_tenant_id_job_instance_id", "tenant_id", "job_instance_id"),
    )

    # No RecordMixin: an append-only row has no updated_at.
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    entry_type: Mapped[str] = mapped_column(String(20), nullable=False)
    amount: Mapped[int] = mapped_column(Integer, nullable=False)
    balance_after: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str | None] = mapped_column(String(40))
    # Rows written before buckets (debits, expiries of the first model) have none.
    bucket_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, ForeignKey("credit_buckets.id"))
    reservation_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("credit_reservations.id")
    )
    period: Mapped[str | None] = mapped_column(String(7))
    actor_type: Mapped[str] = mapped_column(String(10), nullable=False, server_default="system")
    actor_id: Mapped[str | None] = mapped_column(String(255))
    resource_type: Mapped[str | None] = mapped_column(String(40))
    resource_id: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(String(500), nullable=False)
    # The model tokens a metered operation's commit used, on its first debit row (usage).
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    # What a metered operation's debit was for, on each of its rows (AI usage, issue 38): the
    # model its calls used (several: their names joined by "+", sorted), the generation run,
    # its workflow and job instance. None where not a model's work or not recorded (rows before
    # 0034, ingests, client-committed holds).
    model: Mapped[str | None] = mapped_column(String(100))
    workflow_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    workflow_run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    job_instance_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class CreditReservation(RecordMixin, TenantMixin, Base):
    """Credits held for one metered operation, keyed by the caller's idempotency key."""

    __tablename__ = "credit_reservations"
    __table_args__ = (
        UniqueConstraint("tenant_id", "kind", "idempotency_key"),
        # The reconciler's sweep of stale holds, across tenants.
        Index("ix_credit_reservations_status_expires_at", "status", "expires_at"),
    )

    kind: Mapped[str] = mapped_column(String(40), nullable=False)
    idempotency_key: Mapped[str] = mapped_column(String(255), nullable=False)
    amount: Mapped[int] = mapped_column(Integer, nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False, default="held")
    committed_amount: Mapped[int | None] = mapped_column(Integer)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    owner: Mapped[str] = mapped_column(String(10), nullable=False, server_default="operation")
    created_by: Mapped[str | None] = mapped_column(String(255))
    creator_type: Mapped[str | None] = mapped_column(String(10))
    resource_type: Mapped[str | None] = mapped_column(String(40))
    resource_id: Mapped[str | None] = mapped_column(String(255))
    settled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
