"""The shapes of the audit check catalog (checks.py): severities, categories, a check and its
threshold bounds, and where each check's problem is documented."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "notice"]
Category = Literal[
    "crawlability",
    "indexability",
    "on_page",
    "content",
    "links",
    "images",
    "structured_data",
    "international",
    "performance",
    "security",
    "geo",
]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "notice")
SEVERITY_RANK = {"error": 0, "warning": 1, "notice": 2}
_GOOGLE = "https://developers.google.com/search/docs/"
# Where each check's problem is explained by those who define it: a check's own entry, else
# its category's.
DOCS_BY_CATEGORY = {
    "crawlability": _GOOGLE + "crawling-indexing/http-network-errors",
    "indexability": _GOOGLE + "crawling-indexing/consolidate-duplicate-urls",
    "on_page": _GOOGLE + "appearance/title-link",
    "content": _GOOGLE + "fundamentals/creating-helpful-content",
    "links": _GOOGLE + "crawling-indexing/links-crawlable",
    "images": _GOOGLE + "appearance/google-images",
    "structured_data": _GOOGLE + "appearance/structured-data/intro-structured-data",
    "international": _GOOGLE + "specialty/international/localized-versions",
    "performance": "https://web.dev/articles/vitals",
    "security": "https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers",
    "geo": "https://llmstxt.org/",
}
DOCS_BY_PREFIX = {
    "redirect": _GOOGLE + "crawling-indexing/301-redirects",
    "internal_redirect": _GOOGLE + "crawling-indexing/301-redirects",
    "blocked_by_robots": _GOOGLE + "crawling-indexing/robots/intro",
    "robots_txt": _GOOGLE + "crawling-indexing/robots/intro",
    "sitemap": _GOOGLE + "crawling-indexing/sitemaps/overview",
    "noindex": _GOOGLE + "crawling-indexing/block-indexing",
    "indexable_not_in_sitemap": _GOOGLE + "crawling-indexing/sitemaps/overview",
    "nofollow": _GOOGLE + "crawling-indexing/qualify-outbound-links",
    "meta_description": _GOOGLE + "appearance/snippet",
    "duplicate_meta_description": _GOOGLE + "appearance/snippet",
    "open_graph": "https://ogp.me/",
    "viewport": "https://developer.mozilla.org/en-US/docs/Web/HTML/Viewport_meta_tag",
    "slow_ttfb": "https://web.dev/articles/ttfb",
    "mixed_content": "https://web.dev/articles/what-is-mixed-content",
    "http_not_https": _GOOGLE + "crawling-indexing/site-move-with-url-changes",
    "ai_": "https://platform.openai.com/docs/bots",
}


@dataclass(frozen=True)
class Bound:
    """One threshold key: its default and the range updateAuditCheck accepts."""

    default: int
    low: int
    high: int


@dataclass(frozen=True)
class Check:
    check_id: str
    title: str
    description: str
    category: Category
    severity: Severity
    how_to_fix: str
    needs: tuple[str, ...] = ()
    threshold: dict[str, Bound] = field(default_factory=dict)

    @property
    def docs_url(self) -> str:
        for prefix, url in DOCS_BY_PREFIX.items():
            if self.check_id.startswith(prefix):
                return url
        return DOCS_BY_CATEGORY[self.category]

    def default_threshold(self) -> dict[str, int]:
        return {key: bound.default for key, bound in self.threshold.items()}


def define(
    check_id: str,
    category: Category,
    severity: Severity,
    title: str,
    description: str,
    how_to_fix: str,
    needs: tuple[str, ...] = (),
    **threshold: Bound,
) -> Check:
    return Check(check_id, title, description, category, severity, how_to_fix, needs, threshold)
