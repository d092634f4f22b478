"""Google's answers as our rows: a WmxSitemap resource as a Search Console sitemap, an
`inspectionResult` (IndexStatusInspectionResult, RichResultsResult) as a completed inspection.

Google's text is not a user's, but it goes to the database all the same: every string is cut
to its column's length and loses NUL characters (PostgreSQL refuses them), every count is
bounded, every unknown verdict is null."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from contentplatform.kit.db import utcnow
from contentplatform.seo.models import SeoSitemap, SeoUrlInspection

VERDICTS = frozenset({"PASS", "PARTIAL", "FAIL", "NEUTRAL"})
MAX_INT = 2**31 - 1
# Lists Google may make long (referring URLs): kept to this many.
MAX_LISTED = 100


def text(value: Any, length: int) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value.replace("\x00", "")[:length] or None


def when(value: Any) -> datetime | None:
    """An RFC 3339 instant of Google's, None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return found if found.tzinfo is not None else None


def count(value: Any) -> int:
    """Google's int64 counts come as strings."""
    try:
        return max(0, min(int(value), MAX_INT))
    except (TypeError, ValueError):
        return 0


def verdict(value: Any) -> str | None:
    return value if value in VERDICTS else None  # VERDICT_UNSPECIFIED and the unknown: null


def _urls(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    found = (text(item, 2048) for item in value[:MAX_LISTED])
    return [url for url in found if url]


def apply_sitemap(row: SeoSitemap, item: dict[str, Any], now: datetime) -> None:
    """WmxSitemap's fields; its contents without the deprecated `indexed` counts."""
    contents = item.get("contents")
    row.is_index = bool(item.get("isSitemapsIndex"))
    row.is_pending = bool(item.get("isPending"))
    row.last_submitted = when(item.get("lastSubmitted"))
    row.last_downloaded = when(item.get("lastDownloaded"))
    row.errors = count(item.get("errors"))
    row.warnings = count(item.get("warnings"))
    row.contents = [
        {"type": text(entry.get("type"), 40) or "web", "submitted": count(entry.get("submitted"))}
        for entry in (contents if isinstance(contents, list) else [])
        if isinstance(entry, dict)
    ]
    row.synced_at = now
    row.updated_at = now


def _rich_results(value: Any) -> dict[str, Any] | None:
    """RichResultsResult as {verdict, items: [{type, issues: [{message, severity}]}]}: one item
    per detected type, with the issues of all its items."""
    if not isinstance(value, dict):
        return None
    items = []
    for detected in value.get("detectedItems") or []:
        if not isinstance(detected, dict):
            continue
        issues = [
            {
                "message": text(issue.get("issueMessage"), 1000) or "",
                "severity": text(issue.get("severity"), 20) or "",
            }
            for item in detected.get("items") or []
            if isinstance(item, dict)
            for issue in item.get("issues") or []
            if isinstance(issue, dict)
        ]
        items.append(
            {"type": text(detected.get("richResultType"), 100) or "", "issues": issues[:MAX_LISTED]}
        )
    return {"verdict": verdict(value.get("verdict")), "items": items[:MAX_LISTED]}


def complete(row: SeoUrlInspection, result: dict[str, Any]) -> None:
    """The inspection completed with Google's `inspectionResult`."""
    index = result.get("indexStatusResult")
    index = index if isinstance(index, dict) else {}
    row.verdict = verdict(index.get("verdict"))
    row.coverage_state = text(index.get("coverageState"), 255)
    row.indexing_state = text(index.get("indexingState"), 60)
    row.robots_txt_state = text(index.get("robotsTxtState"), 60)
    row.page_fetch_state = text(index.get("pageFetchState"), 60)
    row.google_canonical = text(index.get("googleCanonical"), 2048)
    row.user_canonical = text(index.get("userCanonical"), 2048)
    row.crawled_as = text(index.get("crawledAs"), 20)
    row.last_crawl_time = when(index.get("lastCrawlTime"))
    row.sitemaps = _urls(index.get("sitemap"))
    row.referring_urls = _urls(index.get("referringUrls"))
    row.rich_results = _rich_results(result.get("richResultsResult"))
    row.inspection_result_link = text(result.get("inspectionResultLink"), 2048)
    row.error = None
    row.status = "completed"
    row.completed_at = row.updated_at = utcnow()


def fail(row: SeoUrlInspection, code: str, message: str) -> None:
    row.status = "failed"
    row.error = {"code": code[:60], "message": message[:1000]}
    row.completed_at = row.updated_at = utcnow()
