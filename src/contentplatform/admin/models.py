"""Admin's tables (issue 40): the credit grants an operator made, by idempotency key, and the
replays of inbound provider events."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Uuid, text
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, UTCDateTime


class AdminCreditGrant(RecordMixin, Base):
    """One admin.grantCredits, kept by its idempotency key (unique across the platform, as
    Stripe's are per account): a repeat with the same body answers the same ledger entry, a
    repeat with another body is refused. `request_hash` is the SHA-256 of the body and the
    tenant."""

    __tablename__ = "admin_credit_grants"

    idempotency_key: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False, index=True
    )
    request_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    ledger_entry_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    amount: Mapped[int] = mapped_column(Integer, nullable=False)
    granted_by: Mapped[str] = mapped_column(String(255), nullable=False)


class InboundReplay(RecordMixin, Base):
    """One admin.replayWebhookEvent: which stored inbound event (`source` identity|payments and
    its row id) an operator had processed again, and who."""

    __tablename__ = "inbound_event_replays"

    source: Mapped[str] = mapped_column(String(20), nullable=False)
    event_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False, index=True)
    replayed_by: Mapped[str] = mapped_column(String(255), nullable=False)


# admin.startImpersonation's sessions (admin/impersonations/): the rows that hold a session open.
OPEN_SESSION = text("ended_at IS NULL")


class ImpersonationSession(RecordMixin, Base):
    """One impersonation session (admin/impersonations/): the superadmin (`actor`, their
    subject) acting in a tenant as a member (`user_id`, `user_subject`; `synthetic`: a read-only
    stand-in made for the session), why (`reason`, and for read_write the support ticket), in
    which `mode`, until `expires_at`; `ended_at` when it was ended (or found expired). One open
    session per superadmin, held by a unique index on the open rows."""

    __tablename__ = "impersonation_sessions"
    __table_args__ = (
        Index(
            "uq_impersonation_sessions_open_actor",
            "actor",
            unique=True,
            sqlite_where=OPEN_SESSION,
            postgresql_where=OPEN_SESSION,
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False, index=True
    )
    actor: Mapped[str] = mapped_column(String(255), nullable=False)
    user_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    )
    user_subject: Mapped[str] = mapped_column(String(255), nullable=False)
    synthetic: Mapped[bool] = mapped_column(Boolean, nullable=False)
    reason: Mapped[str] = mapped_column(String(500), nullable=False)
    ticket_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    mode: Mapped[str] = mapped_column(String(20), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    ended_by: Mapped[str | None] = mapped_column(String(255))


class KnownSuperadmin(RecordMixin, Base):
    """A subject seen calling admin.* with a superadmin token (the guard records each once per
    process): no impersonation session may act as one."""

    __tablename__ = "known_superadmins"

    subject: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)
