"""Support's tables (issue 40): tickets and their messages, and the failed requests a ticket
may cite.

A ticket belongs to a tenant (opened in the app, `source` app) or to none (a message of the
public contact form, `source` contact). Its `number` counts per tenant, and across contact
messages for those (`number_scope`: the tenant's id, or `contact`), so a user quotes "#12".

A failed request (request_log.py) is one row per request of a tenant's member that the service
answered with a problem, kept 30 days, so staff read what a cited `x-request-id` was.
"""

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
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, UTCDateTime, utcnow

CONTACT_SCOPE = "contact"


class SupportTicket(RecordMixin, Base):
    __tablename__ = "support_tickets"
    __table_args__ = (
        UniqueConstraint("number_scope", "number"),
        Index("ix_support_tickets_tenant_id_status", "tenant_id", "status"),
        Index("ix_support_tickets_last_message_at", "last_message_at"),
    )

    # None for a contact-form message, which no tenant owns.
    tenant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE")
    )
    number_scope: Mapped[str] = mapped_column(String(36), nullable=False)
    number: Mapped[int] = mapped_column(Integer, nullable=False)
    source: Mapped[str] = mapped_column(String(10), nullable=False)  # app | contact
    subject: Mapped[str] = mapped_column(String(200), nullable=False)
    category: Mapped[str] = mapped_column(String(20), nullable=False)
    priority: Mapped[str] = mapped_column(String(10), nullable=False)
    status: Mapped[str] = mapped_column(String(10), nullable=False)  # open|pending|resolved|closed
    # The identity provider's subject of who opened it (None for a contact message), and the
    # name and address replies are mailed to.
    created_by: Mapped[str | None] = mapped_column(String(255))
    requester_name: Mapped[str | None] = mapped_column(String(255))
    requester_email: Mapped[str | None] = mapped_column(String(320))
    # A contact message's company and topic (sales|support|partnership|other).
    company: Mapped[str | None] = mapped_column(String(200))
    topic: Mapped[str | None] = mapped_column(String(20))
    # The x-request-id values of the failed calls it cites, and the resource it was opened from.
    request_ids: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    resource_type: Mapped[str | None] = mapped_column(String(40))
    resource_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    last_message_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    # The first public reply of staff, and the last move to resolved (kept once closed).
    first_response_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    close_reason: Mapped[str | None] = mapped_column(String(500))


class SupportMessage(RecordMixin, Base):
    __tablename__ = "support_messages"
    __table_args__ = (Index("ix_support_messages_ticket_id_created_at", "ticket_id", "created_at"),)

    ticket_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("support_tickets.id", ondelete="CASCADE"), nullable=False
    )
    # The ticket's tenant, repeated so every query of a tenant's messages filters on it first.
    tenant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE")
    )
    author_type: Mapped[str] = mapped_column(String(10), nullable=False)  # customer|staff|system
    author_id: Mapped[str | None] = mapped_column(String(255))
    author_name: Mapped[str | None] = mapped_column(String(255))
    body: Mapped[str] = mapped_column(Text, nullable=False)
    # A staff note no customer ever sees.
    internal: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    # Ids of media assets of the ticket's tenant (uploaded through media.createUploadUrl).
    attachment_ids: Mapped[list[Any]] = mapped_column(JSON, nullable=False, default=list)


class FailedRequest(Base):
    """A request of a tenant's member answered with a problem (never a 429): written once,
    after the answer, and deleted after 30 days. Nothing else about the request is kept."""

    __tablename__ = "support_failed_requests"
    __table_args__ = (
        Index("ix_support_failed_requests_tenant_id_request_id", "tenant_id", "request_id"),
        Index("ix_support_failed_requests_created_at", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    # The x-request-id it was answered with (the service's, or the client's own when sane).
    request_id: Mapped[str] = mapped_column(String(128), nullable=False)
    operation: Mapped[str] = mapped_column(String(100), nullable=False)  # its operationId
    method: Mapped[str] = mapped_column(String(10), nullable=False)
    status: Mapped[int] = mapped_column(SmallInteger, nullable=False)
    # The problem's code (NOT_FOUND, ...); None for an answer that was no problem of ours.
    code: Mapped[str | None] = mapped_column(String(40))
    # When it was answered.
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
