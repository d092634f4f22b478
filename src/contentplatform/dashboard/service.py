"""The home screen's figures, read through each domain's service (the same functions its own
operations answer from, so a count here equals drafts.getStats and jobs.stats).

Cached per organization for 60 s (freshness.py says what retires an answer sooner)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics import service as analytics
from contentplatform.analytics.automation import service as automation
from contentplatform.auth.context import TenantAccess
from contentplatform.core.runtime import Runtime
from contentplatform.credits import service as credits
from contentplatform.dashboard import freshness, schemas
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.drafts.states import Status
from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.job_instances import service as job_instances
from contentplatform.job_instances.schemas import ListInstancesInput
from contentplatform.jobs import service as jobs
from contentplatform.kit import series
from contentplatform.kit.db import utcnow
from contentplatform.kit.schemas import window_of
from contentplatform.media import service as media
from contentplatform.publishers import service as publishers
from contentplatform.website_scan import service as website_scan
from contentplatform.website_scan.schemas import CrawlConfig, ListConfigsInput
from contentplatform.website_scan.snapshots import service as snapshots
from contentplatform.website_scan.snapshots.schemas import Snapshot
from contentplatform.workflows import service as workflows
from contentplatform.workflows.schemas import ListWorkflowsInput

SPARKLINE_DAYS = 7
# Upcoming work read at most (a page past it is empty): ten days of many jobs' runs.
MAX_UPCOMING = 1000
_RANGE_DAYS = {"7d": 7, "30d": 30, "90d": 90}

# The dashboard's activity types, as the event types each one shows.
ACTIVITY_TYPES: dict[str, tuple[str, ...]] = {
    "draft": (
        "draft.created",
        "draft.status_changed",
        "draft.assigned",
        "draft.commented",
        "comment.mentioned",
    ),
    "job": ("job.run_completed", "job.run_failed"),
    "publish": ("draft.published", "draft.unpublished", "publish_attempt.failed"),
    "crawl": ("crawl.started", "crawl.completed", "crawl.failed", "crawl.cancelled"),
    "media": ("media.license_expiring", "media.license_expired"),
    "workflow": ("generation.run_failed",),
    "member": ("member.added", "member.removed"),
    "billing": ("credits.low_balance", "subscription.updated"),
}
_TYPE_OF = {name: kind for kind, names in ACTIVITY_TYPES.items() for name in names}


async def cached(
    runtime: Runtime,
    tenant_id: uuid.UUID,
    key: str,
    produce: Callable[[], Awaitable[str]],
) -> str:
    """An answer of the caller's own (alerts, the queue) kept in the tenant's dashboard scope,
    so the writes that retire the shared cards retire it too."""
    freshness.serving(runtime)
    return await runtime.cache.get_or_set(
        freshness.cache_scope(tenant_id), key, freshness.CACHE_SECONDS, produce
    )


def _last_days(today: date, days: int) -> series.DateRange:
    return series.DateRange(today - timedelta(days=days - 1), today)


def _daily(
    moments: list[datetime], amounts: list[int], dates: series.DateRange, zone: ZoneInfo
) -> tuple[list[str], list[int]]:
    """Sum `amounts` into the local days of `dates` (kit/series spans: right across DST)."""
    spans = dates.spans("day", zone)
    slots = series.Slots(spans)
    totals = [0] * len(spans)
    for moment, amount in zip(moments, amounts, strict=True):
        index = slots.index(moment)
        if index is not None:
            totals[index] += amount
    return [span.local_date(zone).isoformat() for span in spans], totals


# --- the website's crawls -------------------------------------------------------------------

# Crawl configurations read at most (a site or a few per organization).
MAX_CONFIGS = 200


@dataclass(frozen=True)
class Site:
    """Each crawl configuration with its latest run, and the snapshot that run made."""

    configs: list[CrawlConfig]
    snapshots: dict[uuid.UUID, Snapshot]

    @property
    def latest(self) -> tuple[CrawlConfig, Snapshot | None] | None:
        """The configuration crawled last, and its run's snapshot (None: not crawled yet)."""
        ran = [c for c in self.configs if c.last_run is not None]
        if not ran:
            return None
        config = max(ran, key=lambda c: _ran_at(c) or datetime.min.replace(tzinfo=UTC))
        return config, self.snapshots.get(config.id)


def _ran_at(config: CrawlConfig) -> datetime | None:
    run = config.last_run
    return None if run is None else run.finished_at or run.started_at


async def site(session: AsyncSession, tenant_id: uuid.UUID) -> Site:
    configs: list[CrawlConfig] = []
    for page in range(1, MAX_CONFIGS // 100 + 1):
        found = await website_scan.page(session, tenant_id, ListConfigsInput(page=page, limit=100))
        configs.extend(found.data)
        if len(found.data) < 100:
            break
    made: dict[uuid.UUID, Snapshot] = {}
    for config in configs:
        run = config.last_run
        if run is not None and run.snapshot_id is not None:
            made[config.id] = await snapshots.get(session, tenant_id, run.snapshot_id)
    return Site(configs, made)


# --- summary --------------------------------------------------------------------------------


async def summary(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.SummaryInput
) -> schemas.Summary:
    zone = await analytics.zone_of(session, tenant_id)
    now = utcnow()
    dates = _last_days(now.astimezone(zone).date(), _RANGE_DAYS[data.range])
    start, end = dates.instants(zone)
    before_start, before_end = dates.previous_period().instants(zone)
    published = await drafts.published_between(session, tenant_id, before_start, end)
    current = [score for moment, score in published if moment >= start]
    previous = [score for moment, score in published if moment < start]
    draft_stats = await drafts.stats(session, tenant_id)
    job_stats = await jobs.stats(session, tenant_id)
    balance = await credits.balance(session, tenant_id)
    rate = _percent(await automation.success_rate(session, tenant_id, start, end))
    rate_before = _percent(
        await automation.success_rate(session, tenant_id, before_start, before_end)
    )

    def card(
        key: schemas.CardKey,
        label: str,
        value: float | None,
        before: float | None,
        unit: schemas.Unit,
        href: str,
    ) -> schemas.Card:
        return schemas.Card(
            key=key,
            label=label,
            value=value,
            previous=before,
            change_pct=analytics.change_pct(value, before),
            unit=unit,
            href=href,
        )

    return schemas.Summary(
        range=data.range,
        date_from=dates.first.isoformat(),
        date_to=dates.last.isoformat(),
        cards=[
            card(
                "published_posts",
                "Published posts",
                len(current),
                len(previous),
                "count",
                "/drafts?status=published",
            ),
            card(
                "drafts_in_review",
                "Drafts in review",
                draft_stats.byStatus[Status.reviewing],
                None,
                "count",
                "/drafts?status=reviewing",
            ),
            card("active_jobs", "Active jobs", job_stats.active, None, "count", "/jobs"),
            card(
                "automation_success_rate",
                "Automation success rate",
                rate,
                rate_before,
                "percent",
                "/analytics/automation",
            ),
            # Content analytics (GA4, Plausible, Search Console) is not connected yet.
            card("views", "Views", None, None, "views", "/analytics/content"),
            card(
                "avg_seo_score",
                "Average SEO score",
                _mean(current),
                _mean(previous),
                "score",
                "/drafts?status=published",
            ),
            card(
                "credits_remaining",
                "Credits remaining",
                balance.available,
                None,
                "credits",
                "/billing",
            ),
        ],
    )


def _percent(share: float | None) -> float | None:
    """A share (0-1, automation's success rate) as a percent; None stays None (no runs)."""
    return None if share is None else round(share * 100, 2)


def _mean(scores: list[int | None]) -> float | None:
    """The mean of the scored ones; None when none is (no score is not a score of 0)."""
    scored = [score for score in scores if score is not None]
    return round(sum(scored) / len(scored), 1) if scored else None


# --- quick stats ----------------------------------------------------------------------------


async def quick_stats(session: AsyncSession, tenant: TenantAccess) -> schemas.QuickStats:
    tenant_id = tenant.tenant_id
    zone = await analytics.zone_of(session, tenant_id)
    now = utcnow()
    week = _last_days(now.astimezone(zone).date(), SPARKLINE_DAYS)
    start, end = week.instants(zone)
    published = await drafts.published_between(session, tenant_id, start, end)
    debits = await credits.debited_between(session, tenant_id, start, end)
    days, published_daily = _daily([m for m, _ in published], [1] * len(published), week, zone)
    _, credits_daily = _daily([m for m, _ in debits], [a for _, a in debits], week, zone)
    document_stats = await documents.stats(session, tenant)
    draft_stats = await drafts.stats(session, tenant_id)
    job_stats = await jobs.stats(session, tenant_id)
    media_total, attention, _ = await media.licence_figures(session, tenant_id, now, 0)
    balance = await credits.balance(session, tenant_id)
    crawled = (await site(session, tenant_id)).latest
    website = None
    if crawled is not None:
        config, snapshot = crawled
        website = schemas.WebsiteFigures(
            last_crawl_at=_ran_at(config),
            pages_last_snapshot=snapshot.page_count if snapshot else None,
            broken_links=snapshot.broken_link_count if snapshot else None,
        )
    return schemas.QuickStats(
        documents=schemas.DocumentFigures(total=document_stats.total, ready=document_stats.ready),
        drafts=schemas.DraftFigures(
            reviewing=draft_stats.byStatus[Status.reviewing],
            approved=draft_stats.byStatus[Status.approved],
            published_7d=len(published),
        ),
        jobs=schemas.JobFigures(
            active=job_stats.active, paused=job_stats.paused, error=job_stats.error
        ),
        media=schemas.MediaFigures(total=media_total, license_attention=attention),
        workflows=schemas.WorkflowFigures(
            total=(await workflows.page(session, tenant_id, ListWorkflowsInput(limit=1))).total,
            default_id=await workflows.default_id(session, tenant_id),
        ),
        credits=schemas.CreditFigures(remaining=balance.available, used_7d=sum(credits_daily)),
        website=website,
        sparklines=schemas.Sparklines(published=published_daily, credits=credits_daily, days=days),
    )


# --- activity -------------------------------------------------------------------------------


async def activity(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ActivityInput
) -> schemas.FeedPage:
    """activity.list's rows (its one query), projected for the home screen."""
    types = None
    if data.types is not None:
        types = [name for kind in data.types.split(",") for name in ACTIVITY_TYPES[kind]]
    rows, total = await events.activity_events(
        session, tenant_id, types=types, since=data.since, **window_of(data)
    )
    return schemas.FeedPage(
        data=[_item(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


def _item(event: Event) -> schemas.FeedItem:
    payload = event.payload or {}
    label = next(
        (
            payload[field]
            for field in ("title", "name", "filename", "topic")
            if isinstance(payload.get(field), str)
        ),
        None,
    )
    actor = None
    if event.actor_type != "system":
        actor = schemas.FeedActor(id=event.actor_id, name=event.actor_name)
    return schemas.FeedItem(
        id=event.id,
        type=_TYPE_OF.get(event.type, "other"),
        action=event.type,
        actor=actor,
        subject=schemas.FeedSubject(type=event.resource_type, id=event.resource_id, label=label),
        created_at=event.created_at,
        meta={**payload, **({"changes": event.changes} if event.changes else {})},
    )


# --- upcoming -------------------------------------------------------------------------------


async def upcoming(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpcomingInput
) -> schemas.UpcomingPage:
    """Job instances planned, publishes scheduled and crawl schedules due in the next `days`,
    soonest first, each `at` in the organization's zone."""
    zone = await analytics.zone_of(session, tenant_id)
    now = utcnow()
    end = now + timedelta(days=data.days)
    found: list[schemas.UpcomingItem] = []
    for page in range(1, MAX_UPCOMING // 100 + 1):
        batch = await job_instances.list_instances(
            session,
            tenant_id,
            ListInstancesInput(
                start_date=now,
                end_date=end,
                status="pending",
                page=page,
                limit=100,
            ),
        )
        found.extend(
            schemas.UpcomingItem(
                type="job_instance",
                at=instance.scheduled_date.astimezone(zone),
                title=instance.topic or "Scheduled job run",
                status=instance.status,
                ref=schemas.Ref(type="job_instance", id=instance.id),
            )
            for instance in batch
        )
        if len(batch) < 100:
            break
    for attempt, title in await publishers.scheduled_between(
        session, tenant_id, now, end, MAX_UPCOMING
    ):
        assert attempt.scheduled_at is not None, "a scheduled attempt has its time"
        found.append(
            schemas.UpcomingItem(
                type="scheduled_publish",
                at=attempt.scheduled_at.astimezone(zone),
                title=title,
                status=attempt.status,
                ref=schemas.Ref(type="draft", id=attempt.draft_id),
            )
        )
    for config in (await site(session, tenant_id)).configs:
        schedule = config.schedule
        due = schedule.next_run_at if schedule is not None and schedule.enabled else None
        if due is not None and due < end:
            found.append(
                schemas.UpcomingItem(
                    type="crawl_schedule",
                    at=due.astimezone(zone),
                    title=config.name,
                    status="scheduled",
                    ref=schemas.Ref(type="crawl_config", id=config.id),
                )
            )
    found.sort(key=lambda item: (item.at, str(item.ref.id)))
    window = window_of(data)
    return schemas.UpcomingPage(
        data=found[window["offset"] : window["offset"] + window["limit"]],
        total=len(found),
        page=data.page,
        limit=data.limit,
    )
