"""billing.getQuota: the plan's limits beside what the organization uses of each.

A flow because it counts other domains' rows (members and invitations in team, documents,
jobs, connections, API keys, webhook endpoints), which sit above billing. The writes those
limits guard check the same counts in their own domain (`billing.check_limit`), under the
tenant's lock.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.billing import schemas as billing_schemas
from contentplatform.billing import service as billing
from contentplatform.credits import usage as credit_usage
from contentplatform.documents import service as documents
from contentplatform.jobs import service as jobs
from contentplatform.kit.db import utcnow
from contentplatform.publishers import service as publishers
from contentplatform.settings import keys
from contentplatform.team import service as team
from contentplatform.webhooks import service as webhooks


class QuotaItem(BaseModel):
    key: str = Field(
        description="credits, members, documents, storage_bytes, active_jobs, publishers, "
        "webhook_endpoints or api_keys."
    )
    limit: int | None = Field(description="null: unlimited.")
    used: int
    remaining: int | None = Field(description="null: unlimited; never below 0.")
    resets_at: datetime | None = Field(description="Only credits reset, at the period's end.")


class Quota(BaseModel):
    plan_key: str
    plan_name: str
    period_start: datetime
    period_end: datetime
    items: list[QuotaItem]


async def quota(session: AsyncSession, tenant_id: uuid.UUID) -> Quota:
    limits = await billing.plan_limits(session, tenant_id)
    month = await credit_usage.month_usage(session, tenant_id)
    used = {
        "credits": month.used,
        "members": await team.seats_taken(session, tenant_id, utcnow()),
        "documents": await documents.document_count(session, tenant_id),
        "storage_bytes": await billing.stored_bytes(session, tenant_id),
        "active_jobs": await jobs.running_count(session, tenant_id),
        "publishers": await publishers.connection_count(session, tenant_id),
        "webhook_endpoints": await webhooks.endpoint_count(session, tenant_id),
        "api_keys": await keys.live_count(session, tenant_id),
    }
    items = [
        _item(key, _limit_of(limits, key), count, month.end if key == "credits" else None)
        for key, count in used.items()
    ]
    return Quota(
        plan_key=limits.plan_key,
        plan_name=limits.plan_name,
        period_start=month.start,
        period_end=month.end,
        items=items,
    )


def _item(key: str, limit: int | None, used: int, resets_at: datetime | None) -> QuotaItem:
    remaining = None if limit is None else max(0, limit - used)
    return QuotaItem(key=key, limit=limit, used=used, remaining=remaining, resets_at=resets_at)


def _limit_of(limits: billing_schemas.PlanLimits, key: str) -> int | None:
    limit: int | None = limits.monthly_credits if key == "credits" else getattr(limits, key)
    return limit
