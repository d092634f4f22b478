"""GEO's rules: which scan is read, the readiness summary, the pages' citability and llms.txt.

Everything is computed from a website-scan snapshot, never fetched: the newest complete scan
of the tenant's site (the SEO profile's site_url, else the selected Search Console property;
any scan when neither is set), or the one asked for. A snapshot never changes once finished,
so what its pages score is kept per process for the latest few snapshots (`_scored`).
"""

from __future__ import annotations

import fnmatch
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from cachetools import LRUCache
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.kit.schemas import offset_of
from contentplatform.seo import service as seo
from contentplatform.seo.geo import citability, crawlers, llms_txt, repository, schemas
from contentplatform.seo.geo.errors import NoCompleteScan, NotAnIndexablePage
from contentplatform.seo.models import SeoLlmsTxt
from contentplatform.seo.search_console import repository as search_console
from contentplatform.website_scan.snapshots import service as snapshots

CLICK_DAYS = 28
LOW, HIGH = 40, 70  # citability bands: low under 40, high from 70


@dataclass(frozen=True)
class _Scored:
    page: snapshots.PageText
    result: citability.Citability


@dataclass(frozen=True)
class _Scan:
    """What a snapshot's pages come to: the indexable ones scored, and their JSON-LD."""

    pages: list[_Scored]
    json_ld_types: Counter[str]
    with_json_ld: int
    invalid_json_ld: int
    home: snapshots.PageText | None


_scored: LRUCache[tuple[uuid.UUID, uuid.UUID], _Scan] = LRUCache(maxsize=16)


async def scan_of(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID | None
) -> snapshots.SiteFiles:
    """The snapshot asked for (404 when not the tenant's finished one), else the newest
    complete scan of the tenant's site (409 when there is none)."""
    if snapshot_id is not None:
        return await snapshots.site_files_of(session, tenant_id, snapshot_id)
    site = await seo.site_url(session, tenant_id)
    if site is None:
        chosen = await search_console.selected_property(session, tenant_id)
        site = chosen.site_url if chosen is not None else None
    for scan in await snapshots.latest_site_files(session, tenant_id):
        if site is None or seo.within_property(site, scan.start_url):
            return scan
    raise NoCompleteScan(
        "The site has no complete website scan yet: GEO reads one. Scan the site first "
        "(websiteScan.startCrawl)."
    )


async def _pages(session: AsyncSession, tenant_id: uuid.UUID, scan: snapshots.SiteFiles) -> _Scan:
    key = (tenant_id, scan.snapshot_id)
    found = _scored.get(key)
    if found is not None:
        return found
    scanned_at = scan.finished_at or utcnow()
    pages = await snapshots.page_texts(session, tenant_id, scan.snapshot_id)
    scored: list[_Scored] = []
    types: Counter[str] = Counter()
    with_json_ld = invalid = 0
    home = None
    for page in pages:
        if not page.indexable:
            continue
        if home is None or page.depth < home.depth:
            home = page
        result = citability.score(
            citability.PageText(
                page.url,
                page.title,
                page.headings,
                page.json_ld,
                page.content,
                page.word_count,
                page.external_links,
            ),
            scanned_at,
        )
        scored.append(_Scored(page, result))
        if page.json_ld:
            with_json_ld += 1
            if any(isinstance(item, dict) and "error" in item for item in page.json_ld):
                invalid += 1
            types.update(
                {
                    kind
                    for node in citability.nodes(page.json_ld)
                    for kind in citability.types_of(node)
                }
            )
    found = _Scan(scored, types, with_json_ld, invalid, home)
    _scored[key] = found
    return found


# --- readiness ----------------------------------------------------------------------------------


async def readiness(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ReadinessInput
) -> schemas.GeoReadiness:
    scan = await scan_of(session, tenant_id, data.snapshot_id)
    scanned = await _pages(session, tenant_id, scan)
    issues: list[schemas.GeoIssue] = []
    root = _origin(scan.start_url) + "/"
    access: list[crawlers.CrawlerAccess] = []
    if scan.robots_txt is None:
        issues.append(
            schemas.GeoIssue(
                code="not_evaluated",
                severity="notice",
                message="This scan predates the robots.txt kept with scans: scan again to see "
                "the AI crawlers' access.",
            )
        )
    else:
        access = crawlers.crawler_access(scan.robots_txt, root)
    for agent in access:
        if agent.effect == "blocked_from_answers":
            issues.append(
                schemas.GeoIssue(
                    code="ai_search_blocked",
                    severity="error",
                    message=f"robots.txt blocks {agent.bot} ({agent.operator}, {agent.purpose}): "
                    "the site cannot appear in that engine's answers.",
                )
            )
        elif agent.effect == "excluded_from_training":
            issues.append(
                schemas.GeoIssue(
                    code="ai_training_blocked",
                    severity="notice",
                    message=f"robots.txt keeps {agent.bot} ({agent.operator}) from training on "
                    "the site: a policy choice, answers are not affected.",
                )
            )
    if access and all(agent.allowed is None for agent in access):
        issues.append(
            schemas.GeoIssue(
                code="robots_txt_unreadable",
                severity="warning",
                message="robots.txt could not be read at the scan: crawlers keep away then.",
            )
        )
    live = await _live_llms(session, tenant_id, scan)
    if not live.present:
        issues.append(
            schemas.GeoIssue(
                code="llms_txt_missing",
                severity="warning",
                message="The site serves no /llms.txt: generate one (seo.generateLlmsTxt) and "
                "publish it at the site's root.",
            )
        )
    elif not live.valid:
        issues.append(
            schemas.GeoIssue(
                code="llms_txt_invalid",
                severity="warning",
                message="The site's /llms.txt does not follow llmstxt.org's format: "
                + "; ".join(live.problems[:3]),
            )
        )
    count = len(scanned.pages)
    share = scanned.with_json_ld * 100.0 / count if count else 0.0
    if count and share < 50:
        issues.append(
            schemas.GeoIssue(
                code="structured_data_sparse",
                severity="warning",
                message=f"Only {share:.0f}% of the indexable pages carry JSON-LD structured data.",
            )
        )
    if scanned.invalid_json_ld:
        issues.append(
            schemas.GeoIssue(
                code="json_ld_invalid",
                severity="warning",
                message=f"{scanned.invalid_json_ld} page(s) carry a JSON-LD block that is not "
                "valid JSON.",
            )
        )
    scores = [item.result.score for item in scanned.pages]
    average = sum(scores) / count if count else None
    if average is not None and average < LOW:
        issues.append(
            schemas.GeoIssue(
                code="low_citability",
                severity="notice",
                message=f"The pages' average citability is {average:.0f} of 100: see "
                "seo.listGeoPages for what each page lacks.",
            )
        )
    return schemas.GeoReadiness(
        snapshot_id=scan.snapshot_id,
        computed_at=utcnow(),
        score=_score(access, live, share, average),
        crawler_access=[schemas.CrawlerAccess(**vars(agent)) for agent in access],
        llms_txt=live,
        structured_data=schemas.StructuredData(
            pages_with_json_ld_pct=round(share, 1),
            types=dict(scanned.json_ld_types.most_common()),
            invalid_pages=scanned.invalid_json_ld,
        ),
        citability=schemas.CitabilitySummary(
            avg=None if average is None else round(average, 1),
            distribution=schemas.CitabilityDistribution(
                low=sum(1 for s in scores if s < LOW),
                medium=sum(1 for s in scores if LOW <= s < HIGH),
                high=sum(1 for s in scores if s >= HIGH),
            ),
        ),
        issues=issues,
    )


def _score(
    access: list[crawlers.CrawlerAccess],
    live: schemas.LiveLlmsTxt,
    json_ld_share: float,
    average: float | None,
) -> int:
    if not access or all(agent.allowed is None for agent in access):
        crawling = 0.0
    else:
        blocked = sum(1 for agent in access if agent.effect == "blocked_from_answers")
        crawling = max(0.0, 40.0 - 10 * blocked)
    llms = 20.0 if live.present and live.valid else 10.0 if live.present else 0.0
    structured = 20.0 * json_ld_share / 100
    cited = 0.0 if average is None else 20.0 * average / 100
    return round(crawling + llms + structured + cited)


async def _live_llms(
    session: AsyncSession, tenant_id: uuid.UUID, scan: snapshots.SiteFiles
) -> schemas.LiveLlmsTxt:
    url = _origin(scan.start_url) + "/llms.txt"
    body = _live_body(scan)
    if body is None:
        return schemas.LiveLlmsTxt(
            present=False,
            url=url,
            valid=None,
            problems=[],
            links=0,
            differs_from_generated=None,
        )
    parsed = llms_txt.parse(body)
    stored = await repository.llms_txt(session, tenant_id)
    return schemas.LiveLlmsTxt(
        present=True,
        url=url,
        valid=not parsed.problems,
        problems=parsed.problems,
        links=parsed.link_count,
        differs_from_generated=None if stored is None else _differs(stored.content, body),
    )


def _live_body(scan: snapshots.SiteFiles) -> str | None:
    live = scan.llms_txt or {}
    status = live.get("status")
    body = live.get("body")
    return body if isinstance(body, str) and isinstance(status, int) and status < 300 else None


def _differs(generated: str, live: str) -> bool:
    def norm(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.strip().splitlines())

    return norm(generated) != norm(live)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# --- pages --------------------------------------------------------------------------------------


async def list_pages(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListGeoPagesInput
) -> schemas.GeoPagePage:
    try:
        scan = await scan_of(session, tenant_id, None)
    except NoCompleteScan:
        return schemas.GeoPagePage(
            data=[], total=0, page=data.page, limit=data.limit, snapshot_id=None
        )
    scanned = await _pages(session, tenant_id, scan)
    clicks = await _clicks(session, tenant_id)
    wanted = (data.search or "").casefold()
    kept = [
        item
        for item in scanned.pages
        if (data.min_score is None or item.result.score >= data.min_score)
        and (data.max_score is None or item.result.score <= data.max_score)
        and (
            not wanted
            or wanted in item.page.url.casefold()
            or wanted in (item.page.title or "").casefold()
        )
    ]

    def key(item: _Scored) -> tuple[Any, ...]:
        if data.sort_by == "citability":
            return (item.result.score, item.page.url)
        if data.sort_by == "clicks":
            return ((clicks or {}).get(item.page.url, 0), item.page.url)
        return (0, item.page.url)  # AI citations are not tracked yet: by URL

    kept.sort(key=key, reverse=data.sort_order == "desc")
    start = offset_of(data.page, data.limit)
    return schemas.GeoPagePage(
        data=[
            schemas.GeoPage(
                page_id=item.page.id,
                url=item.page.url,
                title=item.page.title,
                citability_score=item.result.score,
                factors=schemas.GeoFactors(**item.result.factors),
                clicks_28d=None if clicks is None else clicks.get(item.page.url, 0),
                ai_citations_28d=None,
                recommendations=item.result.recommendations,
            )
            for item in kept[start : start + data.limit]
        ],
        total=len(kept),
        page=data.page,
        limit=data.limit,
        snapshot_id=scan.snapshot_id,
    )


async def page_of(session: AsyncSession, tenant_id: uuid.UUID, url: str) -> schemas.GeoPage | None:
    """`url`'s GeoPage in the newest complete scan of the site (the page inventory's 360 view);
    None when it is no indexable page of that scan, or there is no scan."""
    try:
        scan = await scan_of(session, tenant_id, None)
    except NoCompleteScan:
        return None
    scanned = await _pages(session, tenant_id, scan)
    item = next((item for item in scanned.pages if item.page.url == url), None)
    if item is None:
        return None
    clicks = await _clicks(session, tenant_id)
    return schemas.GeoPage(
        page_id=item.page.id,
        url=item.page.url,
        title=item.page.title,
        citability_score=item.result.score,
        factors=schemas.GeoFactors(**item.result.factors),
        clicks_28d=None if clicks is None else clicks.get(item.page.url, 0),
        ai_citations_28d=None,
        recommendations=item.result.recommendations,
    )


async def _clicks(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, int] | None:
    """Each page's clicks in the last CLICK_DAYS stored days; None without Search Console
    data."""
    chosen = await search_console.selected_property(session, tenant_id)
    if chosen is None or chosen.fresh_through is None:
        return None
    last = chosen.fresh_through
    first = last - timedelta(days=CLICK_DAYS - 1)
    return await repository.page_clicks(session, tenant_id, chosen.id, first, last)


# --- llms.txt -----------------------------------------------------------------------------------


async def get_llms_txt(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.LlmsTxt:
    stored = await repository.llms_txt(session, tenant_id)
    try:
        scan: snapshots.SiteFiles | None = await scan_of(session, tenant_id, None)
    except NoCompleteScan:
        scan = None
    return _answer(stored, scan)


def _answer(stored: SeoLlmsTxt | None, scan: snapshots.SiteFiles | None) -> schemas.LlmsTxt:
    body = None if scan is None else _live_body(scan)
    live = schemas.LiveFile(
        present=body is not None,
        url=None if scan is None else _origin(scan.start_url) + "/llms.txt",
        differs=None if body is None or stored is None else _differs(stored.content, body),
        fetched_at=None if scan is None else scan.finished_at,
    )
    if stored is None:
        return schemas.LlmsTxt(
            content=None, generated_at=None, options=None, sections=[], link_count=0, live=live
        )
    return schemas.LlmsTxt(
        content=stored.content,
        generated_at=stored.generated_at,
        options=stored.options,
        sections=[schemas.LlmsSection.model_validate(section) for section in stored.sections],
        link_count=stored.link_count,
        live=live,
    )


async def generate_llms_txt(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.GenerateLlmsTxtInput
) -> schemas.LlmsTxt:
    """An llms.txt from the scan's indexable pages: replaces the stored one."""
    scan = await scan_of(session, tenant_id, data.snapshot_id)
    scanned = await _pages(session, tenant_id, scan)
    by_url = {item.page.url: item.page for item in scanned.pages}
    refused = [
        FieldError(f"includeUrls.{index}", "is not an indexable page of the scan")
        for index, url in enumerate(data.include_urls)
        if url not in by_url
    ]
    if refused:
        raise NotAnIndexablePage(
            f"{len(refused)} included URL(s) are not indexable pages of snapshot "
            f"{scan.snapshot_id}: an llms.txt lists only those.",
            errors=refused,
        )
    included = set(data.include_urls)
    pages = [
        llms_txt.SourcePage(
            page.url,
            page.title,
            page.meta_description,
            -1 if page.url in included else page.depth,
        )
        for page in by_url.values()
        if page.url in included
        or not any(
            fnmatch.fnmatchcase(urlsplit(page.url).path or "/", pattern)
            for pattern in data.exclude_url_patterns
        )
    ]
    home = scanned.home
    name = (
        await seo.brand_name(session, tenant_id)
        or (home.title if home else None)
        or urlsplit(scan.start_url).hostname
        or "Site"
    )
    summary = data.summary or (home.meta_description if home else None)
    content, sections = llms_txt.generate(
        name,
        summary,
        pages,
        rules=[
            llms_txt.SectionRule(rule.title, tuple(rule.url_patterns))
            for rule in data.sections or []
        ],
        max_links=data.max_links,
        optional_section=data.optional_section,
    )
    stored = await repository.llms_txt(session, tenant_id)
    if stored is None:
        stored = SeoLlmsTxt(tenant_id=tenant_id)
        session.add(stored)
    stored.snapshot_id = scan.snapshot_id
    stored.content = content
    stored.options = data.model_dump(mode="json", by_alias=True, exclude_none=True)
    stored.sections = [
        {
            "title": section.title,
            "links": [vars(link) for link in section.links],
        }
        for section in sections
    ]
    stored.link_count = sum(len(section.links) for section in sections)
    stored.generated_at = utcnow()
    await session.flush()
    return _answer(stored, scan)
