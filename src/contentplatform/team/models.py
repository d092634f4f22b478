from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime
from contentplatform.kit.inbound import InboundEventColumns


class Invitation(RecordMixin, TenantMixin, Base):
    """An invitation to the organization, as the identity provider holds it."""

    __tablename__ = "team_invitations"
    __table_args__ = (UniqueConstraint("idp_invitation_id"),)

    idp_invitation_id: Mapped[str] = mapped_column(String(255), nullable=False)
    email: Mapped[str] = mapped_column(String(320), nullable=False)
    role: Mapped[str] = mapped_column(String(20), nullable=False)
    # pending | accepted | revoked | expired (a pending one past expires_at reads as expired).
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    invited_by: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The provider's `updated_at` of the last word applied: an older event is stale.
    idp_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class IdentityEvent(InboundEventColumns, RecordMixin, Base):
    """An inbound event of the identity provider (kit/inbound.py), stored once per (source,
    event id) and then processed by a workflow. Not a tenant's row: it may name no organization
    at all."""

    __tablename__ = "identity_events"
