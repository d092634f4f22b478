"""The Dashboard operations: declarations only.

Every answer is cached per organization for 60 s and retired sooner by any committed write to
the organization's rows (freshness.py). The tenant-wide answers (summary, activity, upcoming,
quickStats) are cached by their declaration; alerts and the needs-me queue are the caller's
own, cached by the service under the caller in the same scope."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Cached, Context, ProcedureRouter
from contentplatform.dashboard import alerts, freshness, queue, schemas, service
from contentplatform.kit.schemas import Empty

router = ProcedureRouter("dashboard", tag="Dashboard")

CACHED = Cached(
    scope=lambda tenant: freshness.cache_scope(tenant.tenant_id),
    seconds=lambda _settings: freshness.CACHE_SECONDS,
)
FRESHNESS = (
    "Cached for 60 seconds per organization; any change to the organization's data retires "
    "the cache at once."
)


@router.get(
    "summary", "/v1/dashboard/summary", access=Access.member, cached=CACHED, description=FRESHNESS
)
async def summary(ctx: Context, data: schemas.SummaryInput) -> schemas.Summary:
    """KPI cards for the home screen.

    Over the last `range` of days (today included, in the organization's zone) beside the
    period before it: published posts and their mean SEO score, automation success rate
    (percent of finished runs that succeeded). Counts of now (drafts in review, active jobs:
    drafts.getStats and jobs.stats; credits remaining: billing's balance) have no previous.
    A card whose source is not there has value null, never 0: `views` until content analytics
    is connected; a rate or mean over nothing."""
    freshness.serving(ctx.runtime)
    return await service.summary(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "activity",
    "/v1/dashboard/activity",
    access=Access.member,
    cached=CACHED,
    description=FRESHNESS,
)
async def activity(ctx: Context, data: schemas.ActivityInput) -> schemas.FeedPage:
    """Recent activity feed.

    activity.list's events (the same query, newest first), projected for the home screen:
    `type` groups event types (`types` filters by them), `actor` is null when the system
    acted, `subject` names the resource, `meta` carries the event's details."""
    freshness.serving(ctx.runtime)
    return await service.activity(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "upcoming",
    "/v1/dashboard/upcoming",
    access=Access.member,
    cached=CACHED,
    description=FRESHNESS,
)
async def upcoming(ctx: Context, data: schemas.UpcomingInput) -> schemas.UpcomingPage:
    """Upcoming scheduled work.

    Job instances planned, publishes scheduled and crawl schedules due in the next `days`
    (1-30), soonest first, each `at` in the organization's time zone."""
    freshness.serving(ctx.runtime)
    return await service.upcoming(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "pendingReviews",
    "/v1/dashboard/pending-reviews",
    access=Access.member,
    description=FRESHNESS,
)
async def pending_reviews(ctx: Context, data: schemas.PendingReviewsInput) -> schemas.PendingPage:
    """What needs a person: one queue, the soonest due first.

    Drafts in review (`draft_review`, due 48 hours after their last change), workflow runs
    waiting at a review gate (`workflow_gate`, due when the gate times out) and failing
    publisher connections (`publisher_failing`, due since they failed). `assignedToMe` keeps
    the items whose assignee is the caller."""
    subject = ctx.identity.subject

    async def produce() -> str:
        found = await queue.pending(ctx.session, ctx.tenant.tenant_id, subject, data)
        return found.model_dump_json()

    key = f"pendingReviews:{subject}:{data.model_dump_json()}"
    text = await service.cached(ctx.runtime, ctx.tenant.tenant_id, key, produce)
    return schemas.PendingPage.model_validate_json(text)


@router.get("alerts", "/v1/dashboard/alerts", access=Access.member, description=FRESHNESS)
async def list_alerts(ctx: Context, data: schemas.AlertsInput) -> schemas.AlertPage:
    """Active alerts needing attention.

    Derived from the current state: an alert is listed while its condition holds and gone
    when it clears. Kinds: job_failed, publisher_disconnected, credits_low, license_expiring,
    license_expired, crawl_failed, broken_links, review_overdue. Each carries
    `notification_id`, the caller's notification of the event that raised it (null when none
    was made for the caller); reading it (notifications.markRead) acknowledges the alert
    (`acknowledged`)."""
    subject = ctx.identity.subject

    async def produce() -> str:
        found = await alerts.page(ctx.session, ctx.tenant.tenant_id, subject, data)
        return found.model_dump_json()

    key = f"alerts:{subject}:{data.model_dump_json()}"
    text = await service.cached(ctx.runtime, ctx.tenant.tenant_id, key, produce)
    return schemas.AlertPage.model_validate_json(text)


@router.get(
    "quickStats",
    "/v1/dashboard/quick-stats",
    access=Access.member,
    cached=CACHED,
    description=FRESHNESS,
)
async def quick_stats(ctx: Context, _: Empty) -> schemas.QuickStats:
    """Inventory counts with 7-day sparklines.

    Documents, drafts, jobs (drafts.getStats and jobs.stats), media, credits, the website
    crawled last (null until one was), and what was published and spent on each of the last
    7 days (today included, in the organization's zone)."""
    freshness.serving(ctx.runtime)
    return await service.quick_stats(ctx.session, ctx.tenant)
