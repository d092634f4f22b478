"""The rules of reading snapshots: their summaries, their pages and a page's content, the diff of
two snapshots and the broken-link report. Never commits (it only reads).

A snapshot is made when its run starts but is seen only once the run has finished: until then
it and its pages are 404, as are another organization's. A page's links show the status each
internal target answered in the same crawl (looked up by URL hash; null when it was not
crawled), and an external one's status only when the crawl found it broken. Content is markdown
as the crawler extracted it; `text` and `html` are rendered from it (markdown-it-py), the HTML
sanitized (nh3), every answer cut at CONTENT_LIMIT_BYTES. Diffs match pages by URL hash and
compare what the catalog lists (content hash, title, meta description, canonical, status,
headings), streaming the two snapshots' rows without their content.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import uuid
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import nh3
from markdown_it import MarkdownIt
from selectolax.lexbor import LexborHTMLParser
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.documents import service as documents
from contentplatform.kit import errors
from contentplatform.kit.schemas import offset_of, window_of
from contentplatform.website_scan.crawling.urls import url_hash
from contentplatform.website_scan.errors import (
    ContentPurged,
    PageNotFound,
    SnapshotNotFound,
    SnapshotsNotComparable,
)
from contentplatform.website_scan.models import CrawlPage, CrawlSnapshot
from contentplatform.website_scan.snapshots import repository as queries
from contentplatform.website_scan.snapshots import schemas

_NO_STATUSES = {"2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0, "error": 0}
_HEADING_LEVELS = ("h1", "h2", "h3", "h4", "h5", "h6")

# Markdown as CommonMark with the tables and strikethrough trafilatura writes; raw HTML in it is
# text, not markup (and what is rendered is sanitized anyway).
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
# The markdown rendered at most: text and HTML come out no shorter than about a quarter of it,
# so the answer's limit is reached long before, and rendering stays bounded.
_RENDER_LIMIT_BYTES = 4 * schemas.CONTENT_LIMIT_BYTES
# Block ends, followed by a blank line in the text format.
_BLOCK_END = re.compile(r"</(?:p|h[1-6]|ul|ol|blockquote|pre|table)>")
_BLANK_LINES = re.compile(r"\n{3,}")


async def require_snapshot(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> CrawlSnapshot:
    found = await queries.finished_snapshot(session, tenant_id, snapshot_id)
    return errors.require(found, SnapshotNotFound, snapshot_id)


# --- snapshots --------------------------------------------------------------------------------


def _snapshot_values(values: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's columns with every status class counted (0 where none was stored)."""
    return {**values, "status_counts": {**_NO_STATUSES, **(values["status_counts"] or {})}}


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListSnapshotsInput
) -> schemas.SnapshotPage:
    rows, total = await queries.page_snapshots(
        session,
        tenant_id,
        config_id=data.config_id,
        include_partial=data.include_partial,
        **window_of(data),
    )
    return schemas.SnapshotPage(
        data=[schemas.Snapshot.model_validate(_snapshot_values(row)) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


async def get(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> schemas.SnapshotDetail:
    snapshot = await require_snapshot(session, tenant_id, snapshot_id)
    values = {column.key: getattr(snapshot, column.key) for column in CrawlSnapshot.__table__.c}
    previous = await queries.previous_snapshot_id(session, tenant_id, snapshot)
    return schemas.SnapshotDetail.model_validate(
        {**_snapshot_values(values), "previous_snapshot_id": previous}
    )


# --- pages ------------------------------------------------------------------------------------


async def pages(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListCrawledPagesInput
) -> schemas.CrawledPageSummaryPage:
    snapshot = await require_snapshot(session, tenant_id, data.id)
    rows, total = await queries.page_pages(
        session,
        tenant_id,
        snapshot.id,
        search=data.search,
        status_class=None if data.status_class == "all" else data.status_class,
        imported=data.imported,
        min_words=data.min_words,
        sort_by=data.sort_by,
        descending=data.sort_order == "desc",
        **window_of(data),
    )
    return schemas.CrawledPageSummaryPage(
        data=[schemas.CrawledPageSummary.model_validate(row) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


def _headings(stored: list[list[str]]) -> schemas.CrawledPageHeadings:
    levels: dict[str, list[str]] = {level: [] for level in _HEADING_LEVELS}
    for tag, text in stored:
        if tag in levels:
            levels[tag].append(text)
    return schemas.CrawledPageHeadings(**levels)


async def _links(
    session: AsyncSession, tenant_id: uuid.UUID, page: CrawlPage
) -> schemas.CrawledPageLinks:
    """The page's first MAX_PAGE_LINKS internal and external links, each with its status."""
    internal = [link for link in page.links if link.get("internal")]
    external = [link for link in page.links if not link.get("internal")]
    shown_internal = internal[: schemas.MAX_PAGE_LINKS]
    shown_external = external[: schemas.MAX_PAGE_LINKS]
    targets = await queries.pages_by_hash(
        session, tenant_id, page.snapshot_id, [url_hash(link["url"]) for link in shown_internal]
    )
    broken = await queries.broken_statuses(
        session,
        tenant_id,
        page.snapshot_id,
        [link["url"] for link in shown_external],
        internal=False,
    )

    def shown(link: dict[str, Any], status: int | None) -> schemas.CrawledPageLink:
        return schemas.CrawledPageLink(
            url=link["url"], text=link.get("text") or "", status_code=status
        )

    return schemas.CrawledPageLinks(
        internal=[
            shown(link, targets.get(url_hash(link["url"]), (None, None))[1])
            for link in shown_internal
        ],
        external=[shown(link, broken.get(link["url"])) for link in shown_external],
        internal_truncated=len(internal) > len(shown_internal),
        external_truncated=len(external) > len(shown_external),
    )


async def get_page(
    session: AsyncSession, tenant_id: uuid.UUID, page_id: uuid.UUID
) -> schemas.CrawledPage:
    found = errors.require(
        await queries.finished_page(session, tenant_id, page_id), PageNotFound, page_id
    )
    crawled, snapshot = found
    values = {
        column.key: getattr(crawled, column.key)
        for column in CrawlPage.__table__.c
        if column.key not in ("content", "headings", "links")
    }
    listed = None if snapshot.sitemaps is None else snapshot.sitemaps.get("listed") or {}
    return schemas.CrawledPage.model_validate(
        {
            **values,
            "headings": _headings(crawled.headings),
            "links": await _links(session, tenant_id, crawled),
            "sitemaps": None if listed is None else listed.get(crawled.url, []),
        }
    )


# --- content ----------------------------------------------------------------------------------


def _missing(page: CrawlPage) -> str:
    """Why the page has no content, as a reader would want to be told."""
    if page.error is not None or page.status_code is None:
        return f"The page could not be fetched ({page.error or 'no response'}): it has no content."
    if not 200 <= page.status_code < 300:
        return f"The page answered HTTP {page.status_code}: it has no content."
    if page.content_type and "html" not in page.content_type.lower():
        return f"The page is not HTML ({page.content_type}): no content was extracted from it."
    return "No main text was found on the page."


def _as_text(html: str) -> str:
    """Rendered markdown as plain text: the words, a blank line between blocks."""
    tree = LexborHTMLParser(_BLOCK_END.sub(lambda end: end.group() + "\n", html))
    text = tree.body.text(deep=True, separator="") if tree.body is not None else ""
    lines = "\n".join(line.rstrip() for line in text.splitlines())
    return _BLANK_LINES.sub("\n\n", lines).strip()


def render(markdown: str, format: schemas.ContentFormat) -> tuple[str, bool]:
    """`markdown` in `format`, cut at CONTENT_LIMIT_BYTES, and whether anything was cut. CPU
    work: run it off the event loop."""
    if format == "markdown":
        rendered, cut = markdown, False
    else:
        source = documents.truncate_utf8(markdown, _RENDER_LIMIT_BYTES)
        cut = len(source) < len(markdown)
        html = _MARKDOWN.render(source)
        rendered = nh3.clean(html) if format == "html" else _as_text(html)
    content = documents.truncate_utf8(rendered, schemas.CONTENT_LIMIT_BYTES)
    return content, cut or len(content) < len(rendered)


async def content(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.CrawledPageContentInput
) -> schemas.CrawledPageContent:
    found = await queries.finished_page(session, tenant_id, data.id, content=True)
    crawled, snapshot = errors.require(found, PageNotFound, data.id)
    if snapshot.content_purged:
        raise ContentPurged(
            f"The content of crawled page {crawled.id} was removed by retention (only the latest "
            "20 snapshots of a configuration keep it); its metadata remains (getPage)."
        )
    text, truncated, problem = "", False, None
    if crawled.content:
        text, truncated = await asyncio.to_thread(render, crawled.content, data.format)
    else:
        problem = _missing(crawled)
    return schemas.CrawledPageContent(
        id=crawled.id,
        url=crawled.url,
        format=data.format,
        content=text,
        truncated=truncated,
        content_error=problem,
    )


# --- diffs ------------------------------------------------------------------------------------

_COMPARED: tuple[schemas.ChangedField, ...] = (
    "content",
    "title",
    "meta_description",
    "canonical",
    "status_code",
    "headings",
)


@dataclass(frozen=True)
class _Compared:
    """What a diff knows of one page: its id, URL and the compared fields (in _COMPARED order;
    the headings as a digest, so a snapshot's worth of them never sits in memory)."""

    id: uuid.UUID
    url: str
    fields: tuple[Any, ...]


async def _compared(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    hashes: Collection[str] | None = None,
) -> dict[str, _Compared]:
    """The snapshot's pages (those with these URL hashes when given) by URL hash."""
    found: dict[str, _Compared] = {}
    async for row in queries.diff_rows(session, tenant_id, snapshot_id, hashes):
        hashed, url, page_id, content_hash, title, meta, canonical, status, headings = row
        digest = hashlib.sha256(
            json.dumps(headings, separators=(",", ":"), ensure_ascii=False).encode()
        ).digest()
        found[hashed] = _Compared(
            page_id, url, (content_hash, title, meta, canonical, status, digest)
        )
    return found


def _changed_fields(before: _Compared, after: _Compared) -> list[schemas.ChangedField]:
    return [
        name
        for name, old, new in zip(_COMPARED, before.fields, after.fields, strict=True)
        if old != new
    ]


async def _base_of(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot: CrawlSnapshot,
    base_id: uuid.UUID | None,
) -> uuid.UUID | None:
    """The snapshot a diff compares with: the one named (404 when not found, 400 when it is
    another config's), else the previous finished, non-partial one (None when there is none)."""
    if base_id is None:
        return await queries.previous_snapshot_id(session, tenant_id, snapshot)
    base = await require_snapshot(session, tenant_id, base_id)
    if base.config_id != snapshot.config_id:
        raise SnapshotsNotComparable(
            f"Snapshot {base.id} is of another crawl configuration ({base.config_id}) than "
            f"snapshot {snapshot.id} ({snapshot.config_id}): only snapshots of one "
            "configuration can be compared.",
            errors=[errors.FieldError("baseSnapshotId", "is of another crawl configuration")],
        )
    return base.id


async def diff(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.DiffSnapshotsInput
) -> schemas.SnapshotDiff:
    snapshot = await require_snapshot(session, tenant_id, data.id)
    base_id = await _base_of(session, tenant_id, snapshot, data.base_snapshot_id)
    current = await _compared(session, tenant_id, snapshot.id)
    base = {} if base_id is None else await _compared(session, tenant_id, base_id)

    entries: list[schemas.SnapshotDiffEntry] = []
    unchanged = 0
    for hashed, page in current.items():
        before = base.get(hashed)
        if before is None:
            entries.append(
                schemas.SnapshotDiffEntry(
                    url=page.url,
                    change="added",
                    fields_changed=[],
                    base_page_id=None,
                    page_id=page.id,
                )
            )
            continue
        changed = _changed_fields(before, page)
        if not changed:
            unchanged += 1
            continue
        entries.append(
            schemas.SnapshotDiffEntry(
                url=page.url,
                change="changed",
                fields_changed=changed,
                base_page_id=before.id,
                page_id=page.id,
            )
        )
    for hashed, before in base.items():
        if hashed not in current:
            entries.append(
                schemas.SnapshotDiffEntry(
                    url=before.url,
                    change="removed",
                    fields_changed=[],
                    base_page_id=before.id,
                    page_id=None,
                )
            )

    counts = {"added": 0, "removed": 0, "changed": 0}
    for entry in entries:
        counts[entry.change] += 1
    kept = sorted(
        (entry for entry in entries if data.change in ("all", entry.change)),
        key=lambda entry: entry.url,
    )
    start = offset_of(data.page, data.limit)
    return schemas.SnapshotDiff(
        base_snapshot_id=base_id,
        snapshot_id=snapshot.id,
        summary=schemas.SnapshotDiffSummary(**counts, unchanged=unchanged),
        data=kept[start : start + data.limit],
        total=len(kept),
        page=data.page,
        limit=data.limit,
    )


@dataclass(frozen=True)
class PageChange:
    """A page a snapshot found changed against its configuration's previous snapshot."""

    at: datetime  # when the snapshot that saw the change finished
    url: str
    snapshot_id: uuid.UUID
    base_snapshot_id: uuid.UUID
    fields_changed: list[schemas.ChangedField]


async def page_changes(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    urls: Collection[str] | None,
    max_snapshots: int,
) -> list[PageChange]:
    """The pages changed (as a diff says: content, title, meta description, canonical, status,
    headings; not added or removed) in each of the newest `max_snapshots` finished, non-partial
    snapshots that finished in [start, end), each against its configuration's previous one;
    only pages at these URLs when given (read by their hash). Newest first."""
    hashes = None if urls is None else {url_hash(url) for url in urls}
    # Consecutive snapshots of a configuration: each one's pages are read once, as the newer
    # one's base and then as the older one's current.
    read: dict[uuid.UUID, dict[str, _Compared]] = {}

    async def pages_of(snapshot_id: uuid.UUID) -> dict[str, _Compared]:
        if snapshot_id not in read:
            read[snapshot_id] = await _compared(session, tenant_id, snapshot_id, hashes)
        return read[snapshot_id]

    found: list[PageChange] = []
    for snapshot in await queries.finished_between(session, tenant_id, start, end, max_snapshots):
        base_id = await queries.previous_snapshot_id(session, tenant_id, snapshot)
        if base_id is None or snapshot.finished_at is None:
            continue
        base = await pages_of(base_id)
        current = await pages_of(snapshot.id)
        read.pop(snapshot.id)  # newest first: no later snapshot has this one for its base
        for hashed, page in current.items():
            before = base.get(hashed)
            changed = [] if before is None else _changed_fields(before, page)
            if changed:
                found.append(
                    PageChange(snapshot.finished_at, page.url, snapshot.id, base_id, changed)
                )
    return found


@dataclass(frozen=True)
class SiteFiles:
    """What a configuration's newest complete snapshot kept of the site's own files
    (crawling/site_files.py); each None in a snapshot made before they were kept."""

    config_id: uuid.UUID
    snapshot_id: uuid.UUID
    start_url: str
    finished_at: datetime | None
    robots_txt: dict[str, Any] | None
    llms_txt: dict[str, Any] | None
    sitemaps: dict[str, Any] | None


async def site_files_of(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> SiteFiles:
    """The site files of the tenant's finished snapshot (404 otherwise)."""
    snapshot = await require_snapshot(session, tenant_id, snapshot_id)
    return SiteFiles(
        snapshot.config_id,
        snapshot.id,
        await queries.start_url_of(session, tenant_id, snapshot.config_id) or "",
        snapshot.finished_at,
        snapshot.robots_txt,
        snapshot.llms_txt,
        snapshot.sitemaps,
    )


async def latest_site_files(session: AsyncSession, tenant_id: uuid.UUID) -> list[SiteFiles]:
    """Each live configuration's newest complete snapshot's site files, newest first."""
    return [
        SiteFiles(
            snapshot.config_id,
            snapshot.id,
            start_url,
            snapshot.finished_at,
            snapshot.robots_txt,
            snapshot.llms_txt,
            snapshot.sitemaps,
        )
        for snapshot, start_url in await queries.latest_complete(session, tenant_id)
    ]


async def indexable_pages(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> dict[str, bool | None]:
    """Each crawled URL of the snapshot: whether a search engine may index it (a 200 HTML page,
    no noindex, its canonical itself or none); None when it did not answer 200 (its status
    rules it out, as broken or moved)."""
    found: dict[str, bool | None] = {}
    async for url, status, noindex, canonical, kind in queries.indexing_rows(
        session, tenant_id, snapshot_id
    ):
        found[url] = _indexable(url, status, kind, noindex, canonical) if status == 200 else None
    return found


def _indexable(
    url: str, status: int | None, kind: str | None, noindex: bool, canonical: str | None
) -> bool:
    """A 200 HTML page, no noindex, its canonical itself or none."""
    html = kind is None or "html" in kind.lower()
    return status == 200 and html and not noindex and canonical in (None, url)


@dataclass(frozen=True)
class PageText:
    """A page of a snapshot as text: what GEO and llms.txt read of it."""

    id: uuid.UUID
    url: str
    title: str | None
    meta_description: str | None
    status_code: int | None
    indexable: bool  # a 200 HTML page, no noindex, its canonical itself or none
    depth: int
    headings: list[list[str]]
    json_ld: list[Any]
    content: str | None  # markdown; None when not kept (purged, or none)
    word_count: int
    external_links: int


async def page_texts(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> list[PageText]:
    """Every page of the tenant's snapshot as text (bounded by the crawl's page limit)."""
    return [page async for page in stream_page_texts(session, tenant_id, snapshot_id)]


async def stream_page_texts(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> AsyncIterator[PageText]:
    """The pages of the tenant's snapshot as text, streamed: one batch in memory at a time."""
    async for row in queries.text_rows(session, tenant_id, snapshot_id):
        yield (
            PageText(
                id=row.id,
                url=row.url,
                title=row.title,
                meta_description=row.meta_description,
                status_code=row.status_code,
                indexable=_indexable(
                    row.url, row.status_code, row.content_type, row.noindex, row.canonical_url
                ),
                depth=row.depth,
                headings=row.headings or [],
                json_ld=row.json_ld or [],
                content=row.content,
                word_count=row.word_count,
                external_links=sum(1 for link in row.links or [] if not link.get("internal")),
            )
        )


# --- broken links -----------------------------------------------------------------------------


async def broken_links(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.BrokenLinksInput
) -> schemas.BrokenLinkReport:
    snapshot = await require_snapshot(session, tenant_id, data.id)
    rows, total = await queries.page_broken_links(
        session,
        tenant_id,
        snapshot.id,
        internal=None if data.scope == "all" else data.scope == "internal",
        **window_of(data),
    )
    counts = await queries.broken_link_counts(session, tenant_id, snapshot.id)
    sources: set[str] = set()
    async for occurrences in queries.broken_link_occurrences(session, tenant_id, snapshot.id):
        sources.update(occurrence["source_url"] for occurrence in occurrences)

    shown = [row["occurrences"][: schemas.MAX_OCCURRENCES] for row in rows]
    pages_found = await queries.pages_by_hash(
        session,
        tenant_id,
        snapshot.id,
        [url_hash(occurrence["source_url"]) for found in shown for occurrence in found],
    )

    def located(occurrence: dict[str, str]) -> schemas.BrokenLinkOccurrence:
        found = pages_found.get(url_hash(occurrence["source_url"]))
        return schemas.BrokenLinkOccurrence(
            page_id=found[0] if found else None,
            source_url=occurrence["source_url"],
            link_text=occurrence.get("link_text") or "",
        )

    return schemas.BrokenLinkReport(
        summary=schemas.BrokenLinkSummary(
            internal=counts.get(True, 0),
            external=counts.get(False, 0),
            pages_affected=len(sources),
        ),
        data=[
            schemas.BrokenLink(
                target_url=row["target_url"],
                status_code=row["status_code"],
                error=row["error"],
                internal=row["internal"],
                occurrence_count=len(row["occurrences"]),
                occurrences=[located(occurrence) for occurrence in found],
            )
            for row, found in zip(rows, shown, strict=True)
        ],
        total=total,
        page=data.page,
        limit=data.limit,
    )
