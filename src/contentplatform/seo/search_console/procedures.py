"""Declarations only: seo.queryPerformance, seo.syncSearchConsole."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.search_console import schemas, service, sync, sync_schemas
from contentplatform.seo.search_console.errors import InvalidPattern
from contentplatform.seo.search_console.sync_errors import SyncWindowRefused
from contentplatform.seo.sync_runs.schemas import SyncRun

router = ProcedureRouter("seo", tag="SEO")


@router.get(
    "queryPerformance",
    "/v1/seo/search-console/performance",
    access=Access.member,
    errors=[InvalidPattern],
)
async def query_performance(
    ctx: Context, data: schemas.QueryPerformanceInput
) -> schemas.PerformanceReport:
    """Search performance (clicks, impressions, CTR, position) by up to 3 dimensions, compared.

    Served from the Search Console data our syncs stored, never live, for the property selected
    on the Search Console connection (none selected, or before the first sync: empty `data`,
    zero totals, `last_synced_at` null; not an error). `ctr` is clicks / impressions, `position`
    the impression-weighted average.

    Which stored fact answers (`source`): query rows when `query` is a dimension or a query or
    brand filter is given; else page totals (page x country x device) when a page, country or
    device is grouped by or filtered on; else the site's totals. `totals` sum every row of the
    filtered window from that same fact. Google returns only top query rows and drops
    anonymized queries, so query rows add up below the site's totals: `hidden` shows that share
    (the totals of the page/country/device scope minus its query rows) instead of hiding it.

    Dimensions: date, query, page, country, device, each at most once, at most 3.
    `searchAppearance` is not offered yet: Search Console answers it only alone and we store no
    appearance facts (a 400 names the allowed values). Filters: `queryFilter`/`pageFilter` with
    `contains`, `not_contains`, `starts_with` (these three ignore case), `equals` (exact),
    `regex`, `not_regex` (RE2 syntax, partial match as Search Console's: anchor with ^...$;
    at most 255 characters; a pattern RE2 refuses is 400). `country` is ISO 3166-1 alpha-3
    (any case; answered lowercase), `device` desktop|mobile|tablet. `brand`: `branded` keeps
    queries holding the brand name or one of the brand terms of seo.getSettings (ignoring case),
    `non_branded` the others (every query, when none is set).

    `compare`: `previous_period` (as many days just before) or `previous_year` (the same days
    a year before; 29 February reads the 28th) adds `previous` and `change` to each row (a date
    row is matched with its day in the compared window; keys absent there compare with zeros)
    and `previous_totals`. `change.clicks_pct`/`impressions_pct` are percentages (null when the
    previous value is 0), `ctr_pts` percentage points, `position` current minus previous
    (negative: moved up). Sorting: `sortBy` clicks|impressions|ctr|position|date (date needs the
    date dimension), ties in key order. The window: endDate not before startDate, at most 16
    months. `data_state.final_through`: stored days up to it are final; later days up to
    `fresh_through` are fresh and will be replaced when Google finalizes them.

    Beyond Search Console, what it cannot know: with the `date` dimension, `events` lists our
    own content events in the window on the property's site (passing the pageFilter), newest
    first, at most 200: a draft `published` here (its first copy on a target), `updated` (a
    later publish to the same target), a page a website scan found changed (`page_changed`,
    against the scan before it; the 12 newest scans of the window). They are dated in Search
    Console's days (Pacific Time), so they line up with the rows' dates. `eventDate` (with a
    pageFilter, usually `equals` one page) adds `impact`: the page's clicks in the `eventDays`
    (7-90, default 28) before that day against as many after it (the day itself in neither;
    fewer when fewer are stored after it), held against the rest of the site over the same
    days (its totals minus the page's): `expected_clicks` is the page's before, moved as the
    rest moved; `lift_pct` the page's after against it; `verdict` improved (>= +10%), declined
    (<= -10%), no_clear_change, or insufficient_data (under 7 days after, or under 20 clicks
    on the page in both windows)."""
    return await service.query_performance(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "syncSearchConsole",
    "/v1/seo/search-console/sync",
    access=Access.editor,
    errors=[SyncWindowRefused, SearchConsoleNotConnected],
)
async def sync_search_console(ctx: Context, data: sync_schemas.SyncSearchConsoleInput) -> SyncRun:
    """Pull Search Console performance rows and sitemaps into our store now (also runs daily).

    Answers the sync run at once (`queued`); poll seo.getSyncRun. Default window: the last day
    stored final minus 3 days through yesterday (Search Console's data lags 2-3 days); before
    the first sync, the backfill of settings' `searchConsole.backfillMonths` (16 by default),
    which is also queued when Search Console is connected. Days are in the organization's time
    zone for the window's bounds (`endDate` not after today, `startDate` not older than 16
    months: 400 otherwise).

    For each day, oldest first, and each of settings' `searchConsole.searchTypes`, three
    searchAnalytics.query requests with `dataState=all`, paged by 25,000 rows: the site's
    totals, the pages' (page x country x device) and the query rows (query x page x country x
    device; none for `discover`, which has no query dimension), so totals stay right although
    Google drops anonymized queries. Days Google reports before `metadata.firstIncompleteDate`
    are stored final and never fetched again; later ones are stored fresh and replaced by the
    next sync once final. Each day is stored in one transaction: a crash resumes the run where
    it stopped, fetching again only the day in flight. Quota answers (429, 403 quotaExceeded or
    rateLimitExceeded) are retried after Retry-After or a growing backoff; a day still refused
    is left out and the run ends `partial`, its days in `error.items` ({day, search_type,
    reason}, at most 100), fetched by the next sync. A revoked grant fails the run
    (`error.code` `needs_reauth`) and turns the connection needs_reauth. Then, unless
    `include` leaves them out, the property's sitemaps (sitemaps.list).

    One Search Console run at a time: while one is queued or running it is answered instead of
    a second. The same window asked again the same day answers the run that synced it (a
    retried trigger never pays twice); a window whose run ended failed or partial starts a new
    run. A daily sync runs at 04:00 in the organization's time zone (jobs.schedulingConfig)
    while the connection's `sync_enabled` is on. 409 when Search Console is not connected,
    needs to be authorized again, or has no property selected."""
    return await sync.sync_now(
        ctx.session, ctx.tenant.tenant_id, data, created_by=ctx.identity.subject
    )
