"""The Website Scan operations on snapshots, their pages, diffs and broken links: declarations
only; the rules live in snapshots/service.py.

Every member reads them. A snapshot (and its pages) is seen once its run has finished: a running
crawl's is 404, as is another organization's.
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.website_scan.errors import (
    ContentPurged,
    PageNotFound,
    SnapshotNotFound,
    SnapshotsNotComparable,
)
from contentplatform.website_scan.snapshots import schemas
from contentplatform.website_scan.snapshots import service as snapshots

router = ProcedureRouter("websiteScan", tag="Website Scan")


@router.get("listSnapshots", "/v1/website-scan/snapshots", access=Access.member)
async def list_snapshots(ctx: Context, data: schemas.ListSnapshotsInput) -> schemas.SnapshotPage:
    """List snapshots (the frozen result of a crawl run).

    Newest first, once their run has finished; `configId` keeps one configuration's (a deleted
    configuration's stay listed), `includePartial: false` leaves out those of cancelled or
    failed runs. Only the latest 20 snapshots of a configuration keep their pages' content;
    older ones keep the metadata (`content_purged`)."""
    return await snapshots.page(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getSnapshot",
    "/v1/website-scan/snapshots/{id}",
    access=Access.member,
    errors=[SnapshotNotFound],
)
async def get_snapshot(ctx: Context, data: schemas.SnapshotIdInput) -> schemas.SnapshotDetail:
    """Get one snapshot summary.

    `previous_snapshot_id` names the configuration's finished, non-partial snapshot before it:
    what diffSnapshots compares with by default."""
    return await snapshots.get(ctx.session, ctx.tenant.tenant_id, data.id)


@router.get(
    "listPages",
    "/v1/website-scan/snapshots/{id}/pages",
    access=Access.member,
    errors=[SnapshotNotFound],
)
async def list_pages(
    ctx: Context, data: schemas.ListCrawledPagesInput
) -> schemas.CrawledPageSummaryPage:
    """List pages captured in a snapshot.

    `search` matches the URL or title (any case); `statusClass` counts as the snapshot's
    `status_counts` do (`error`: no HTTP status); `imported` keeps pages imported as documents
    (true) or the others; `minWords` a least word count. Sorted by `sortBy` (pages without a
    status last), then by URL."""
    return await snapshots.pages(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getPage",
    "/v1/website-scan/pages/{id}",
    access=Access.member,
    errors=[PageNotFound],
)
async def get_page(ctx: Context, data: schemas.CrawledPageIdInput) -> schemas.CrawledPage:
    """Get page detail: metadata, headings and links.

    Headings by level in document order. Links: the first 500 internal and 500 external ones
    (`internal_truncated`, `external_truncated` say when there are more; every broken one is in
    getBrokenLinks), an internal link with the status its target answered in this crawl (null
    when it was not crawled), an external one with its status when the crawl found it broken."""
    return await snapshots.get_page(ctx.session, ctx.tenant.tenant_id, data.id)


@router.get(
    "getPageContent",
    "/v1/website-scan/pages/{id}/content",
    access=Access.member,
    errors=[PageNotFound, ContentPurged],
)
async def get_page_content(
    ctx: Context, data: schemas.CrawledPageContentInput
) -> schemas.CrawledPageContent:
    """Get extracted main content of a page.

    `markdown` as the crawler extracted it (navigation and boilerplate left out), `text` without
    markup, `html` rendered from the markdown and sanitized; at most 250,000 bytes (`truncated`
    says when it was cut). A page without content (it failed, answered other than 2xx, was not
    HTML or had no main text) has empty content and `content_error` says why. 410 when
    retention removed the snapshot's content (its metadata remains)."""
    return await snapshots.content(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "diffSnapshots",
    "/v1/website-scan/snapshots/{id}/diff",
    access=Access.member,
    errors=[SnapshotNotFound, SnapshotsNotComparable],
)
async def diff_snapshots(ctx: Context, data: schemas.DiffSnapshotsInput) -> schemas.SnapshotDiff:
    """Compare a snapshot with a base snapshot: added, removed, changed pages.

    Pages are matched by normalized URL; a page is changed when its content hash, title, meta
    description, canonical URL, status or headings differ (`fields_changed` names them).
    `baseSnapshotId` defaults to the configuration's previous finished, non-partial snapshot;
    without one, `base_snapshot_id` is null and every page is added. 400 when the base is
    another configuration's. Sorted by URL; `summary` counts every page whatever `change`
    keeps."""
    return await snapshots.diff(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getBrokenLinks",
    "/v1/website-scan/snapshots/{id}/broken-links",
    access=Access.member,
    errors=[SnapshotNotFound],
)
async def get_broken_links(
    ctx: Context, data: schemas.BrokenLinksInput
) -> schemas.BrokenLinkReport:
    """Broken links report for a snapshot.

    Broken: an internal target that answered 400 or more, failed (DNS, TLS, timeout) or looped
    in redirects; external targets only when the run checked external links. Sorted by target
    URL, each with where it is linked from (the first 500, `page_id` the linking page in this
    snapshot); `summary` counts the whole snapshot whatever `scope` keeps."""
    return await snapshots.broken_links(ctx.session, ctx.tenant.tenant_id, data)
