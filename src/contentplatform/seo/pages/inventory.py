"""The page inventory kept up to date, never computed on read: each source writes what it knows
of a page onto the page's row (seo_pages), keyed by the normalized URL's hash.

- A website scan completes (`crawl.completed`, listeners.py): its pages, streamed and upserted
  in batches: title, status, indexability, citability (seo/geo/citability.py over the stored
  text, for indexable pages; null for the others, as listGeoPages scores only those), seen now
  and in the newest scan; the site's pages missing from it leave the newest scan.
- A Search Console sync ends (any ending: what it stored counts): the 28-day figures of every
  page of the property in use, from seo_page_days in one grouped read (the last 28 stored days
  to `fresh_through`, against the 28 before them); pages only Search Console knows get a row.
- A draft goes live on a target (`draft.published`): that URL's row links to the draft; taken
  down (`draft.unpublished`), the row leaves the published ones (the link to the draft stays).
- A URL-inspection run ends: each inspected URL's row gets its newest verdict.
- A rank check ends: each page's count of tracked keywords whose newest check ranks it.

A tenant's first write (or first read, service.py) that finds no row yet builds the inventory
from everything stored first (`rebuild`, then the write itself), so the tenants that scanned or
synced before the inventory existed get theirs without a migration touching every tenant at
once. Every write is an upsert, so a rebuild racing an event is harmless.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import utcnow
from contentplatform.publishers import service as publishers
from contentplatform.seo.connections import offline
from contentplatform.seo.geo import citability
from contentplatform.seo.pages import repository
from contentplatform.seo.pagespeed import service as pagespeed
from contentplatform.seo.rank import service as rank
from contentplatform.website_scan.crawling.urls import normalize, url_hash
from contentplatform.website_scan.snapshots import service as snapshots

log = logging.getLogger(__name__)

DAYS = 28
SEVERITY_ORDER = ("error", "warning", "notice")
# Search Console's page URLs kept per row (variants normalizing to it): what the 360 reads.
MAX_SEARCH_CONSOLE_PAGES = 20
# Publications read at most when a tenant's inventory is rebuilt.
PUBLICATIONS_READ = 10_000
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def key_of(url: str) -> tuple[str, str] | None:
    """(normalized URL, its hash), or None for what is no http(s) page URL."""
    normalized = normalize(url)
    return None if normalized is None else (normalized, url_hash(normalized))


async def ensure_built(session: AsyncSession, tenant_id: uuid.UUID) -> bool:
    """Build the tenant's inventory from what is stored when it has no row yet; whether it
    was built now."""
    if await repository.any_page(session, tenant_id):
        return False
    await rebuild(session, tenant_id)
    return True


async def rebuild(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """The tenant's inventory from everything stored: the newest complete scan of each site,
    Search Console's figures, the published copies, the inspections."""
    for scan in reversed(await snapshots.latest_site_files(session, tenant_id)):
        await _write_scan(session, tenant_id, scan)
    chosen = await offline.property_in_use(session, tenant_id)
    if chosen is not None:
        await _write_search_console(session, tenant_id, chosen.id)
    copies = await publishers.published_copies(
        session, tenant_id, _EPOCH, utcnow() + timedelta(days=1), PUBLICATIONS_READ
    )
    # Oldest first: a URL a later draft took over links to that one.
    for at, url, draft_id, _title, _first in reversed(copies):
        await _write_publication(session, tenant_id, url, draft_id, at)
    await _write_inspections(session, tenant_id, None)


# --- website scans ------------------------------------------------------------------------------


async def scan_completed(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> None:
    await ensure_built(session, tenant_id)
    scan = await snapshots.site_files_of(session, tenant_id, snapshot_id)
    await _write_scan(session, tenant_id, scan)


async def _write_scan(
    session: AsyncSession, tenant_id: uuid.UUID, scan: snapshots.SiteFiles
) -> None:
    parts = urlsplit(normalize(scan.start_url) or scan.start_url)
    await repository.leave_latest_snapshot(session, tenant_id, f"{parts.scheme}://{parts.netloc}")
    seen_at = scan.finished_at or utcnow()
    batch: dict[str, dict[str, Any]] = {}
    async for page in snapshots.stream_page_texts(session, tenant_id, scan.snapshot_id):
        key = key_of(page.url)
        if key is None:
            continue
        indexable = page.status_code == 200 and page.indexable
        batch[key[1]] = {
            "url": key[0],
            "url_hash": key[1],
            "title": page.title,
            "status_code": page.status_code,
            "indexable": indexable,
            "in_snapshot": True,
            "in_latest_snapshot": True,
            "last_seen_at": seen_at,
            "snapshot_page_id": page.id,
            "citability_score": _citability(page, seen_at) if indexable else None,
        }
        if len(batch) >= repository.BATCH:
            await repository.upsert(session, tenant_id, list(batch.values()))
            batch.clear()
    await repository.upsert(session, tenant_id, list(batch.values()))


def _citability(page: snapshots.PageText, scanned_at: datetime) -> int:
    """The page's citability score: the rubric listGeoPages shows, over the stored facts."""
    text = citability.PageText(
        page.url,
        page.title,
        page.headings,
        page.json_ld,
        page.content,
        page.word_count,
        page.external_links,
    )
    return citability.score(text, scanned_at).score


# --- Search Console -----------------------------------------------------------------------------


async def search_console_synced(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID | None
) -> None:
    await ensure_built(session, tenant_id)
    if property_id is None:
        return
    await _write_search_console(session, tenant_id, property_id)


async def _write_search_console(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID
) -> None:
    """The figures of the property in use (a sync of another property changes nothing)."""
    chosen = await offline.property_in_use(session, tenant_id)
    if chosen is None or chosen.id != property_id or chosen.fresh_through is None:
        return
    last = chosen.fresh_through
    first = last - timedelta(days=DAYS - 1)
    before = first - timedelta(days=DAYS)
    merged: dict[str, dict[str, Any]] = {}
    for page, clicks, shown, position_sum, earlier in await repository.page_figures(
        session, tenant_id, property_id, before, first, last
    ):
        key = key_of(page)
        if key is None:
            continue
        row = merged.setdefault(
            key[1],
            {"url": key[0], "url_hash": key[1], "pages": [], "c": 0, "i": 0, "p": 0.0, "e": 0},
        )
        row["pages"].append(page)
        row["c"] += clicks
        row["i"] += shown
        row["p"] += position_sum
        row["e"] += earlier
    await repository.leave_search_console(session, tenant_id)
    rows = [_figures(row) for row in merged.values()]
    for start in range(0, len(rows), repository.BATCH):
        await repository.upsert(session, tenant_id, rows[start : start + repository.BATCH])
    await repository.drop_sourceless(session, tenant_id)


def _figures(row: dict[str, Any]) -> dict[str, Any]:
    clicks, shown, earlier = row["c"], row["i"], row["e"]
    return {
        "url": row["url"],
        "url_hash": row["url_hash"],
        "in_search_console": True,
        "search_console_pages": sorted(row["pages"])[:MAX_SEARCH_CONSOLE_PAGES],
        "clicks_28d": clicks,
        "impressions_28d": shown,
        "ctr_28d": round(clicks / shown, 4) if shown else None,
        "position_28d": round(row["p"] / shown, 2) if shown else None,
        # Against the 28 days before; null when the page had no click then.
        "clicks_change_pct": round((clicks - earlier) * 100.0 / earlier, 1) if earlier else None,
    }


# --- publications and inspections ---------------------------------------------------------------


async def published(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    url: str,
    draft_id: uuid.UUID,
    published_at: datetime | None,
) -> None:
    await ensure_built(session, tenant_id)
    await _write_publication(session, tenant_id, url, draft_id, published_at)


async def _write_publication(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    url: str,
    draft_id: uuid.UUID,
    published_at: datetime | None,
) -> None:
    key = key_of(url)
    if key is None:
        return
    row = {
        "url": key[0],
        "url_hash": key[1],
        "published": True,
        "draft_id": draft_id,
        "published_at": published_at or utcnow(),
    }
    await repository.upsert(session, tenant_id, [row])


async def unpublished(
    session: AsyncSession, tenant_id: uuid.UUID, url: str, draft_id: uuid.UUID
) -> None:
    """A draft's copy taken down: its page leaves the published ones (and the inventory, when
    no scan nor Search Console knows it)."""
    key = key_of(url)
    if key is None:
        return
    await repository.unpublish(session, tenant_id, key[1], draft_id)
    await repository.drop_sourceless(session, tenant_id)


async def inspected(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    await ensure_built(session, tenant_id)
    await _write_inspections(session, tenant_id, run_id)


async def _write_inspections(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID | None
) -> None:
    found: dict[str, dict[str, Any]] = {}
    for inspection_id, url, verdict in await repository.completed_inspections(
        session, tenant_id, run_id
    ):
        key = key_of(url)
        if key is not None:
            found[key[1]] = {"inspection_id": inspection_id, "inspection_verdict": verdict}
    await repository.set_facts(session, tenant_id, found)


# --- audits -------------------------------------------------------------------------------------


async def audited(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    audit_id: uuid.UUID,
    analyzed: Iterable[str],
    open_checks: dict[str, list[str]],
) -> None:
    """An audit completed: each page it judged (`analyzed`, and those it found issues on) gets
    its open issues (per URL, the severities of the checks failing on it) and the audit's id."""
    await ensure_built(session, tenant_id)
    judged: dict[str, dict[str, Any]] = {}
    for url in {*analyzed, *open_checks}:
        key = key_of(url)
        if key is None:
            continue
        severities = open_checks.get(url, [])
        highest = min(severities, key=SEVERITY_ORDER.index) if severities else None
        judged[key[1]] = {"open_issues": len(severities), "highest_severity": highest}
    await repository.set_facts(session, tenant_id, judged, audit_id=audit_id)


# --- PageSpeed ----------------------------------------------------------------------------------


async def measured(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """A PageSpeed run ended: its pages' performance score and LCP category on their rows."""
    await ensure_built(session, tenant_id)
    found: dict[str, dict[str, Any]] = {}
    for url, (score, lcp) in (await pagespeed.page_summaries(session, tenant_id, run_id)).items():
        key = key_of(url)
        if key is not None:
            found[key[1]] = {"performance_score": score, "lcp_category": lcp}
    await repository.set_facts(session, tenant_id, found)


# --- rank tracking ------------------------------------------------------------------------------


async def ranked(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """A rank check ended: each page's count of the tracked keywords whose newest check ranks
    it (written over every page, as a keyword may have moved to another URL or away)."""
    await ensure_built(session, tenant_id)
    counts = Counter(
        key[1]
        for keyword in await rank.ranking(session, tenant_id)
        if keyword.url and (key := key_of(keyword.url)) is not None
    )
    await repository.clear_tracked_keywords(session, tenant_id)
    await repository.set_facts(
        session, tenant_id, {key: {"tracked_keywords": n} for key, n in counts.items()}
    )
