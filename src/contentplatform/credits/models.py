"""The credit ledger (append-only) and credit reservations (holds)."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import ForeignKey, Index, Integer, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime, utcnow


class EntryType(StrEnum):
    monthly_grant = "monthly_grant"
    expiry = "expiry"
    debit = "debit"
    grant = "grant"
    adjustment = "adjustment"


class ReservationStatus(StrEnum):
    held = "held"
    committed = "committed"
    released = "released"
    expired = "expired"


class CreditLedgerEntry(TenantMixin, Base):
    """One movement of credits, signed. Rows are only ever inserted, never updated or deleted.

    `period` ("2026-11") is set only on `monthly_grant` and `expiry` rows: with the unique
    constraint it makes a month's grant and its expiry happen once per tenant, however many
    requests race to apply them (NULL periods never collide, so other rows are unconstrained).
    """

    __tablename__ = "credit_ledger"
    __table_args__ = (UniqueConstraint("tenant_id", "entry_type", "period"),)

    # No RecordMixin: an append-only row has no updated_at.
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    entry_type: Mapped[str] = mapped_column(String(20), nullable=False)
    amount: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str | None] = mapped_column(String(40))
    reservation_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("credit_reservations.id")
    )
    period: Mapped[str | None] = mapped_column(String(7))
    reason: Mapped[str] = mapped_column(String(500), nullable=False)
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
