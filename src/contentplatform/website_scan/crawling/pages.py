"""What an SEO audit needs of one fetched page: selectolax for the structure (title, meta,
headings, links, hreflang, JSON-LD), trafilatura for the main text (hashed and counted).

Parsing is CPU work: `off_loop` runs it on one thread of its own, so the event loop (fetches,
the API, DBOS) keeps moving meanwhile. One thread for the whole process, not a pool: lxml under
trafilatura is not safe to call from several threads at once (adbar/trafilatura#840 reports
crashes), and under the GIL more threads would not parse faster anyway.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, ParamSpec, TypeVar

import trafilatura
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from contentplatform.website_scan.crawling import urls
from contentplatform.website_scan.crawling.fetching import Fetched

MAX_LINKS = 5000
MAX_HEADINGS = 500
MAX_JSON_LD = 20
MAX_JSON_LD_BYTES = 100_000
MAX_TEXT = 200  # characters kept of a title, heading or anchor text
MAX_IMAGES = 500
MAX_MIXED_CONTENT = 100
MAX_SOCIAL_TAGS = 50  # Open Graph and Twitter tags kept of each kind
MAX_TAG_VALUE = 1000
# The response headers a security audit looks at, as recorded (lowercase names).
SECURITY_HEADERS = (
    "strict-transport-security",
    "content-security-policy",
    "x-content-type-options",
    "x-frame-options",
    "referrer-policy",
    "permissions-policy",
)
# Sub-resources a browser loads with the page: over http on an https page, mixed content.
_SUBRESOURCES = (
    ("img[src]", "src"),
    ("script[src]", "src"),
    ("iframe[src]", "src"),
    ("source[src]", "src"),
    ("video[src]", "src"),
    ("audio[src]", "src"),
    ('link[rel~="stylesheet"][href]', "href"),
)
_SPACE = re.compile(r"\s+")
_PARSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="page-parser")

P = ParamSpec("P")
T = TypeVar("T")


async def off_loop(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)` run on the parser thread (see the module docstring)."""
    call = functools.partial(function, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_PARSER, call)


@dataclass
class Link:
    url: str
    text: str
    rel: str
    internal: bool


@dataclass
class Image:
    src: str
    alt: str | None  # None: no alt attribute; "": marked decorative


@dataclass
class AuditFacts:
    """What the audits read of a page beyond the rest of its record."""

    images: list[Image] = field(default_factory=list)
    open_graph: dict[str, str] = field(default_factory=dict)  # og:title -> its content
    twitter: dict[str, str] = field(default_factory=dict)  # twitter:card -> its content
    viewport: str | None = None
    security_headers: dict[str, str] = field(default_factory=dict)
    mixed_content: list[str] = field(default_factory=list)  # http sub-resources, https page


@dataclass
class PageRecord:
    url: str  # normalized: the page's row key
    final_url: str
    depth: int
    status: int | None
    error: str | None
    redirect_chain: list[str]
    content_type: str | None = None
    load_ms: int = 0
    size: int = 0
    title: str | None = None
    meta_description: str | None = None
    canonical_url: str | None = None
    robots_meta: str | None = None
    x_robots_tag: str | None = None
    noindex: bool = False
    language: str | None = None
    headings: list[tuple[str, str]] = field(default_factory=list)  # (h1..h6, text), in order
    hreflang: dict[str, str] = field(default_factory=dict)
    json_ld: list[Any] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    main_text: str = ""  # markdown
    word_count: int = 0
    content_hash: str | None = None
    ttfb_ms: int | None = None  # to the final answer's headers (load_ms: to its whole body)
    audit: AuditFacts | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _clean(text: str | None, limit: int = MAX_TEXT) -> str:
    return _SPACE.sub(" ", text or "").strip()[:limit]


def content_hash(text: str) -> str:
    """sha256 of the main text with whitespace collapsed: reflowed markup is no change."""
    return hashlib.sha256(_SPACE.sub(" ", text).strip().encode()).hexdigest()


def is_html(fetched: Fetched) -> bool:
    kind = fetched.headers.get("content-type", "")
    return "html" in kind.lower() or (not kind and fetched.body.lstrip()[:1] == b"<")


def record(
    fetched: Fetched, depth: int, site: str, *, allow_subdomains: bool = False
) -> PageRecord:
    """The page record of `fetched` (its links relative to its final URL); `site` is the start
    URL, deciding which links are internal."""
    page = PageRecord(
        url=urls.normalize(fetched.url) or fetched.url,
        final_url=fetched.final_url,
        depth=depth,
        status=fetched.status,
        error=fetched.error,
        redirect_chain=list(fetched.redirect_chain),
        content_type=fetched.headers.get("content-type"),
        load_ms=fetched.elapsed_ms,
        size=len(fetched.body),
        x_robots_tag=fetched.headers.get("x-robots-tag"),
        ttfb_ms=fetched.first_byte_ms if fetched.status is not None else None,
    )
    if fetched.status is None:
        return page
    page.audit = AuditFacts(security_headers=_security_headers(fetched.headers))
    if not 200 <= fetched.status < 300 or not is_html(fetched):
        return page
    html = fetched.body.decode("utf-8", errors="replace")
    tree = HTMLParser(html)
    base = _base(tree, fetched.final_url)

    title = tree.css_first("title")
    page.title = _clean(title.text()) if title else None
    for meta in tree.css("meta[name]"):
        name = (meta.attributes.get("name") or "").lower()
        value = meta.attributes.get("content") or ""
        if name == "description":
            page.meta_description = _clean(value, 1000)
        elif name in ("robots", "googlebot") and page.robots_meta is None:
            page.robots_meta = _clean(value)
    directives = f"{page.robots_meta or ''},{page.x_robots_tag or ''}".lower()
    page.noindex = "noindex" in directives or "none" in directives.replace(" ", "").split(",")
    html_tag = tree.css_first("html")
    page.language = (html_tag.attributes.get("lang") if html_tag else None) or None

    for node in tree.css("h1, h2, h3, h4, h5, h6")[:MAX_HEADINGS]:
        page.headings.append((node.tag or "", _clean(node.text())))
    for node in tree.css("link[rel]"):
        rel = (node.attributes.get("rel") or "").lower().split()
        href = urls.normalize(node.attributes.get("href") or "", base)
        if href is None:
            continue
        if "canonical" in rel and page.canonical_url is None:
            page.canonical_url = href
        if "alternate" in rel and node.attributes.get("hreflang"):
            page.hreflang[(node.attributes.get("hreflang") or "").lower()] = href
    for node in tree.css('script[type="application/ld+json"]')[:MAX_JSON_LD]:
        text = node.text() or ""
        if len(text) <= MAX_JSON_LD_BYTES:
            try:
                page.json_ld.append(json.loads(text))
            except ValueError:
                page.json_ld.append({"error": "invalid JSON-LD"})
    page.links = _links(tree, base, site, allow_subdomains)
    _audit_facts(page.audit, tree, base, https=fetched.final_url.lower().startswith("https:"))

    # Main content as markdown (headings, lists, emphasis kept): trafilatura drops navigation,
    # footers and boilerplate.
    page.main_text = (
        trafilatura.extract(
            html,
            url=fetched.final_url,
            favor_recall=True,
            output_format="markdown",
            include_formatting=True,
        )
        or ""
    )
    page.word_count = len(page.main_text.split())
    page.content_hash = content_hash(page.main_text)
    return page


def _security_headers(headers: Mapping[str, str]) -> dict[str, str]:
    lowered = {name.lower(): value for name, value in headers.items()}
    return {
        name: _clean(lowered[name], MAX_TAG_VALUE) for name in SECURITY_HEADERS if name in lowered
    }


def _audit_facts(facts: AuditFacts, tree: HTMLParser, base: str, *, https: bool) -> None:
    for node in tree.css("img")[:MAX_IMAGES]:
        src = urls.normalize(node.attributes.get("src") or "", base)
        if src is not None:
            alt = node.attributes.get("alt")
            facts.images.append(Image(src, None if alt is None else _clean(alt, MAX_TAG_VALUE)))
    for node in tree.css("meta[property], meta[name]"):
        key = (node.attributes.get("property") or node.attributes.get("name") or "").lower()
        value = _clean(node.attributes.get("content"), MAX_TAG_VALUE)
        if key.startswith("og:") and len(facts.open_graph) < MAX_SOCIAL_TAGS:
            facts.open_graph.setdefault(key[:100], value)
        elif key.startswith("twitter:") and len(facts.twitter) < MAX_SOCIAL_TAGS:
            facts.twitter.setdefault(key[:100], value)
        elif key == "viewport" and facts.viewport is None:
            facts.viewport = value
    if https:
        for selector, attribute in _SUBRESOURCES:
            for node in tree.css(selector):
                target = (node.attributes.get(attribute) or "").strip()
                if (
                    target.lower().startswith("http:")
                    and target not in facts.mixed_content
                    and len(facts.mixed_content) < MAX_MIXED_CONTENT
                ):
                    facts.mixed_content.append(target[:2048])


def links_of(fetched: Fetched, site: str, *, allow_subdomains: bool = False) -> list[Link]:
    """The links of a fetched HTML page (as `record` finds them, without the rest of it); none
    when it is no 2xx HTML answer."""
    if fetched.status is None or not 200 <= fetched.status < 300 or not is_html(fetched):
        return []
    tree = HTMLParser(fetched.body.decode("utf-8", errors="replace"))
    return _links(tree, _base(tree, fetched.final_url), site, allow_subdomains)


def _base(tree: HTMLParser, final_url: str) -> str:
    """What relative links resolve against: the page's <base href>, else where it was found."""
    head_base = tree.css_first("base[href]")
    base = urls.normalize(head_base.attributes.get("href") or "", final_url) if head_base else None
    return base or final_url


def _links(tree: HTMLParser, base: str, site: str, allow_subdomains: bool) -> list[Link]:
    found: list[Link] = []
    seen: set[str] = set()
    for node in tree.css("a[href]"):
        href = urls.normalize(node.attributes.get("href") or "", base)
        if href is None or href in seen or len(found) >= MAX_LINKS:
            continue
        seen.add(href)
        found.append(
            Link(
                url=href,
                text=_clean(node.text()),
                rel=_clean(node.attributes.get("rel")),
                internal=urls.same_site(href, site, allow_subdomains=allow_subdomains),
            )
        )
    return found
