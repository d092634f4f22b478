"""Scheduled AI visibility runs, started by the scheduler's tick (flows/durable.py): each
organization whose clock (`next_ai_visibility_at`, seo/service.py) is due gets one run of its
active prompts on their engines, as seo.runAiVisibility would start it with the settings'
samples per prompt, and its clock moves to the next slot whether a run starts or not.

Idempotent per organization and period, as rank checks are (rank/schedule.py): the run's keys
name the period it was due for (the local day for daily runs, the ISO week for weekly ones), so
a second or replayed tick finds that period's run. Skipped: no active prompt, no engine of theirs
connected, a run already in flight. Too few credits: a failed run kept under the period's key
(`insufficient_credits`) for the organization to see, and nothing retried until the next period.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.kit.db import Database
from contentplatform.seo import repository as seo_repository
from contentplatform.seo import service as seo
from contentplatform.seo.ai_visibility import routing, service
from contentplatform.seo.ai_visibility.errors import AnswerEngineNotConnected, NothingToAsk
from contentplatform.seo.ai_visibility.schemas import RunAiVisibilityInput
from contentplatform.seo.models import SeoSettings
from contentplatform.seo.rank.schedule import period_of
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)

# Organizations a tick takes at most; the rest are due at the next one.
TICK_LIMIT = 100


async def tick(db: Database, now: datetime) -> dict[str, int]:
    """Start the scheduled AI visibility runs due by `now`, each organization in its own
    transaction."""
    async with db.unit_of_work() as session:
        due = await seo_repository.due_by(
            session, SeoSettings.next_ai_visibility_at, now, TICK_LIMIT
        )

    async def fire(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
        return await _fire(session, tenant_id, now)

    return await seo.fire_each(db, due, fire, "the scheduled AI visibility run")


async def _fire(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> str | None:
    taken = await seo.take_due(
        session,
        tenant_id,
        "next_ai_visibility_at",
        now,
        lambda now, zone, blocks: seo.next_ai_visibility_run(now, zone, blocks["ai_visibility"]),
    )
    if taken is None:
        return None
    due, zone, block = taken.at, taken.zone, taken.blocks["ai_visibility"]
    if block["frequency"] not in ("daily", "weekly"):
        return "skipped"
    keys = service.scheduled_keys(period_of(due, zone, block["frequency"]))
    settings = runtime.current().settings
    routes = await routing.routes(session, tenant_id, settings)
    if not routes:
        return "skipped"
    try:
        async with session.begin_nested():
            opened = await service.run(
                session,
                settings,
                tenant_id,
                None,
                RunAiVisibilityInput(),
                trigger="schedule",
                keys=keys,
            )
    except (NothingToAsk, AnswerEngineNotConnected):
        return "skipped"
    except InsufficientCredits as refusal:
        log.info("scheduled AI visibility run of %s skipped: %s", tenant_id, refusal.detail)
        await sync_runs.record_refused(
            session,
            tenant_id,
            kind="ai_visibility",
            provider=sorted(route.provider for route in routes.values())[0],
            run_key=keys[0],
            trigger="schedule",
            message=refusal.detail,
        )
        return "skipped"
    # A run in flight (manual) or the period's own, answered again, is no new start.
    return "started" if opened.trigger == "schedule" and opened.status == "queued" else "skipped"
