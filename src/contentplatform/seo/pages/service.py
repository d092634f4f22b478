"""The page inventory's reads: listPages from the rows alone (an index range per order), and
getPage's 360 view from local data only (no provider call).

A tenant whose inventory has no row yet gets it built from what is stored at its first read
(inventory.ensure_built): the tenants that scanned or synced before the inventory existed.
"""

from __future__ import annotations

import calendar
import uuid
from datetime import date, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Required
from contentplatform.kit.schemas import window_of
from contentplatform.seo.connections import offline
from contentplatform.seo.geo import service as geo
from contentplatform.seo.inspections import service as inspections
from contentplatform.seo.models import SeoPage
from contentplatform.seo.pages import inventory, repository, schemas
from contentplatform.seo.pages.errors import PageNotFound
from contentplatform.seo.pagespeed import service as pagespeed
from contentplatform.seo.rank import service as rank

require = Required(repository.get, PageNotFound)
TOP_QUERIES = 20


async def list_pages(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListPagesInput
) -> schemas.SeoPagePage:
    await inventory.ensure_built(session, tenant_id)
    rows, total = await repository.page(
        session,
        tenant_id,
        search=data.search,
        source=data.source,
        indexable=data.indexable,
        has_issues=data.has_issues,
        severity=data.severity,
        verdict=data.verdict,
        sort_by=data.sort_by,
        descending=data.sort_order == "desc",
        **window_of(data),
    )
    return schemas.SeoPagePage(
        data=[schemas.SeoPage.model_validate(row) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


async def get_page(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.GetPageInput
) -> schemas.SeoPageDetail:
    await inventory.ensure_built(session, tenant_id)
    row = await require(session, tenant_id, data.id)
    series, queries = await _search_console(session, tenant_id, row, data.period)
    inspection = (
        None
        if row.inspection_id is None
        else await repository.inspection(session, tenant_id, row.inspection_id)
    )
    base = schemas.SeoPage.model_validate(row).model_dump(exclude={"tracked_keywords"})
    return schemas.SeoPageDetail(
        **base,
        series=series,
        top_queries=queries,
        issues=await audit_issues(session, tenant_id, row),
        latest_inspection=None if inspection is None else inspections.inspection_record(inspection),
        pagespeed=await pagespeed_results(session, tenant_id, row),
        tracked_keywords=await tracked_keywords(session, tenant_id, row),
        ai_citations=[],
        geo=await geo.page_of(session, tenant_id, row.url) if row.in_latest_snapshot else None,
        actions=[],
    )


def _first_day(last: date, period: str) -> date:
    if period == "16m":
        # Sixteen months back (the day clamped to the month's length), then the day after.
        month = last.year * 12 + last.month - 1 - 16
        year, month = divmod(month, 12)
        day = min(last.day, calendar.monthrange(year, month + 1)[1])
        return date(year, month + 1, day) + timedelta(days=1)
    return last - timedelta(days=(90 if period == "90d" else 28) - 1)


async def _search_console(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoPage, period: str
) -> tuple[list[schemas.SeriesPoint], list[schemas.TopQuery]]:
    """The page's daily series and its top queries over the period, in the property in use,
    ending at its last stored day; empty without Search Console data for the page."""
    chosen = await offline.property_in_use(session, tenant_id)
    pages = row.search_console_pages or [row.url]
    if chosen is None or chosen.fresh_through is None:
        return [], []
    last = chosen.fresh_through
    first = _first_day(last, period)
    days = await repository.series(session, tenant_id, chosen.id, pages, first, last)
    series = [
        schemas.SeriesPoint(
            date=day,
            clicks=clicks,
            impressions=shown,
            position=round(position / shown, 2) if shown else None,
        )
        for day, clicks, shown, position in days
    ]
    found = await repository.top_queries(
        session, tenant_id, chosen.id, pages, first, last, TOP_QUERIES
    )
    queries = [
        schemas.TopQuery(
            query=query,
            clicks=clicks,
            impressions=shown,
            ctr=round(clicks / shown, 4) if shown else None,
            position=round(position / shown, 2) if shown else None,
        )
        for query, clicks, shown, position in found
    ]
    return series, queries


async def audit_issues(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoPage
) -> list[schemas.PageIssue]:
    """The page's open issues in the newest audit of its site (none before any audit)."""
    if row.audit_id is None:
        return []
    return [
        schemas.PageIssue(
            check_id=check_id, severity=severity, category=category, evidence=evidence
        )
        for check_id, severity, category, evidence in await repository.open_findings(
            session, tenant_id, row.audit_id, row.url_hash
        )
    ]


async def tracked_keywords(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoPage
) -> list[schemas.PageKeyword]:
    """The tracked keywords whose newest check ranks this page (their URL normalized as the
    inventory's), best position first: read from the keywords' rows (at most 500)."""
    return [
        schemas.PageKeyword(
            id=keyword.id,
            keyword=keyword.keyword,
            position=keyword.position,
            device=keyword.device,
            market=schemas.KeywordMarket(
                location_code=keyword.location_code, language_code=keyword.language_code
            ),
        )
        for keyword in await rank.ranking(session, tenant_id)
        if keyword.url and (key := inventory.key_of(keyword.url)) and key[1] == row.url_hash
    ]


async def pagespeed_results(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoPage
) -> schemas.PageSpeedPair:
    """The page's newest PageSpeed result per strategy."""
    found = await pagespeed.latest_of_page(session, tenant_id, row.url, row.id)
    return schemas.PageSpeedPair(mobile=found.get("mobile"), desktop=found.get("desktop"))
