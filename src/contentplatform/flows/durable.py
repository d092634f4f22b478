"""The scheduler as a DBOS scheduled workflow: every `scheduler_interval_seconds`, one tick
starting the jobs, the website crawls, the daily Search Console syncs, the weekly SEO audits,
the scheduled rank checks and AI visibility runs, next month's SEO plans, and the content
analytics sources' daily syncs that are due.

DBOS names each firing's workflow after its scheduled time, so however many processes run,
each firing runs once; and the tick itself is idempotent (scheduler.py), so one recovered
after a crash repeats nothing.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import datetime
from typing import Any

from dbos import DBOS

from contentplatform.analytics.content import durable as content_analytics
from contentplatform.core import runtime
from contentplatform.flows import scheduler
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow
from contentplatform.seo.ai_visibility import schedule as ai_visibility_schedule
from contentplatform.seo.audits import scans as audit_schedule
from contentplatform.seo.plans import schedule as plan_schedule
from contentplatform.seo.rank import schedule as rank_schedule
from contentplatform.seo.search_console import sync as search_console
from contentplatform.website_scan.crawls import service as crawls

log = logging.getLogger(__name__)


@durable.every("jobs.tick", lambda settings: settings.scheduler_interval_seconds)
@DBOS.workflow(name="jobs.tick")
async def tick_workflow(scheduled_at: datetime, context: Any) -> None:
    await tick_step()


@DBOS.step(name="jobs.tick.run")
async def tick_step() -> dict[str, int]:
    # The real clock, not the firing's time: a firing run late (after a restart) still starts
    # everything due by now, and coalesces what was missed.
    now = utcnow()
    report = await scheduler.tick(runtime.current(), now)
    if report.started or report.skipped or report.failed or report.errors:
        log.info("scheduler tick: %s", asdict(report))
    result: dict[str, int] = {**asdict(report)}
    # The other work due on the same clock, each at its hour of its organization's zone: a
    # report key's prefix, what the log calls it, its tick.
    for prefix, what, tick in (
        ("crawls", "scheduled crawls", crawls.tick),
        ("seo_syncs", "scheduled Search Console syncs", search_console.tick),
        ("seo_audits", "weekly SEO audits", audit_schedule.tick),
        ("seo_ranks", "scheduled rank checks", rank_schedule.tick),
        ("seo_ai_visibility", "scheduled AI visibility runs", ai_visibility_schedule.tick),
        ("seo_plans", "next months' SEO plans", plan_schedule.tick),
        ("analytics_syncs", "content analytics syncs", content_analytics.tick),
    ):
        counts = await tick(runtime.current().db, now)
        if any(counts.values()):
            log.info("%s: %s", what, counts)
        result.update({f"{prefix}_{key}": value for key, value in counts.items()})
    return result
