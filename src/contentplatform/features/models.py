"""A tenant's stored choice of a feature flag: the operator's override or its own opt-in."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime


class FeatureOverride(RecordMixin, TenantMixin, Base):
    """One flag of one tenant, decided here rather than by the global config and the default
    (flags.py `evaluate`). `source` says who decided it: `override` (the operator, over
    everything) or `opt_in` (the tenant's admin, for flags that allow it); one row per flag,
    so an opt-in never replaces an override."""

    __tablename__ = "feature_overrides"
    __table_args__ = (UniqueConstraint("tenant_id", "key"),)

    key: Mapped[str] = mapped_column(String(100), nullable=False)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False)
    source: Mapped[str] = mapped_column(String(20), nullable=False)  # override | opt_in
    # The identity provider's id of whoever set it (the caller's subject).
    set_by: Mapped[str | None] = mapped_column(String(255))
    set_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class FeatureFlagSetting(RecordMixin, Base):
    """The operator's settings of one flag declared in code (admin.updateFeatureFlag), which win
    over the flag's declaration and the global config (flags.py `evaluate`). A platform row,
    not a tenant's: one per flag key."""

    __tablename__ = "feature_flag_settings"

    key: Mapped[str] = mapped_column(String(100), unique=True, nullable=False)
    stage: Mapped[str] = mapped_column(String(20), nullable=False)
    default_enabled: Mapped[bool] = mapped_column(Boolean, nullable=False)
    # None: no percentage rollout (the default decides); 0-100: that share of tenants.
    rollout_percent: Mapped[int | None] = mapped_column(Integer)
    # Plan keys whose tenants get the flag whatever the rollout says (empty: none).
    plans: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    opt_in_allowed: Mapped[bool] = mapped_column(Boolean, nullable=False)
    updated_by: Mapped[str | None] = mapped_column(String(255))
