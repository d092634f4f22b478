"""Declarations only: content analytics (its sources, and what published drafts earned)."""

from __future__ import annotations

from contentplatform.analytics.content import reports, schemas, service
from contentplatform.analytics.content.errors import (
    ProviderNotConfigured,
    ProviderUnavailable,
    SourceExists,
    SourceNotConnected,
    SourceNotFound,
    SourceRefused,
    SyncRunning,
)
from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.drafts.errors import DraftNotFound
from contentplatform.jobs.errors import JobNotFound
from contentplatform.kit.schemas import Empty, Success
from contentplatform.publishers.errors import ConnectionNotFound
from contentplatform.workflows.errors import WorkflowNotFound

router = ProcedureRouter("analytics", tag="Analytics")

FILTER_ERRORS = [SourceNotFound, JobNotFound, WorkflowNotFound, ConnectionNotFound]


@router.get("listSources", "/v1/analytics/sources", access=Access.member)
async def list_sources(ctx: Context, data: Empty) -> schemas.AnalyticsSourceList:
    """List connected analytics sources.

    Every source of the organization, disconnected ones too (their figures are kept unless
    purged), oldest first, with what it reports (`metrics`), its `lag_days`, how far its
    figures reach (`data_through`: the provider's last complete day stored), how its latest
    sync ended (`partial`: `missing_days` names the days the provider's rate limit refused)
    and its error. Secrets never show."""
    return await service.list_sources(ctx.session, ctx.tenant.tenant_id)


@router.post(
    "connectSource",
    "/v1/analytics/sources",
    access=Access.admin,
    errors=[SourceExists, SourceRefused, ProviderNotConfigured, ProviderUnavailable],
)
async def connect_source(
    ctx: Context, data: schemas.ContentConnectSourceInput
) -> schemas.ContentConnectedSource:
    """Connect an analytics provider.

    **plausible** (`property`: the site_id; credentials {apiKey}) and **umami** (`property`:
    the website id; `siteUrl`; credentials {baseUrl, apiKey} or {baseUrl, username,
    password}) are checked with one call before they are saved (refused: 400 with the
    provider's words; unreachable: 503, nothing saved), connected at once, and their first
    sync (the last 28 days) starts. **search_console** (`property`: the site URL selected on
    SEO's Search Console connection) reads SEO's stored facts: no second sync of Google.
    **ga4** (`property`: the numeric property id; `redirectUri`, one of the deployment's
    allowed redirect URIs) starts `pending_auth` and answers `authorize_url` (Google's consent,
    analytics.readonly, PKCE S256, offline access); the front end posts the same provider and
    property again with credentials {code, state} from Google's redirect, which connects it
    (the state is single-use, bound to the admin, 10 minutes). The catalog's `webhook` source
    is not offered: it has no contract yet.

    Secrets are stored sealed and never returned. The property already connected: 409. Each
    source then syncs daily at 06:00 of the organization's time zone."""
    return await service.connect(ctx.session, ctx.runtime.db, ctx.settings, ctx.tenant, data)


@router.delete(
    "disconnectSource",
    "/v1/analytics/sources/{id}",
    access=Access.admin,
    errors=[SourceNotFound],
)
async def disconnect_source(ctx: Context, data: schemas.ContentDisconnectSourceInput) -> Success:
    """Disconnect a source.

    Its secrets are dropped (a GA4 grant revoked at Google, best effort) and its daily sync
    stops; the figures it synced are kept and still read (historical metrics) unless
    `purgeData`, which deletes them. It stays listed as `disconnected`; connecting the
    property again makes a new source."""
    return await service.disconnect(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.post(
    "syncSource",
    "/v1/analytics/sources/{id}/sync",
    access=Access.editor,
    errors=[SourceNotFound, SyncRunning, SourceNotConnected],
)
async def sync_source(
    ctx: Context, data: schemas.ContentSyncSourceInput
) -> schemas.ContentSyncStarted:
    """Backfill or refresh a source now.

    The `days` days ending yesterday (in the organization's time zone) are asked of the
    provider again, as durable background work; each day's figures replace those stored. A
    429 is asked again after the provider's Retry-After (or a doubling back-off); the days it
    still refuses end the sync `partial`, named in the source's `missing_days`. 409 when a sync
    is already running, or the source is disconnected or pending_auth. The daily sync runs by
    itself."""
    return await service.start_sync(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "contentOverview",
    "/v1/analytics/content/overview",
    access=Access.member,
    errors=FILTER_ERRORS,
)
async def content_overview(
    ctx: Context, data: schemas.ContentOverviewInput
) -> schemas.ContentOverview:
    """Aggregate content performance for a period.

    Our published drafts' views, visitors, clicks, impressions, ctr and avg_position over the
    period (each figure from one provider: GA4, else Plausible, else Umami for traffic; Search
    Console for search), the mean of the SEO scores given in it and the drafts first published
    in it, beside the compared period. A figure no usable source reports is null (a source in
    error or not yet synced reports nothing), never 0."""
    return await reports.overview(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "contentTimeseries",
    "/v1/analytics/content/timeseries",
    access=Access.member,
    errors=[*FILTER_ERRORS, DraftNotFound],
)
async def content_timeseries(
    ctx: Context, data: schemas.ContentTimeseriesInput
) -> schemas.ContentSeries:
    """Content metrics over time.

    The overview's figures per day, ISO week (Monday) or month of the organization's time
    zone, gap-filled; a provider figure is null in a bucket past `data_through` and wherever no
    usable source reports it."""
    return await reports.timeseries(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "contentBreakdown",
    "/v1/analytics/content/breakdown",
    access=Access.member,
    errors=FILTER_ERRORS,
)
async def content_breakdown(
    ctx: Context, data: schemas.ContentBreakdownInput
) -> schemas.ContentBreakdownPage:
    """Content metrics grouped by a dimension.

    By analytics `source` (each read alone), `channel` (ai_assistant: chatgpt.com,
    perplexity.ai, gemini, copilot...; search, social, email, referral, direct), `referrer`,
    `country`, `device`, `publisher_connection` (the target: a draft live on two counts in
    both) or `job`. The catalog's keyword and tag groupings are not offered. seo_score_avg and
    published_count are null here. Sorted by `sortBy` (nulls last)."""
    return await reports.breakdown(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "topContent",
    "/v1/analytics/content/top",
    access=Access.member,
    errors=FILTER_ERRORS,
)
async def top_content(ctx: Context, data: schemas.ContentTopInput) -> schemas.ContentTopPage:
    """Top or bottom performing published posts.

    Our published drafts by the metric over the period (nulls last), with the change against
    the period as long just before; `bottom` leaves out posts published fewer than
    minDaysPublished days ago."""
    return await reports.top(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "draftPerformance",
    "/v1/analytics/content/drafts/{id}",
    access=Access.member,
    errors=[DraftNotFound],
)
async def draft_performance(
    ctx: Context, data: schemas.ContentDraftPerformanceInput
) -> schemas.ContentDraftPerformance:
    """Performance of one draft/published post.

    Where it is published (each target's URL: a draft live at two URLs sums both), its totals
    over the period, each source's own totals (null where the source does not report a figure,
    is in error or not synced), its series, its SEO score history (generated, optimized,
    edited, rescored) and the Search Console queries that showed it. 404 when the draft is
    absent; an unpublished draft answers its score history only."""
    return await reports.draft_performance(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "seoScoreTrend",
    "/v1/analytics/content/seo-scores",
    access=Access.member,
    errors=FILTER_ERRORS,
)
async def seo_score_trend(
    ctx: Context, data: schemas.ContentScoreTrendInput
) -> schemas.ContentScoreTrend:
    """SEO score trend and distribution.

    The SEO scores given in the period (a draft's at finalize, and each re-score in the bucket
    it happened in): per bucket their mean, median and count, and their spread over 0-49,
    50-69, 70-84 and 85-100."""
    return await reports.score_trend(ctx.session, ctx.tenant.tenant_id, data)
