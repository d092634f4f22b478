"""The rules of sitemaps and URL inspections. Never commits.

Sitemaps: Search Console's (stored by `refresh_sitemaps`, which the Search Console sync calls,
and by submitSitemap) and robots.txt's, read from our table: a list never calls Google.
Submitting or deleting one calls Google first and changes our table only when Google took it.

URL inspections: inspectUrls stores pending inspections inside a sync run of kind
`url_inspection` and queues the run's durable workflow (durable.py) once this commits. The
property's quota (QUOTA_PER_DAY a day, Google's, reset at midnight Pacific time) is counted from
our table with the tenant locked, so two racing calls cannot both pass it: the call that would
pass it is refused (429, Retry-After the seconds to the reset) before anything is stored or
sent. A URL inspected in the last RECENT window is answered as it is unless `force`.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime, time, timedelta
from typing import NoReturn
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.kit.db import Required, insert_ignoring_conflicts, utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.kit.schemas import window_of
from contentplatform.seo import service as seo
from contentplatform.seo.connections import access as connections
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.connections.google import GoogleApiError, GoogleGrantRevoked
from contentplatform.seo.inspections import durable as workflows
from contentplatform.seo.inspections import repository, results, schemas
from contentplatform.seo.inspections.errors import (
    InspectionQuotaExceeded,
    OtherPropertySitemap,
    OutsideProperty,
    RobotsSitemap,
    SearchConsoleBusy,
    SearchConsoleRefused,
    SearchConsoleUnavailable,
    SitemapNotFound,
    SitemapsReadOnly,
    UrlInspectionNotFound,
)
from contentplatform.seo.models import SeoSitemap, SeoUrlInspection
from contentplatform.seo.sync_runs import service as sync_runs
from contentplatform.tenants import service as tenants
from contentplatform.website_scan.snapshots import service as snapshots

QUOTA_PER_DAY = 2000
QUOTA_ZONE = ZoneInfo("America/Los_Angeles")
RECENT = timedelta(hours=24)
RESTRICTED = "siteRestrictedUser"

require_sitemap = Required(repository.get_sitemap, SitemapNotFound)
require_inspection = Required(repository.get_inspection, UrlInspectionNotFound)


# --- the property ---------------------------------------------------------------------------


def within(site_url: str, url: str) -> bool:
    """Whether the https `url` is within the property `site_url` (seo.within_property): the
    URL Inspection API inspects https URLs only."""
    return urlsplit(url).scheme.lower() == "https" and seo.within_property(site_url, url)


def _check_within(site_url: str, urls: list[str], field: str, *, many: bool) -> None:
    outside = [(index, url) for index, url in enumerate(urls) if not within(site_url, url)]
    if not outside:
        return
    errors = [
        FieldError(
            path=f"{field}.{index}" if many else field,
            message=f"{url} is not within the Search Console property {site_url}",
        )
        for index, url in outside
    ]
    raise OutsideProperty(
        f"{len(outside)} URL(s) are not within the selected Search Console property "
        f"{site_url}: {outside[0][1]}",
        errors=errors,
    )


def _writable(access: connections.SearchConsoleAccess) -> None:
    if access.read_only:
        raise SitemapsReadOnly(
            "Search Console was connected read-only: sitemaps cannot be submitted or deleted. "
            "Reconnect it with full access (readOnly false)."
        )
    if access.permission_level == RESTRICTED:
        raise SitemapsReadOnly(
            f"Google gives this account only restricted permission on {access.site_url}: "
            "sitemaps can be submitted or deleted by an owner or a full user of the property."
        )


async def _refused(tenant_id: uuid.UUID, error: GoogleApiError) -> NoReturn:
    """Google's refusal of a sitemap call as one of our errors."""
    if isinstance(error, GoogleGrantRevoked):
        # In a transaction of its own: the request's rolls back with the error raised here.
        async with runtime.current().db.unit_of_work() as own:
            await connections.grant_revoked(own, tenant_id)
        raise SearchConsoleNotConnected(
            "Google no longer accepts the Search Console grant: reconnect Search Console."
        )
    if error.status == 429 or error.reason in ("quotaExceeded", "rateLimitExceeded"):
        raise SearchConsoleBusy(
            f"Google asked to slow down: {error.message}",
            retry_after=math.ceil(error.retry_after or 60),
        )
    if error.status == 403:
        raise SitemapsReadOnly(f"Google refused: {error.message}")
    if error.status in (400, 404):
        raise SearchConsoleRefused(f"Google refused: {error.message}")
    raise SearchConsoleUnavailable(
        f"Search Console failed or could not be reached: {error.message}"
    )


# --- sitemaps -------------------------------------------------------------------------------


def sitemap_record(row: SeoSitemap) -> schemas.Sitemap:
    return schemas.Sitemap.model_validate(row)


async def list_sitemaps(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListSitemapsInput
) -> schemas.SitemapPage:
    property_id = await repository.selected_property(session, tenant_id)
    rows, total = await repository.sitemaps_page(
        session,
        tenant_id,
        property_id=property_id,
        source=None if data.source == "all" else data.source,
        **window_of(data),
    )
    checked = await _cross_check(session, tenant_id, property_id, rows)
    return schemas.SitemapPage(
        data=[
            sitemap_record(row).model_copy(update={"snapshot": checked[row.id]})
            if row.id in checked
            else sitemap_record(row)
            for row in rows
        ],
        total=total,
        page=data.page,
        limit=data.limit,
    )


# --- robots.txt's sitemaps, and every sitemap against the crawl -------------------------------

MAX_SITEMAP_URL = 2048


async def _scans_of_site(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID | None
) -> list[snapshots.SiteFiles]:
    """The newest complete scan of each crawled site within the selected property (of every
    crawled site when none is selected), newest first."""
    site_url = (
        await repository.property_site_url(session, tenant_id, property_id)
        if property_id is not None
        else None
    )
    return [
        scan
        for scan in await snapshots.latest_site_files(session, tenant_id)
        if site_url is None or seo.within_property(site_url, scan.start_url)
    ]


async def keep_robots_sitemaps(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """The `robots_txt` rows made to match the Sitemap lines of the robots.txt each crawled
    site answered at its newest complete scan (the sites within the selected property): a
    sitemap no longer declared goes, one still declared keeps its row (and id)."""
    property_id = await repository.selected_property(session, tenant_id)
    declared: dict[str, tuple[datetime | None, bool]] = {}
    for scan in await _scans_of_site(session, tenant_id, property_id):
        indexes = {
            report.get("url")
            for report in (scan.sitemaps or {}).get("read") or []
            if report.get("type") == "index"
        }
        for url in (scan.robots_txt or {}).get("declared_sitemaps") or []:
            if _plain_url(url):
                declared.setdefault(url, (scan.finished_at, url in indexes))
    kept = {row.url: row for row in await repository.robots_sitemaps(session, tenant_id)}
    gone = [row.id for url, row in kept.items() if url not in declared]
    await repository.delete_sitemaps(session, tenant_id, gone)
    now = utcnow()
    for url, (seen_at, is_index) in declared.items():
        row = kept.get(url)
        if row is None:
            row = SeoSitemap(
                tenant_id=tenant_id,
                property_id=None,
                url=url,
                source="robots_txt",
                errors=0,
                warnings=0,
                contents=[],
                is_pending=False,
            )
            session.add(row)
        row.is_index = is_index
        row.synced_at = seen_at or now
        row.updated_at = now
    await session.flush()


def _plain_url(value: object) -> bool:
    """An http(s) URL of at most 2,048 characters without control characters: what a site's
    robots.txt names is text from outside, kept only as such."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_SITEMAP_URL
        and value.lower().startswith(("http://", "https://"))
        and not any(ord(char) < 0x20 or ord(char) == 0x7F for char in value)
    )


async def _cross_check(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID | None,
    rows: list[SeoSitemap],
) -> dict[uuid.UUID, schemas.SitemapSnapshot]:
    """Each sitemap the newest complete scan of the site read, against that scan's pages: the
    URLs it lists (its own and, for an index, its children's), those crawled with another
    status than 200, those crawled but not indexable (noindex, canonical elsewhere, not HTML),
    and the site's indexable pages no sitemap lists."""
    if not rows:
        return {}
    scans = [
        scan
        for scan in await _scans_of_site(session, tenant_id, property_id)
        if scan.sitemaps is not None
    ]
    if not scans:
        return {}
    scan = scans[0]
    sitemaps = scan.sitemaps or {}
    read = {report.get("url") for report in sitemaps.get("read") or []}
    listed: dict[str, list[str]] = sitemaps.get("listed") or {}
    by_sitemap: dict[str, list[str]] = {}
    for url, where in listed.items():
        for sitemap in where:
            by_sitemap.setdefault(sitemap, []).append(url)
    pages = await snapshots.indexable_pages(session, tenant_id, scan.snapshot_id)
    not_listed = sum(1 for url, indexable in pages.items() if indexable and url not in listed)
    checked = {}
    for row in rows:
        if row.url not in read:
            continue  # the scan did not reach it: nothing to say
        urls = by_sitemap.get(row.url, [])
        checked[row.id] = schemas.SitemapSnapshot(
            snapshot_id=scan.snapshot_id,
            urls=len(urls),
            non_200=sum(1 for url in urls if url in pages and pages[url] is None),
            non_indexable=sum(1 for url in urls if pages.get(url) is False),
            not_listed_indexable_pages=not_listed,
        )
    return checked


async def _stored(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, url: str
) -> SeoSitemap:
    """The property's Search Console row of `url`, made if missing (safe under a racing second
    submit: the insert of the one that comes second does nothing)."""
    now = utcnow()
    await session.execute(
        insert_ignoring_conflicts(
            session,
            SeoSitemap,
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            property_id=property_id,
            url=url,
            source="search_console",
            is_index=False,
            is_pending=True,
            errors=0,
            warnings=0,
            contents=[],
            created_at=now,
            updated_at=now,
        )
    )
    row = await repository.sitemap_by_url(session, tenant_id, property_id, "search_console", url)
    assert row is not None  # inserted, or there already
    return row


async def submit_sitemap(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.SubmitSitemapInput
) -> schemas.Sitemap:
    """Google's sitemaps.submit, then our row: pending until the next sync reads Google's
    report of it. Resubmitting submits again and refreshes the same row."""
    access = await connections.search_console(session, tenant_id)
    _writable(access)
    _check_within(access.site_url, [data.url], "url", many=False)
    try:
        await access.client.submit_sitemap(access.site_url, data.url)
    except GoogleApiError as error:
        await _refused(tenant_id, error)
    row = await _stored(session, tenant_id, access.property_id, data.url)
    now = utcnow()
    row.is_pending = True
    row.last_submitted = now
    row.synced_at = now
    row.updated_at = now
    await session.flush()
    return sitemap_record(row)


async def delete_sitemap(
    session: AsyncSession, tenant_id: uuid.UUID, sitemap_id: uuid.UUID
) -> None:
    """Google's sitemaps.delete (one Google no longer knows counts as deleted), then our row."""
    row = await require_sitemap(session, tenant_id, sitemap_id)
    if row.source == "robots_txt":
        raise RobotsSitemap(
            f"{row.url} is declared in the site's robots.txt: remove its Sitemap: line there."
        )
    access = await connections.search_console(session, tenant_id)
    _writable(access)
    if row.property_id != access.property_id:
        raise OtherPropertySitemap(
            f"{row.url} belongs to another Search Console property than {access.site_url}."
        )
    try:
        await access.client.delete_sitemap(access.site_url, row.url)
    except GoogleApiError as error:
        if error.status != 404:
            await _refused(tenant_id, error)
    await session.delete(row)


async def refresh_sitemaps(
    session: AsyncSession, tenant_id: uuid.UUID, access: connections.SearchConsoleAccess
) -> int:
    """Google's sitemaps.list of the selected property stored as our Search Console rows (rows
    Google no longer lists are deleted): how many are stored. Google's errors (GoogleApiError,
    GoogleGrantRevoked) are the caller's, the Search Console sync's, to handle."""
    listed = await access.client.list_sitemaps(access.site_url)
    rows = {
        row.url: row
        for row in await repository.property_sitemaps(
            session, tenant_id, access.property_id, "search_console"
        )
    }
    now = utcnow()
    seen: set[str] = set()
    for item in listed:
        url = item.get("path")
        if not isinstance(url, str) or not url or len(url) > 2048 or url in seen:
            continue
        seen.add(url)
        row = rows.pop(url, None)
        if row is None:
            row = SeoSitemap(
                id=uuid.uuid4(),
                tenant_id=tenant_id,
                property_id=access.property_id,
                url=url,
                source="search_console",
                created_at=now,
            )
            session.add(row)
        results.apply_sitemap(row, item, now)
    await repository.delete_sitemaps(session, tenant_id, [row.id for row in rows.values()])
    await session.flush()
    return len(seen)


# --- URL inspections ------------------------------------------------------------------------


def quota_day(now: datetime) -> tuple[datetime, datetime]:
    """The quota's day around `now`: when it began and when it resets (midnights Pacific)."""
    day = now.astimezone(QUOTA_ZONE).date()
    start = datetime.combine(day, time(0), QUOTA_ZONE)
    reset = datetime.combine(day + timedelta(days=1), time(0), QUOTA_ZONE)
    return start.astimezone(now.tzinfo), reset.astimezone(now.tzinfo)


def inspection_record(row: SeoUrlInspection) -> schemas.UrlInspection:
    return schemas.UrlInspection.model_validate(row)


async def inspect(
    session: AsyncSession, tenant_id: uuid.UUID, requested_by: str, data: schemas.InspectUrlsInput
) -> schemas.InspectUrlsAnswer:
    access = await connections.search_console(session, tenant_id)
    _check_within(access.site_url, list(data.urls), "urls", many=True)
    # The quota is counted and taken in one transaction at a time per tenant.
    await tenants.lock_tenant(session, tenant_id)
    now = utcnow()
    recent = await repository.recent_by_url(
        session, tenant_id, access.property_id, data.urls, now - RECENT
    )
    # A pending one is answered even with `force`: it is being made now.
    kept = {url: row for url, row in recent.items() if not data.force or row.status == "pending"}
    new = [url for url in data.urls if url not in kept]
    start, reset = quota_day(now)
    used = await repository.asked_since(session, tenant_id, access.property_id, start)
    if used + len(new) > QUOTA_PER_DAY:
        raise InspectionQuotaExceeded(
            f"{len(new)} new inspection(s) would pass the property's {QUOTA_PER_DAY} a day "
            f"({used} asked for today, {QUOTA_PER_DAY - used} left); the quota resets at "
            "midnight Pacific time. Nothing was sent.",
            retry_after=math.ceil((reset - now).total_seconds()),
        )
    made: dict[str, SeoUrlInspection] = {}
    if new:
        language = data.language_code or await repository.settings_language(session, tenant_id)
        run, _ = await sync_runs.open_run(
            session,
            tenant_id,
            kind="url_inspection",
            # The provider that answers: offline's made-up results never pass for Google's.
            provider=access.provider,
            run_key=f"url_inspection:{uuid.uuid4()}",
            trigger="manual",
            params={"urls": len(new), "force": data.force, "language_code": language},
            property_id=access.property_id,
            created_by=requested_by,
        )
        for url in new:
            made[url] = SeoUrlInspection(
                id=uuid.uuid4(),
                tenant_id=tenant_id,
                property_id=access.property_id,
                run_id=run.id,
                url=url,
                language_code=language,
                status="pending",
                sitemaps=[],
                referring_urls=[],
                requested_by=requested_by,
                created_at=now,
                updated_at=now,
            )
            session.add(made[url])
        await sync_runs.record_progress(session, tenant_id, run.id, done=0, total=len(new))
        await session.flush()
        workflows.enqueue_after_commit(session, tenant_id, run.id)
    answers = [inspection_record(kept.get(url) or made[url]) for url in data.urls]
    used += len(new)
    return schemas.InspectUrlsAnswer(
        data=answers,
        total=len(answers),
        quota=schemas.InspectionQuota(
            used_today=used, limit_per_day=QUOTA_PER_DAY, remaining=QUOTA_PER_DAY - used
        ),
    )


async def list_inspections(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListUrlInspectionsInput
) -> schemas.UrlInspectionPage:
    rows, total = await repository.inspections_page(
        session,
        tenant_id,
        verdict=data.verdict,
        status=data.status,
        search=data.search,
        latest_only=data.latest_only,
        **window_of(data),
    )
    return schemas.UrlInspectionPage(
        data=[inspection_record(row) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


async def get_inspection(
    session: AsyncSession, tenant_id: uuid.UUID, inspection_id: uuid.UUID
) -> schemas.UrlInspectionDetail:
    row = await require_inspection(session, tenant_id, inspection_id)
    before = await repository.previous_completed(session, tenant_id, row)
    previous = (
        schemas.PreviousInspection.model_validate(before, from_attributes=True)
        if before is not None
        else None
    )
    return schemas.UrlInspectionDetail.model_validate(
        {**inspection_record(row).model_dump(), "previous": previous}
    )
