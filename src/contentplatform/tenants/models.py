from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, UTCDateTime


class Tenant(RecordMixin, Base):
    __tablename__ = "tenants"

    idp_org_id: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False, default="active")
    # The IANA time zone job schedules are read in (jobs.schedulingConfig).
    timezone: Mapped[str] = mapped_column(
        String(64), nullable=False, default="UTC", server_default="UTC"
    )
    # The provider's `updated_at` of the last organization event applied: an older one is stale.
    idp_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Why, when and by whom (a superadmin's subject) the tenant was last suspended
    # (admin.setTenantStatus); cleared on reactivation.
    suspended_reason: Mapped[str | None] = mapped_column(String(500))
    suspended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    suspended_by: Mapped[str | None] = mapped_column(String(255))
    # The operator's overrides (admin.updateTenant): a plan that wins over the subscription
    # until `plan_override_until`, and limits that win over the plan's (each key given).
    plan_override_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    plan_override_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    limits_override: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class User(RecordMixin, Base):
    __tablename__ = "users"

    idp_user_id: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)
    email: Mapped[str | None] = mapped_column(String(320))
    name: Mapped[str | None] = mapped_column(String(255))
    avatar_url: Mapped[str | None] = mapped_column(String(2048))
    idp_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Membership(RecordMixin, Base):
    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("tenant_id", "user_id"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False, index=True
    )
    user_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
    )
    role: Mapped[str] = mapped_column(String(20), nullable=False)
    # active | removed: a removed member keeps the row (their drafts' history names them).
    status: Mapped[str] = mapped_column(
        String(20), nullable=False, default="active", server_default="active"
    )
    joined_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_active_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    removed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When the stored role (or removal) was last set by the provider's word (team.updateMemberRole,
    # an identity event, team.sync), on the provider's clock: a token issued before it states a
    # role that no longer holds, so the stored one wins (tenants.service.resolve_access).
    role_set_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    idp_membership_id: Mapped[str | None] = mapped_column(String(255))
    # The provider's `updated_at` of the last membership event applied: an older one is stale.
    idp_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
