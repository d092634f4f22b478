"""Scheduled rank checks, started by the scheduler's tick (flows/durable.py): each organization
whose clock (`next_rank_check_at`, seo/service.py) is due gets one check of its active tracked
keywords, as seo.checkRankings would start it, and its clock moves to the next slot whether a
check starts or not.

Idempotent per organization and period: the check's run key and credit key name the period it
was due for (the local day for daily checks, the ISO week for weekly ones, in the
organization's zone), so a second tick, a tick replayed after a crash, or a schedule changed
within the period finds the period's run instead of starting (and charging) another; its
workflow id follows from that run (`seo.rank:<run id>`). Skipped: no active keyword, no SERP
provider connected, a check already running (it reads the same keywords). Too few credits: no
check, a failed run kept under the period's key (error code `insufficient_credits`) for the
organization to see, and nothing retried until the next period, so a tenant out of credits
costs one row a period, not an error at every tick.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.kit.db import Database
from contentplatform.seo import repository as seo_repository
from contentplatform.seo import service as seo
from contentplatform.seo.connections import access as connections
from contentplatform.seo.models import SeoSettings
from contentplatform.seo.rank import repository, service
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)

# Organizations a tick takes at most; the rest are due at the next one.
TICK_LIMIT = 100


def period_of(due: datetime, zone: str, frequency: str) -> str:
    """The period a slot due at `due` (UTC) belongs to, in `zone`: its day (daily), its ISO
    week (weekly)."""
    local = due.astimezone(ZoneInfo(zone))
    if frequency == "daily":
        return local.date().isoformat()
    year, week, _ = local.isocalendar()
    return f"{year}-W{week:02d}"


async def tick(db: Database, now: datetime) -> dict[str, int]:
    """Start the scheduled rank checks due by `now`, each organization in its own transaction,
    so one that cannot start never holds up the others."""
    async with db.unit_of_work() as session:
        due = await seo_repository.due_by(session, SeoSettings.next_rank_check_at, now, TICK_LIMIT)

    async def fire(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
        return await _fire(session, tenant_id, now)

    return await seo.fire_each(db, due, fire, "the scheduled rank check")


async def _fire(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> str | None:
    taken = await seo.take_due(
        session,
        tenant_id,
        "next_rank_check_at",
        now,
        lambda now, zone, blocks: seo.next_rank_check(now, zone, blocks["rank"]),
    )
    if taken is None:
        return None
    due, zone, rank = taken.at, taken.zone, taken.blocks["rank"]
    if rank["frequency"] not in ("daily", "weekly"):
        return "skipped"
    keywords = await repository.to_check(session, tenant_id, None)
    settings = runtime.current().settings
    found = await connections.serp_provider(session, tenant_id, settings)
    if not keywords or found is None:
        return "skipped"
    keys = service.scheduled_keys(period_of(due, zone, rank["frequency"]))
    try:
        async with session.begin_nested():
            _, started = await service.start_check(
                session,
                settings,
                tenant_id,
                keywords,
                provider=found[0],
                keys=keys,
                trigger="schedule",
                created_by=None,
            )
    except InsufficientCredits as refusal:
        log.info("scheduled rank check of %s skipped: %s", tenant_id, refusal.detail)
        await sync_runs.record_refused(
            session,
            tenant_id,
            kind="rank_check",
            provider=found[0],
            run_key=keys[0],
            trigger="schedule",
            message=refusal.detail,
        )
        return "skipped"
    return "started" if started else "skipped"
