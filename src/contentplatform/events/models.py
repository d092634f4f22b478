"""The outbox: one row per event, written in the transaction of the change it tells of.

It is the tenant's activity trail as well (append-only: nothing updates a row but the
dispatcher, which stamps `dispatched_at` once every listener has taken it).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, String, Uuid, text
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, TenantMixin, UTCDateTime, utcnow


class Event(TenantMixin, Base):
    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_tenant_id_created_at", "tenant_id", "created_at"),
        Index("ix_events_tenant_id_resource", "tenant_id", "resource_type", "resource_id"),
        # What the dispatcher looks for: only the few not yet fanned out.
        Index(
            "ix_events_undispatched",
            "created_at",
            postgresql_where=text("dispatched_at IS NULL"),
            sqlite_where=text("dispatched_at IS NULL"),
        ),
    )

    # Stable: the `webhook-id` of every delivery of this event derives from it.
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    type: Mapped[str] = mapped_column(String(60), nullable=False)
    scope: Mapped[str] = mapped_column(String(10), nullable=False)  # activity | audit
    actor_type: Mapped[str] = mapped_column(String(10), nullable=False)  # user|system|api_key
    actor_id: Mapped[str | None] = mapped_column(String(255))
    actor_name: Mapped[str | None] = mapped_column(String(255))
    impersonated_by: Mapped[str | None] = mapped_column(String(255))
    resource_type: Mapped[str] = mapped_column(String(40), nullable=False)
    resource_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    # The event's data as webhooks and notifications carry it (ids, titles, statuses).
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # For settings and other edits: {field: {from, to}}.
    changes: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    ip: Mapped[str | None] = mapped_column(String(64))
    user_agent: Mapped[str | None] = mapped_column(String(500))
    request_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False, default=utcnow)
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
