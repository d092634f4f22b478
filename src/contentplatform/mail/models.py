"""Mail's tables (issue 40): the outbox."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, Uuid, text
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, UTCDateTime

# The rows the reconciler looks at: those not yet settled.
UNSETTLED = text("status IN ('queued', 'sending')")


class OutboxMail(RecordMixin, Base):
    """One message to send, once per `message_id` (the caller's key: a second send with it adds
    nothing). `status`: `queued` (waiting for an attempt, or for its next one), `sending` (an
    attempt is handing it to the SMTP server), `sent` (accepted by the server: `sent_at`),
    `failed` (a permanent 5xx answer or every attempt spent: `last_error` says why)."""

    __tablename__ = "mail_outbox"
    __table_args__ = (
        Index(
            "ix_mail_outbox_unsettled",
            "created_at",
            postgresql_where=UNSETTLED,
            sqlite_where=UNSETTLED,
        ),
    )

    message_id: Mapped[str] = mapped_column(String(200), nullable=False, unique=True)
    # Whose mail it is, when it is a tenant's (a notification, a ticket's reply); None for the
    # platform's own (the public contact form's acknowledgement).
    tenant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), nullable=True, index=True
    )
    # What the mail is about (notification, support_reply, contact_ack...), for the operator.
    kind: Mapped[str] = mapped_column(String(40), nullable=False)
    to_address: Mapped[str] = mapped_column(String(254), nullable=False)
    reply_to: Mapped[str | None] = mapped_column(String(254), nullable=True)
    subject: Mapped[str] = mapped_column(String(200), nullable=False)
    body: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    last_error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
