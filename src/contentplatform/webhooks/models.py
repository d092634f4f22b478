"""A tenant's outbound webhook endpoints, the deliveries of its events to them and each
delivery's attempts (the delivery log, kept 30 days)."""

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
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime, utcnow


class WebhookEndpoint(RecordMixin, TenantMixin, Base):
    """A URL subscribed to event types. Its signing secret is sealed (publishers' vault); during
    a rotation's overlap the replaced one signs too, until `previous_secret_expires_at`.

    `failing_since` is the first failed attempt since the last success (None while it works):
    a delivery that ends failing with the endpoint failing for its whole retry window disables
    it (`disabled_reason` failing); a 410 disables it at once (gone); an admin, manual."""

    __tablename__ = "webhook_endpoints"

    url: Mapped[str] = mapped_column(String(2048), nullable=False)
    description: Mapped[str | None] = mapped_column(String(200))
    events: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False)
    disabled_reason: Mapped[str | None] = mapped_column(String(20))  # manual | failing | gone
    secret_sealed: Mapped[str] = mapped_column(Text, nullable=False)
    secret_hint: Mapped[str] = mapped_column(String(8), nullable=False)
    previous_secret_sealed: Mapped[str | None] = mapped_column(Text)
    previous_secret_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    failing_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The last attempt of a delivery (tests aside): succeeded | failed, and when.
    last_delivery_status: Mapped[str | None] = mapped_column(String(20))
    last_delivery_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    @property
    def last_delivery(self) -> dict[str, object] | None:
        if self.last_delivery_status is None:
            return None
        return {"status": self.last_delivery_status, "at": self.last_delivery_at}

    @property
    def previous_secret_until(self) -> datetime | None:
        """When the replaced secret stops signing, while it still does."""
        until = self.previous_secret_expires_at
        return until if until is not None and until > utcnow() else None

    def secrets_sealed(self) -> list[str]:
        """The sealed secrets that sign now: the current one, then the replaced one during
        its overlap."""
        previous = self.previous_secret_sealed if self.previous_secret_until else None
        return [self.secret_sealed, *([previous] if previous else [])]


class WebhookDelivery(RecordMixin, TenantMixin, Base):
    """One event for one endpoint: the body as sent (the same on every attempt and redelivery,
    with the same `message_id`, the `webhook-id`), its status and what its attempts made of it.

    Statuses: pending (an attempt is due at `next_attempt_at`, or under way), succeeded, failed
    (ended without retrying: a refusal, a 410, a test), exhausted (every attempt of the retry
    schedule failed), cancelled (its endpoint was disabled first). A redelivery starts round
    `round` + 1 of the schedule on the same row."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("endpoint_id", "event_id"),
        Index("ix_webhook_deliveries_endpoint_id_created_at", "endpoint_id", "created_at"),
        Index("ix_webhook_deliveries_created_at", "created_at"),
        # An event's first attempts are sent together (durable.deliver_event).
        Index("ix_webhook_deliveries_tenant_id_event_id", "tenant_id", "event_id"),
        # What the reconciler looks at: only deliveries still under way.
        Index(
            "ix_webhook_deliveries_pending",
            "next_attempt_at",
            postgresql_where=text("status = 'pending'"),
            sqlite_where=text("status = 'pending'"),
        ),
    )

    endpoint_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), nullable=False
    )
    # The event's id (no key: events outlive deliveries); a test's is made up.
    event_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    event_type: Mapped[str] = mapped_column(String(60), nullable=False)
    message_id: Mapped[str] = mapped_column(String(64), nullable=False)
    test: Mapped[bool] = mapped_column(Boolean, nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    # Why it ended without a success, when no attempt says it (cancelled, refused to start).
    error: Mapped[str | None] = mapped_column(String(500))
    round: Mapped[int] = mapped_column(Integer, nullable=False)
    round_attempts: Mapped[int] = mapped_column(Integer, nullable=False)
    round_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    attempt_count: Mapped[int] = mapped_column(Integer, nullable=False)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    request_body: Mapped[str] = mapped_column(Text, nullable=False)
    response_excerpt: Mapped[str | None] = mapped_column(Text)


class WebhookAttempt(TenantMixin, Base):
    """One HTTP request of a delivery: `n` counts every attempt of the delivery, redeliveries
    included (unique per delivery, so a step that runs again records it once)."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (
        UniqueConstraint("delivery_id", "n"),
        Index("ix_webhook_attempts_endpoint_id_at", "endpoint_id", "at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    delivery_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), nullable=False
    )
    # For the endpoint's statistics (its deliveries take its attempts along when deleted).
    endpoint_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    n: Mapped[int] = mapped_column(Integer, nullable=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    succeeded: Mapped[bool] = mapped_column(Boolean, nullable=False)
    response_status: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[int] = mapped_column(Integer, nullable=False)
    error: Mapped[str | None] = mapped_column(String(500))
    # The answer's first 2 KB.
    response_excerpt: Mapped[str | None] = mapped_column(Text)
