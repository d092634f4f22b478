"""Inputs and answers of the Admin operations: inputs camelCase on the wire, answers as the
catalog names their fields (snake_case)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from contentplatform.billing.schemas import SubscriptionView
from contentplatform.credits.schemas import Balance, LedgerEntry
from contentplatform.features.flags import Stage
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page
from contentplatform.kit.text import Identifier, PlainMultiLine
from contentplatform.support.schemas import StaffTicketDetail

TenantStatus = Literal["active", "suspended"]
Source = Literal["identity", "payments"]
InboundStatus = Literal["received", "processed", "failed", "ignored"]
# A plan's limit (None: unlimited), as billing.Limits bounds none of them.
LimitValue = int | None
MAX_LIMIT = 10**15


# --- tenants ------------------------------------------------------------------------------------


class ListTenantsInput(Input):
    search: str | None = Field(
        None, max_length=255, description="In the tenant's name, or its IdP organization id."
    )
    status: TenantStatus | None = None
    plan_id: uuid.UUID | None = Field(None, description="Tenants whose current plan is this.")
    sort_by: Literal["created_at", "name", "credits_used_30d"] = Field(
        "created_at",
        description="created_at: newest first; name: A to Z; credits_used_30d: most first.",
    )
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class TenantSummary(BaseModel):
    id: uuid.UUID
    idp_org_id: str
    name: str
    status: str = Field(description="active | suspended (deleted: the provider deleted it).")
    plan_id: uuid.UUID | None = Field(description="The plan that applies; null: the free plan.")
    subscription_status: str = Field(description="The subscription's status; `none` without.")
    members: int = Field(description="Active members.")
    credits_available: int = Field(
        description="Unexpired credits less open holds (in the list: as last settled, before "
        "this month's grant if the tenant has not used or been shown its credits this month)."
    )
    credits_used_30d: int = Field(description="Credits debited in the last 30 days.")
    created_at: datetime
    last_active_at: datetime | None = Field(description="The last activity of any member.")


class TenantPage(Page[TenantSummary]):
    pass


class SupportTicketDetail(StaffTicketDetail):
    tenant: TenantSummary | None = Field(
        description="The ticket's organization, as admin.listTenants summarizes it; null for "
        "a contact-form message."
    )


class TenantIdInput(Input):
    id: uuid.UUID = Field(description="The tenant's id.")


class PlanOverride(BaseModel):
    plan_id: uuid.UUID
    until: datetime | None


class PlanOverrideInput(Input):
    plan_id: uuid.UUID = Field(description="A plan of the catalogue (billing.listPlans).")
    until: datetime | None = Field(
        None, description="When the override ends (then the subscription applies again)."
    )


class LimitsOverride(Input):
    """Each limit given wins over the plan's (null: unlimited); a limit left out stays the
    plan's."""

    members: LimitValue = Field(None, ge=0, le=MAX_LIMIT)
    documents: LimitValue = Field(None, ge=0, le=MAX_LIMIT)
    storage_bytes: LimitValue = Field(None, ge=0, le=MAX_LIMIT)
    active_jobs: LimitValue = Field(None, ge=0, le=MAX_LIMIT)
    publishers: LimitValue = Field(None, ge=0, le=MAX_LIMIT)
    webhook_endpoints: LimitValue = Field(None, ge=0, le=MAX_LIMIT)
    api_keys: LimitValue = Field(None, ge=0, le=MAX_LIMIT)


class Suspension(BaseModel):
    reason: str
    at: datetime
    by: str | None


class TenantKindUsage(BaseModel):
    kind: str
    credits: int
    operations: int


class TenantFeatureOverride(BaseModel):
    key: str
    enabled: bool
    source: str = Field(description="override (the operator) | opt_in (the tenant's admin).")


class TenantDetail(TenantSummary):
    plan_override: PlanOverride | None
    limits_override: dict[str, LimitValue] | None
    feature_overrides: list[TenantFeatureOverride]
    subscription: SubscriptionView
    usage_30d_by_kind: list[TenantKindUsage]
    active_impersonations: int = Field(
        description="Impersonation sessions open on the tenant (not ended, not expired)."
    )
    open_tickets: int = Field(description="Support tickets of the tenant not closed or resolved.")
    suspension: Suspension | None


class UpdateTenantInput(Input):
    id: uuid.UUID = Field(description="The tenant's id.")
    plan_override: PlanOverrideInput | None = Field(
        None, description="Left out: unchanged; null: removed."
    )
    limits_override: LimitsOverride | None = Field(
        None, description="Left out: unchanged; null: removed."
    )
    note: PlainMultiLine = Field(
        min_length=10, max_length=500, description="Why (the tenant's audit trail keeps it)."
    )


class SetTenantStatusInput(Input):
    id: uuid.UUID = Field(description="The tenant's id.")
    status: TenantStatus
    reason: PlainMultiLine = Field(min_length=10, max_length=500)


# --- credits ------------------------------------------------------------------------------------


class GrantCreditsInput(Input):
    id: uuid.UUID = Field(description="The tenant's id.")
    amount: int = Field(
        ge=-1_000_000,
        le=1_000_000,
        description="Credits to add (a new admin_grant bucket), or to remove when negative.",
    )
    reason: PlainMultiLine = Field(min_length=5, max_length=500)
    expires_at: datetime | None = Field(None, description="Grants only; in the future.")
    idempotency_key: Identifier = Field(
        min_length=1,
        max_length=255,
        description="The same key and body answer the first grant again; the same key with "
        "another body or tenant is 409.",
    )

    @field_validator("amount")
    @classmethod
    def _not_zero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("is never 0: positive grants, negative claws back")
        return value


class OperatorCreditGrant(BaseModel):
    ledger_entry: LedgerEntry
    balance: Balance


# --- usage --------------------------------------------------------------------------------------


class UsageOverviewInput(Input):
    start_date: datetime
    end_date: datetime | None = Field(
        None, description="Default now; at most 366 days after startDate."
    )
    bucket_width: Literal["1d", "1mo"] = "1d"
    group_by: Literal["tenant", "kind", "plan"] = "kind"
    limit: int = Field(20, ge=1, le=100, description="Top groups (by credits) per bucket.")


class PlatformUsageResult(BaseModel):
    group: str | None = Field(description="The tenant's id, the kind, or the plan's key.")
    credits: int
    operations: int
    input_tokens: int
    output_tokens: int
    provider_cost_usd: float


class PlatformUsageBucket(BaseModel):
    start_time: datetime
    end_time: datetime
    results: list[PlatformUsageResult]


class PlatformUsageTotals(BaseModel):
    credits: int
    operations: int
    provider_cost_usd: float
    active_tenants: int


class PlatformUsage(Listing[PlatformUsageBucket]):
    totals: PlatformUsageTotals


# --- feature flags ------------------------------------------------------------------------------


class FlagView(BaseModel):
    key: str
    description: str
    stage: Stage
    default_enabled: bool
    rollout_percent: int | None
    plans: list[str]
    opt_in_allowed: bool
    tenant_overrides: int
    updated_at: datetime | None


class FlagList(Listing[FlagView]):
    pass


class UpdateFlagInput(Input):
    key: Identifier = Field(max_length=100, description="A flag declared in the code.")
    stage: Stage | None = None
    default_enabled: bool | None = None
    rollout_percent: int | None = Field(None, ge=0, le=100)
    plans: list[Identifier] | None = Field(None, max_length=50)
    opt_in_allowed: bool | None = None
    tenant_overrides: dict[str, bool | None] | None = Field(
        None,
        max_length=100,
        description="By tenant id: true/false sets the flag for the tenant; null removes it.",
    )

    @field_validator("tenant_overrides")
    @classmethod
    def _tenant_ids(cls, value: dict[str, bool | None] | None) -> dict[str, bool | None] | None:
        for key in value or {}:
            try:
                uuid.UUID(key)
            except ValueError:
                raise ValueError(f"{key[:40]!r} is not a tenant id (a UUID)") from None
        return value


# --- inbound events -----------------------------------------------------------------------------


class ListInboundInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    source: Source | None = None
    status: InboundStatus | None = None
    type: str | None = Field(None, max_length=100)
    tenant_id: uuid.UUID | None = None


class InboundEvent(BaseModel):
    id: uuid.UUID
    source: Source
    provider_event_id: str
    type: str
    tenant_id: uuid.UUID | None
    status: InboundStatus
    attempts: int = Field(description="1, plus each replay.")
    error: str | None
    received_at: datetime
    processed_at: datetime | None


class InboundPage(Page[InboundEvent]):
    pass


class InboundIdInput(Input):
    id: uuid.UUID
