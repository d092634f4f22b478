"""Next month's plan generated on its own (settings.planning.auto_generate_day), started by the
scheduler's tick (flows/durable.py): each organization whose clock (`next_plan_at`,
seo/service.py) is due gets the plan of the month after the one it is due in, as seoPlans.generate
would start it with the settings' defaults, and its clock moves to the same day of the next
month whether a plan starts or not.

Idempotent per organization and month: the generation's key names the month (`auto@YYYY-MM`: `@`
where a client's key has none, so no key a client sends can name it), so a second or replayed
tick answers that plan. Skipped: a live plan of that month already (made by hand, say), or too
few credits (logged; the month is not tried again).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.credits.errors import InsufficientCredits
from contentplatform.kit.db import Database
from contentplatform.seo import repository as seo_repository
from contentplatform.seo import service as seo
from contentplatform.seo.models import SeoSettings
from contentplatform.seo.plans import service
from contentplatform.seo.plans.errors import PlanMonthTaken
from contentplatform.seo.plans.schemas import GenerateSeoPlanInput

log = logging.getLogger(__name__)

# Organizations a tick takes at most; the rest are due at the next one.
TICK_LIMIT = 100
# Who a generated plan was made by.
SCHEDULER = "scheduler"


def month_after(due: datetime, zone: str) -> str:
    """The month after the one `due` (UTC) falls in, in `zone`: YYYY-MM."""
    local = due.astimezone(ZoneInfo(zone))
    year, month = (local.year + 1, 1) if local.month == 12 else (local.year, local.month + 1)
    return f"{year:04d}-{month:02d}"


def key_of(month: str) -> str:
    return f"auto@{month}"


async def tick(db: Database, now: datetime) -> dict[str, int]:
    """Start the plans due by `now`, each organization in its own transaction."""
    async with db.unit_of_work() as session:
        due = await seo_repository.due_by(session, SeoSettings.next_plan_at, now, TICK_LIMIT)

    async def fire(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
        return await _fire(session, tenant_id, now)

    return await seo.fire_each(db, due, fire, "next month's SEO plan")


async def _fire(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> str | None:
    taken = await seo.take_due(
        session,
        tenant_id,
        "next_plan_at",
        now,
        lambda now, zone, blocks: seo.next_plan_generation(now, zone, blocks["planning"]),
    )
    if taken is None:
        return None
    due, zone = taken.at, taken.zone
    month = month_after(due, zone)
    # Built without validation: the key holds `@`, which no client's key may.
    data = GenerateSeoPlanInput.model_construct(month=month, idempotency_key=key_of(month))
    try:
        async with session.begin_nested():
            plan = await service.generate(session, tenant_id, SCHEDULER, data)
    except PlanMonthTaken:
        return "skipped"
    except InsufficientCredits as refusal:
        log.info("next month's SEO plan of %s skipped: %s", tenant_id, refusal.detail)
        return "skipped"
    return "started" if plan.status == "generating" else "skipped"
