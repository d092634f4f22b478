"""The rules of PageSpeed. Never commits.

runPageSpeed stores one pending result per URL and strategy inside a sync run of kind
`pagespeed` and queues the run's durable workflow (durable.py) once this commits; the workflow
measures each `runs` times (Lighthouse through PageSpeed Insights, or locally) and stores the
medians. Reads never call a provider.

`latest_vitals` is what the audit's Core Web Vitals checks (lcp_poor, inp_poor, cls_poor) read:
the newest completed result of each URL, mobile preferred (Google ranks on mobile), its field
data (the Chrome UX Report's 75th percentile of real visits) and its lab figures. Google's
thresholds, at the 75th percentile (web.dev/articles/vitals, "Core Web Vitals thresholds"):

    LCP  good <= 2500 ms, poor > 4000 ms
    INP  good <= 200 ms,  poor > 500 ms
    CLS  good <= 0.1,     poor > 0.25
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.kit.db import utcnow
from contentplatform.kit.schemas import window_of
from contentplatform.seo import repository as seo_repository
from contentplatform.seo import service as seo
from contentplatform.seo.connections import access as connections
from contentplatform.seo.connections import offline
from contentplatform.seo.models import SeoPageSpeedResult
from contentplatform.seo.pagespeed import durable as workflows
from contentplatform.seo.pagespeed import repository, results, schemas
from contentplatform.seo.pagespeed.errors import NothingToMeasure, PageSpeedDisabled
from contentplatform.seo.sync_runs import schemas as sync_schemas
from contentplatform.seo.sync_runs import service as sync_runs
from contentplatform.website_scan.crawling.urls import normalize, url_hash

PROVIDER = "pagespeed_insights"
MAX_URL = 2048
# latest_vitals asks for this many URLs per query.
CHUNK = 500

LCP_GOOD_MS, LCP_POOR_MS = 2500, 4000
INP_GOOD_MS, INP_POOR_MS = 200, 500
CLS_GOOD, CLS_POOR = 0.1, 0.25
Rating = Literal["good", "needs_improvement", "poor"]
THRESHOLDS: dict[str, tuple[float, float]] = {
    "lcp_ms": (LCP_GOOD_MS, LCP_POOR_MS),
    "inp_ms": (INP_GOOD_MS, INP_POOR_MS),
    "cls": (CLS_GOOD, CLS_POOR),
}


def rating(metric: str, value: float | None) -> Rating | None:
    """Google's rating of a Core Web Vital (`lcp_ms`, `inp_ms`, `cls`) at its thresholds."""
    if value is None:
        return None
    good, poor = THRESHOLDS[metric]
    return "good" if value <= good else "poor" if value > poor else "needs_improvement"


def normalized(url: str) -> str | None:
    """The URL as results are stored (website_scan's normalization), None unless https."""
    found = normalize(url)
    if found is None or not found.startswith("https://") or len(found) > MAX_URL:
        return None
    return found


# --- runPageSpeed ---------------------------------------------------------------------------


async def _default_urls(session: AsyncSession, tenant_id: uuid.UUID) -> list[str]:
    """The top pages by Search Console clicks (audit.pagespeed_top_pages of them), else the
    site's home page, else none."""
    top = int(
        seo.blocks_of(await seo_repository.stored_settings(session, tenant_id))["audit"][
            "pagespeed_top_pages"
        ]
    )
    chosen = await offline.property_in_use(session, tenant_id)
    pages = (
        await repository.top_pages(session, tenant_id, chosen.id, min(top, schemas.MAX_URLS) * 2)
        if chosen is not None and top > 0
        else []
    )
    urls = _distinct(pages)[: min(top, schemas.MAX_URLS)]
    if urls:
        return urls
    home = await seo.site_url(session, tenant_id)
    return _distinct([home] if home else [])


def _distinct(urls: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for url in urls:
        found = normalized(url)
        if found is not None:
            seen.setdefault(found, None)
    return list(seen)


async def run(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    requested_by: str,
    data: schemas.RunPageSpeedInput,
) -> sync_schemas.SyncRun:
    if not settings.pagespeed_enabled:
        raise PageSpeedDisabled(
            "PageSpeed measurements are turned off for this deployment "
            "(CONTENTPLATFORM_PAGESPEED_ENABLED=false); stored results stay readable."
        )
    urls = (
        _distinct(data.urls) if data.urls is not None else await _default_urls(session, tenant_id)
    )
    if not urls:
        raise NothingToMeasure(
            "Nothing to measure: give `urls`, or set the SEO profile's site_url (or sync "
            "Search Console, whose most clicked pages are measured by default)."
        )
    strategies = ["mobile", "desktop"] if data.strategy == "both" else [data.strategy]
    keyed = await connections.pagespeed_key(session, tenant_id, settings) is not None
    run_row, _ = await sync_runs.open_run(
        session,
        tenant_id,
        kind="pagespeed",
        provider=PROVIDER,
        run_key=f"pagespeed:{uuid.uuid4()}",
        trigger="manual",
        params={
            "urls": len(urls),
            "strategies": strategies,
            "categories": list(data.categories),
            "runs": data.runs,
            "measured_by": settings.pagespeed_provider,
            "keyed": keyed,
            "defaulted": data.urls is None,
        },
        created_by=requested_by,
    )
    now = utcnow()
    for url in urls:
        for strategy in strategies:
            session.add(
                SeoPageSpeedResult(
                    id=uuid.uuid4(),
                    tenant_id=tenant_id,
                    sync_run_id=run_row.id,
                    url=url,
                    url_hash=url_hash(url),
                    strategy=strategy,
                    status="pending",
                    categories=list(data.categories),
                    runs_wanted=data.runs,
                    failed_audits=[],
                    runs=[],
                    created_at=now,
                    updated_at=now,
                )
            )
    await session.flush()
    await sync_runs.record_progress(
        session, tenant_id, run_row.id, done=0, total=len(urls) * len(strategies)
    )
    await session.refresh(run_row)
    workflows.enqueue_after_commit(session, tenant_id, run_row.id)
    return sync_runs.record(run_row)


# --- listPageSpeedResults -------------------------------------------------------------------


async def list_results(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListPageSpeedResultsInput
) -> schemas.PageSpeedResultPage:
    url = normalized(data.url) or data.url if data.url is not None else None
    if data.page_id is not None:
        page_url = await repository.url_of_page(session, tenant_id, data.page_id)
        if page_url is None or (url is not None and url != page_url):
            return schemas.PageSpeedResultPage(data=[], total=0, page=data.page, limit=data.limit)
        url = page_url
    rows, total = await repository.results_page(
        session,
        tenant_id,
        url=url,
        strategy=data.strategy,
        latest_only=data.latest_only,
        **window_of(data),
    )
    pages = await repository.page_ids(session, tenant_id, [row.url for row in rows])
    return schemas.PageSpeedResultPage(
        data=[results.record(row, pages.get(row.url)) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


# --- what the audit reads -------------------------------------------------------------------


@dataclass(frozen=True)
class Vitals:
    """A URL's Core Web Vitals from its newest completed PageSpeed result (mobile preferred).
    Field figures are the Chrome UX Report's 75th percentile (`field_scope` url or origin;
    none: no field data, all three None); lab figures are the median of the Lighthouse runs
    (lab has no INP: TBT stands in for it in Lighthouse's own score)."""

    url: str
    strategy: str
    field_scope: str
    field_lcp_ms: int | None
    field_inp_ms: int | None
    field_cls: float | None
    lab_lcp_ms: int | None
    lab_cls: float | None
    fetched_at: datetime


def _vitals(row: SeoPageSpeedResult) -> Vitals:
    field, lab = row.field or {}, row.lab or {}
    return Vitals(
        url=row.url,
        strategy=row.strategy,
        field_scope=str(field.get("scope") or "none"),
        field_lcp_ms=field.get("lcp_ms"),
        field_inp_ms=field.get("inp_ms"),
        field_cls=field.get("cls"),
        lab_lcp_ms=lab.get("lcp_ms"),
        lab_cls=lab.get("cls"),
        fetched_at=row.fetched_at or row.updated_at,
    )


async def _newest_completed(
    session: AsyncSession, tenant_id: uuid.UUID, urls: list[str]
) -> dict[str, SeoPageSpeedResult]:
    """Each of `urls` (normalized) that has a completed result: its newest, mobile preferred."""
    best: dict[str, SeoPageSpeedResult] = {}
    for start in range(0, len(urls), CHUNK):
        for row in await repository.latest_completed(
            session, tenant_id, urls[start : start + CHUNK]
        ):
            kept = best.get(row.url)
            if kept is None or (kept.strategy != "mobile" and row.strategy == "mobile"):
                best[row.url] = row
    return best


async def latest_vitals(
    session: AsyncSession, tenant_id: uuid.UUID, urls: Sequence[str]
) -> dict[str, Vitals]:
    """Each of `urls` (as given) that has a completed result: its Vitals. A URL is looked up
    normalized, so the crawl's URLs and the measured ones meet."""
    wanted: dict[str, list[str]] = {}
    for url in urls:
        found = normalize(url)
        if found is not None:
            wanted.setdefault(found, []).append(url)
    answer: dict[str, Vitals] = {}
    for url, row in (await _newest_completed(session, tenant_id, list(wanted))).items():
        for given in wanted.get(url, []):
            answer[given] = _vitals(row)
    return answer


# --- what the page inventory reads ----------------------------------------------------------

# The Chrome UX Report's words for a metric's rating (PageSpeed's `category`).
CATEGORY_OF_RATING = {"good": "FAST", "needs_improvement": "AVERAGE", "poor": "SLOW"}


async def latest_of_page(
    session: AsyncSession, tenant_id: uuid.UUID, url: str, page_id: uuid.UUID
) -> dict[str, schemas.PageSpeedResult]:
    """The page's newest settled result per strategy (seo.getPage)."""
    rows, _ = await repository.results_page(
        session, tenant_id, url=url, strategy=None, latest_only=True, limit=2, offset=0
    )
    return {row.strategy: results.record(row, page_id) for row in rows}


async def page_summaries(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> dict[str, tuple[int | None, str | None]]:
    """Per URL the run measured, from its newest completed result (mobile preferred): the
    performance score and the LCP category of the URL's own field data (none without it)."""
    urls = await repository.urls_of_run(session, tenant_id, run_id)
    found: dict[str, tuple[int | None, str | None]] = {}
    for url, row in (await _newest_completed(session, tenant_id, urls)).items():
        vitals = _vitals(row)
        lcp = rating("lcp_ms", vitals.field_lcp_ms) if vitals.field_scope == "url" else None
        score = (row.scores or {}).get("performance")
        found[url] = (None if score is None else int(score), lcp and CATEGORY_OF_RATING[lcp])
    return found
