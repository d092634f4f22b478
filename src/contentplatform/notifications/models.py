"""The caller's watches (what they chose to hear of) and the notifications made for them.

Users are named by their identity provider's subject (`identity.subject`), as drafts name their
assignee and events their actor.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON, Index, String, UniqueConstraint, Uuid, text
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime, utcnow


class Watch(RecordMixin, TenantMixin, Base):
    """One user's watch on one resource of the tenant, or on the tenant itself (the tenant watch:
    the role defaults and tenant-wide event types, routing.py). One row per (user, resource)."""

    __tablename__ = "watches"
    __table_args__ = (
        UniqueConstraint("tenant_id", "subject", "resource_type", "resource_id"),
        # The listener's look-up: who watches the resources a batch of events names.
        Index("ix_watches_tenant_id_resource", "tenant_id", "resource_type", "resource_id"),
    )

    subject: Mapped[str] = mapped_column(String(255), nullable=False)
    # tenant | draft | job | publisher | document
    resource_type: Mapped[str] = mapped_column(String(20), nullable=False)
    # The tenant's own id for the tenant watch (the API shows null), so one plain unique
    # constraint holds "one watch per (user, resource)" for it too.
    resource_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    # The event types chosen; None: the defaults (every type that fits the resource; for the
    # tenant watch the defaults of the member's role at the time of each event).
    events: Mapped[list[str] | None] = mapped_column(JSON)
    # in_app | email: only in_app is delivered; email is kept for a mailer to come.
    channels: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    # Set when the member deleted their tenant watch: tenant-wide notifications are muted, and
    # the row stays so the watch is not made again with defaults (watches.upsert revives it).
    muted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Notification(TenantMixin, Base):
    """One event, told to one user: at most one per (event, user), whatever chose it."""

    __tablename__ = "notifications"
    __table_args__ = (
        UniqueConstraint("event_id", "subject"),
        Index("ix_notifications_recipient", "tenant_id", "subject", "created_at"),
        # The unread badge: only the few unread rows.
        Index(
            "ix_notifications_unread",
            "tenant_id",
            "subject",
            postgresql_where=text("read_at IS NULL"),
            sqlite_where=text("read_at IS NULL"),
        ),
        # The retention's delete.
        Index("ix_notifications_created_at", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    subject: Mapped[str] = mapped_column(String(255), nullable=False)
    event_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    type: Mapped[str] = mapped_column(String(60), nullable=False)
    category: Mapped[str] = mapped_column(String(20), nullable=False)
    # Plain text, made from the event's payload (texts.py).
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    body: Mapped[str] = mapped_column(String(1000), nullable=False)
    resource_type: Mapped[str] = mapped_column(String(40), nullable=False)
    resource_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    # A path of the app, relative (`/drafts/<id>`).
    url: Mapped[str] = mapped_column(String(500), nullable=False)
    actor_id: Mapped[str | None] = mapped_column(String(255))
    read_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When the event happened.
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False, default=utcnow)
