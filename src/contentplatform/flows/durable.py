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
    # Scheduled website crawls are due on the same clock.
    scans = await crawls.tick(runtime.current().db, now)
    if any(scans.values()):
        log.info("scheduled crawls: %s", scans)
    # And the daily Search Console syncs, each at its hour of its organization's zone.
    syncs = await search_console.tick(runtime.current().db, now)
    if any(syncs.values()):
        log.info("scheduled Search Console syncs: %s", syncs)
    # And the weekly SEO audits.
    audits = await audit_schedule.tick(runtime.current().db, now)
    if any(audits.values()):
        log.info("weekly SEO audits: %s", audits)
    # And the scheduled rank checks, each at its hour of its organization's zone.
    ranks = await rank_schedule.tick(runtime.current().db, now)
    if any(ranks.values()):
        log.info("scheduled rank checks: %s", ranks)
    # The scheduled AI visibility runs.
    answers = await ai_visibility_schedule.tick(runtime.current().db, now)
    if any(answers.values()):
        log.info("scheduled AI visibility runs: %s", answers)
    # Next month's SEO plans, on the day of the month the organizations chose.
    plans = await plan_schedule.tick(runtime.current().db, now)
    if any(plans.values()):
        log.info("next months' SEO plans: %s", plans)
    # And the content analytics sources' daily syncs, each at its hour of its organization's zone.
    sources = await content_analytics.tick(runtime.current().db, now)
    if any(sources.values()):
        log.info("content analytics syncs: %s", sources)
    return {
        **asdict(report),
        **{f"crawls_{key}": value for key, value in scans.items()},
        **{f"seo_syncs_{key}": value for key, value in syncs.items()},
        **{f"seo_audits_{key}": value for key, value in audits.items()},
        **{f"seo_ranks_{key}": value for key, value in ranks.items()},
        **{f"seo_ai_visibility_{key}": value for key, value in answers.items()},
        **{f"seo_plans_{key}": value for key, value in plans.items()},
        **{f"analytics_syncs_{key}": value for key, value in sources.items()},
    }
