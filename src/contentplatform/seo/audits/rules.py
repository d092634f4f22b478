"""The checks' evaluations: pure functions over a snapshot's stored facts, no database.

`Evaluation` is fed the snapshot's pages one at a time (`add`, as they stream in) and judges
each page's own checks at once; what spans pages (titles and descriptions for duplicates, the
link graph for orphans, depth and broken links, hreflang pairs, canonical targets, sitemap
listings) is kept compact (URLs interned to integers) and judged in `finish`, with the
snapshot's site files. A finding is (check id, url, evidence); a check whose facts a page (or
the snapshot) lacks counts that page as not evaluated instead.

Which pages a check judges: status checks every crawled URL; on-page, content and most others
the pages that answered 200 with HTML (`ok` pages); duplicates and sitemap coverage the
indexable ones (ok, no noindex, canonical itself or none). The crawler stores a redirected
page under the URL it landed on (its `redirect_chain` the hops): orphan and depth checks skip
those, as the URL linked is not kept.
"""

from __future__ import annotations

import fnmatch
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from protego import Protego

from contentplatform.seo.audits.checks import CHECKS
from contentplatform.seo.geo import crawlers, llms_txt

_HREFLANG = re.compile(r"^(x-default|[a-z]{2,3}(-[a-z]{4})?(-([a-z]{2}|[0-9]{3}))?)$")
_OG_REQUIRED = ("og:title", "og:type", "og:image", "og:url")
SEARCH_AGENT = "Googlebot"


@dataclass
class Page:
    """What an audit reads of one crawled page (never its content)."""

    id: Any
    url: str
    final_url: str
    status: int | None
    error: str | None
    redirect_chain: list[str]
    content_type: str | None
    title: str | None
    meta_description: str | None
    canonical: str | None
    noindex: bool
    robots_meta: str | None
    x_robots_tag: str | None
    headings: list[list[str]]
    hreflang: dict[str, str]
    json_ld: list[Any]
    links: list[dict[str, Any]]
    word_count: int
    content_hash: str | None
    ttfb_ms: int | None
    audit: dict[str, Any] | None
    size_bytes: int
    language: str | None

    @property
    def html(self) -> bool:
        return self.content_type is None or "html" in self.content_type.lower()

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None and self.html

    @property
    def indexable(self) -> bool:
        return self.ok and not self.noindex and self.canonical in (None, self.url)


@dataclass(frozen=True)
class Site:
    """The snapshot's facts beyond its pages."""

    start_url: str
    robots_txt: dict[str, Any] | None
    llms_txt: dict[str, Any] | None
    sitemaps: dict[str, Any] | None
    # Per URL: lcp_ms, inp_ms, cls and their source (field or lab); work.py reads them.
    vitals: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Result:
    findings: dict[str, list[tuple[str, Any, dict[str, Any]]]] = field(default_factory=dict)
    not_evaluated: dict[str, int] = field(default_factory=dict)
    analyzed: set[str] = field(default_factory=set)  # internal HTML URLs (health's base)


class Evaluation:
    def __init__(self, config: dict[str, dict[str, Any]], site: Site) -> None:
        self.config = config
        self.site = site
        self.on = {check_id for check_id, c in config.items() if c["enabled"]}
        self.result = Result()
        self.ids: dict[str, int] = {}
        self.urls: list[str] = []
        self.pages: dict[int, tuple[Any, int | None, bool, bool]] = {}  # id, status, ok, index.
        self.chained: set[int] = set()
        self.edges: dict[int, list[int]] = {}
        self.incoming: dict[int, list[int]] = {}
        self.anchor: dict[int, str] = {}
        self.titles: dict[str, list[int]] = {}
        self.descriptions: dict[str, list[int]] = {}
        self.contents: dict[str, list[int]] = {}
        self.canonicals: dict[int, int] = {}
        self.hreflangs: dict[int, dict[str, int]] = {}
        self.noindex: set[int] = set()
        self.seen: set[tuple[str, str]] = set()

    # --- helpers -------------------------------------------------------------------------

    def _id(self, url: str) -> int:
        found = self.ids.get(url)
        if found is None:
            found = self.ids[url] = len(self.urls)
            self.urls.append(url)
        return found

    def _threshold(self, check_id: str, key: str) -> int:
        return int(self.config[check_id]["threshold"][key])

    def emit(self, check_id: str, url: str, evidence: dict[str, Any], page_id: Any = None) -> None:
        if check_id not in self.on:
            return
        patterns = self.config[check_id]["exclude_url_patterns"]
        if any(fnmatch.fnmatchcase(url, pattern) for pattern in patterns):
            return
        if (check_id, url) in self.seen:  # one finding per check and URL: the first kept
            return
        self.seen.add((check_id, url))
        self.result.findings.setdefault(check_id, []).append((url, page_id, evidence))

    def skip(self, check_id: str, count: int = 1) -> None:
        if check_id in self.on:
            counts = self.result.not_evaluated
            counts[check_id] = counts.get(check_id, 0) + count

    # --- one page --------------------------------------------------------------------------

    def add(self, page: Page) -> None:
        index = self._id(page.url)
        self.pages[index] = (page.id, page.status, page.ok, page.indexable)
        if page.html or page.status is None or page.status >= 300:
            self.result.analyzed.add(page.url)
        if page.redirect_chain:
            self.chained.add(index)
        self._status(page)
        if not page.ok:
            return
        self._graph(index, page)
        self._on_page(page)
        self._indexing(index, page)
        if page.audit is None:
            for check_id, check in CHECKS.items():
                if "audit" in check.needs:
                    self.skip(check_id)
        else:
            self._audit_facts(page, page.audit)
        if page.ttfb_ms is None:
            self.skip("slow_ttfb")
        elif page.ttfb_ms > self._threshold("slow_ttfb", "maxMs"):
            self.emit("slow_ttfb", page.url, {"ttfb_ms": page.ttfb_ms}, page.id)

    def _status(self, page: Page) -> None:
        url, status = page.url, page.status
        if page.error in ("redirect_loop", "too_many_redirects"):
            loop = [{"url": hop, "status": None} for hop in page.redirect_chain]
            self.emit("redirect_loop", url, {"error": page.error, "hops": loop}, page.id)
        elif page.error is not None or status is None:
            self.emit("fetch_failed", url, {"error": page.error}, page.id)
        elif 400 <= status < 500:
            self.emit("http_4xx", url, {"status": status}, page.id)
        elif status >= 500:
            self.emit("http_5xx", url, {"status": status}, page.id)
        chain = page.redirect_chain
        if page.error is None and chain:
            # The chain holds the URLs that redirected, the one linked first; the page is
            # stored under where it landed. The row is the URL linked.
            hops: list[dict[str, Any]] = [{"url": hop, "status": None} for hop in chain]
            hops.append({"url": url, "status": status})
            name = "redirect_chain" if len(chain) >= 2 else "internal_redirect"
            self.emit(name, chain[0], {"hops": hops}, page.id)
        if urlsplit(url).scheme == "http" and url in self.result.analyzed:
            self.emit("http_not_https", url, {}, page.id)
        if page.html and page.size_bytes > self._threshold("page_too_large", "maxKb") * 1024:
            self.emit("page_too_large", url, {"size_bytes": page.size_bytes}, page.id)

    def _graph(self, index: int, page: Page) -> None:
        targets: list[int] = []
        nofollow: list[str] = []
        for link in page.links:
            if not link.get("internal"):
                continue
            target = self._id(link["url"])
            if target == index:
                continue
            targets.append(target)
            self.incoming.setdefault(target, []).append(index)
            self.anchor.setdefault(target, link.get("text") or "")
            if "nofollow" in (link.get("rel") or "").lower():
                nofollow.append(link["url"])
        self.edges[index] = targets
        if not targets:
            self.emit("no_outgoing_links", page.url, {}, page.id)
        if nofollow:
            self.emit("nofollow_internal_links", page.url, {"targets": nofollow[:20]}, page.id)

    def _on_page(self, page: Page) -> None:
        url, pid = page.url, page.id
        title = (page.title or "").strip()
        if not title:
            self.emit("title_missing", url, {}, pid)
        elif len(title) > self._threshold("title_too_long", "maxChars"):
            self.emit("title_too_long", url, {"title": title, "chars": len(title)}, pid)
        elif len(title) < self._threshold("title_too_short", "minChars"):
            self.emit("title_too_short", url, {"title": title, "chars": len(title)}, pid)
        text = (page.meta_description or "").strip()
        if not text:
            self.emit("meta_description_missing", url, {}, pid)
        elif len(text) > self._threshold("meta_description_too_long", "maxChars"):
            self.emit("meta_description_too_long", url, {"chars": len(text)}, pid)
        elif len(text) < self._threshold("meta_description_too_short", "minChars"):
            self.emit("meta_description_too_short", url, {"chars": len(text)}, pid)
        h1 = [text for tag, text in page.headings if tag == "h1"]
        if not h1:
            self.emit("h1_missing", url, {}, pid)
        elif len(h1) > 1:
            self.emit("multiple_h1", url, {"h1": h1[:10]}, pid)
        if page.word_count < self._threshold("thin_content", "minWords"):
            self.emit("thin_content", url, {"words": page.word_count}, pid)
        if not page.language:
            self.emit("html_lang_missing", url, {}, pid)
        directives = f"{page.robots_meta or ''},{page.x_robots_tag or ''}".lower()
        if page.noindex:
            self.emit("noindex_page", url, {"robots": directives.strip(",")}, pid)
        if "nofollow" in directives:
            self.emit("nofollow_page", url, {"robots": directives.strip(",")}, pid)
        invalid = sum(1 for block in page.json_ld if block == {"error": "invalid JSON-LD"})
        if invalid:
            self.emit("invalid_json_ld", url, {"blocks": invalid}, pid)
        untyped = sum(1 for block in page.json_ld if _untyped(block))
        if untyped:
            self.emit("json_ld_missing_type", url, {"objects": untyped}, pid)
        if not page.json_ld and page.indexable:
            self.emit("structured_data_missing", url, {}, pid)
        for lang, target in page.hreflang.items():
            if not _HREFLANG.match(lang):
                self.emit("hreflang_invalid_code", url, {"hreflang": lang, "target": target}, pid)

    def _indexing(self, index: int, page: Page) -> None:
        if page.noindex:
            self.noindex.add(index)
        if page.canonical is None:
            if page.indexable:
                self.emit("canonical_missing", page.url, {}, page.id)
        elif page.canonical != page.url:
            if urlsplit(page.canonical).hostname != urlsplit(page.url).hostname:
                self.emit("canonical_external", page.url, {"declared": page.canonical}, page.id)
            else:
                self.canonicals[index] = self._id(page.canonical)
        if page.hreflang:
            self.hreflangs[index] = {lang: self._id(url) for lang, url in page.hreflang.items()}
        if page.indexable:
            key = page.content_hash
            if page.title:
                self.titles.setdefault(page.title.strip(), []).append(index)
            if page.meta_description:
                self.descriptions.setdefault(page.meta_description.strip(), []).append(index)
            if key and page.word_count:
                self.contents.setdefault(key, []).append(index)

    def _audit_facts(self, page: Page, audit: dict[str, Any]) -> None:
        url, pid = page.url, page.id
        images = audit.get("images") or []
        missing = [image["src"] for image in images if image.get("alt") is None]
        if missing:
            self.emit("image_missing_alt", url, {"images": missing[:20]}, pid)
        most = self._threshold("image_alt_too_long", "maxChars")
        long_alt = [image["src"] for image in images if len(image.get("alt") or "") > most]
        if long_alt:
            self.emit("image_alt_too_long", url, {"images": long_alt[:20]}, pid)
        if not audit.get("viewport"):
            self.emit("viewport_missing", url, {}, pid)
        graph = audit.get("open_graph") or {}
        if not graph:
            self.emit("open_graph_missing", url, {}, pid)
        elif lacking := [tag for tag in _OG_REQUIRED if not graph.get(tag)]:
            self.emit("open_graph_incomplete", url, {"missing": lacking}, pid)
        if not (audit.get("twitter") or {}).get("twitter:card"):
            self.emit("twitter_card_missing", url, {}, pid)
        headers = audit.get("security_headers") or {}
        https = urlsplit(page.final_url).scheme == "https"
        if https and audit.get("mixed_content"):
            self.emit("mixed_content", url, {"resources": audit["mixed_content"][:20]}, pid)
        if https and "strict-transport-security" not in headers:
            self.emit("hsts_missing", url, {}, pid)
        if headers.get("x-content-type-options", "").lower() != "nosniff":
            self.emit("x_content_type_options_missing", url, {}, pid)
        csp = headers.get("content-security-policy", "")
        if "x-frame-options" not in headers and "frame-ancestors" not in csp:
            self.emit("clickjacking_protection_missing", url, {}, pid)
        if not csp:
            self.emit("csp_missing", url, {}, pid)

    # --- across pages ----------------------------------------------------------------------

    def finish(self) -> Result:
        self._duplicates("duplicate_title", self.titles, "title")
        self._duplicates("duplicate_meta_description", self.descriptions, "description")
        self._duplicates("duplicate_content", self.contents, "content_hash")
        self._links()
        self._canonicals()
        self._hreflang()
        self._vitals()
        self._robots()
        self._sitemaps()
        self._llms_txt()
        return self.result

    def _page_id(self, index: int) -> Any:
        found = self.pages.get(index)
        return found[0] if found else None

    def _status_of(self, index: int) -> tuple[bool, int | None]:
        """Whether the URL was crawled, and its status."""
        found = self.pages.get(index)
        return (found is not None, found[1] if found else None)

    def _duplicates(self, check_id: str, groups: dict[str, list[int]], key: str) -> None:
        for value, members in groups.items():
            if len(members) < 2:
                continue
            urls = sorted(self.urls[m] for m in members)
            for member in members:
                others = [u for u in urls if u != self.urls[member]][:20]
                evidence = {key: value[:300], "duplicates": others, "count": len(members)}
                self.emit(check_id, self.urls[member], evidence, self._page_id(member))

    def _links(self) -> None:
        for target, sources in self.incoming.items():
            crawled, status = self._status_of(target)
            if crawled and (status is None or status >= 400):
                evidence = {
                    "target": self.urls[target],
                    "status": status,
                    "anchor_text": self.anchor.get(target, ""),
                    "source_urls": sorted({self.urls[s] for s in sources})[:50],
                }
                self.emit(
                    "broken_internal_link", self.urls[target], evidence, self._page_id(target)
                )
        start = self.ids.get(self.site.start_url)
        depth: dict[int, int] = {}
        if start is not None:
            depth[start] = 0
            queue = deque([start])
            while queue:
                node = queue.popleft()
                for target in self.edges.get(node, ()):
                    if target not in depth:
                        depth[target] = depth[node] + 1
                        queue.append(target)
        most = self._threshold("deep_page", "maxClickDepth")
        for index, (page_id, _, ok, _) in self.pages.items():
            if not ok or index == start or index in self.chained:
                continue
            if not any(source != index for source in self.incoming.get(index, ())):
                self.emit("orphan_page", self.urls[index], {}, page_id)
            elif depth.get(index, 0) > most:
                self.emit("deep_page", self.urls[index], {"click_depth": depth[index]}, page_id)

    def _canonicals(self) -> None:
        for index, target in self.canonicals.items():
            crawled, status = self._status_of(target)
            evidence = {"declared": self.urls[target], "resolved": self.urls[index]}
            if crawled and status != 200:
                self.emit(
                    "canonical_to_non_200",
                    self.urls[index],
                    {"canonical": self.urls[target], "status": status},
                    self._page_id(index),
                )
            else:
                self.emit("canonical_mismatch", self.urls[index], evidence, self._page_id(index))

    def _hreflang(self) -> None:
        for index, alternates in self.hreflangs.items():
            for lang, target in alternates.items():
                if target == index:
                    continue
                crawled, status = self._status_of(target)
                url = self.urls[index]
                if crawled and status != 200:
                    evidence = {"hreflang": lang, "target": self.urls[target], "status": status}
                    self.emit("hreflang_to_non_200", url, evidence, self._page_id(index))
                elif crawled and index not in self.hreflangs.get(target, {}).values():
                    evidence = {"hreflang": lang, "target": self.urls[target]}
                    self.emit("hreflang_missing_return_link", url, evidence, self._page_id(index))

    def _vitals(self) -> None:
        limits = {
            "lcp_poor": ("lcp_ms", 4000),
            "inp_poor": ("inp_ms", 500),
            "cls_poor": ("cls", 0.25),
        }
        for check_id, (metric, worst) in limits.items():
            for index, (page_id, _, ok, _) in self.pages.items():
                if not ok:
                    continue
                measured = self.site.vitals.get(self.urls[index]) or {}
                value = measured.get(metric)
                if value is None:
                    self.skip(check_id)
                elif value > worst:
                    evidence = {metric: value, "source": measured.get("source")}
                    self.emit(check_id, self.urls[index], evidence, page_id)

    def _robots(self) -> None:
        robots = self.site.robots_txt
        names = ("blocked_by_robots", "robots_txt_missing", "robots_txt_unreachable")
        if robots is None:
            for name in (*names, "ai_search_crawler_blocked", "ai_training_crawler_blocked"):
                self.skip(name)
            return
        root = _root(self.site.start_url)
        where = root + "robots.txt"
        status = robots.get("status")
        if status is None or status >= 500:
            self.emit("robots_txt_unreachable", where, {"status": status})
            return
        if status >= 400:
            self.emit("robots_txt_missing", where, {"status": status})
            return
        body = robots.get("body") or ""
        parser = Protego.parse(body)
        for index, url in enumerate(self.urls):
            if url.startswith(root) and not parser.can_fetch(url, SEARCH_AGENT):
                self.emit(
                    "blocked_by_robots", url, {"user_agent": SEARCH_AGENT}, self._page_id(index)
                )
        blocked: dict[str, list[str]] = {"search": [], "training": []}
        for access in crawlers.crawler_access(robots, root):
            if access.allowed is False:
                blocked["training" if access.purpose == "training" else "search"].append(access.bot)
        if blocked["search"]:
            self.emit("ai_search_crawler_blocked", where, {"agents": blocked["search"]})
        if blocked["training"]:
            self.emit("ai_training_crawler_blocked", where, {"agents": blocked["training"]})

    def _sitemaps(self) -> None:
        names = (
            "sitemap_missing",
            "sitemap_invalid",
            "sitemap_contains_bad_urls",
            "noindex_in_sitemap",
            "indexable_not_in_sitemap",
        )
        maps = self.site.sitemaps
        if maps is None:
            for name in names:
                self.skip(name)
            return
        read = maps.get("read") or []
        for report in read:
            if report.get("error"):
                self.emit("sitemap_invalid", report["url"], {"error": report["error"]})
        if not any(report.get("type") and not report.get("error") for report in read):
            self.emit("sitemap_missing", _root(self.site.start_url) + "sitemap.xml", {})
            return
        listed: dict[str, list[str]] = maps.get("listed") or {}
        for url, where in listed.items():
            index = self.ids.get(url)
            if index is None or index not in self.pages:
                continue
            page_id, status, _, _ = self.pages[index]
            evidence = {"sitemaps": where[:10], "status": status}
            if index in self.noindex:
                self.emit("noindex_in_sitemap", url, evidence, page_id)
            elif status != 200 or index in self.canonicals:
                self.emit("sitemap_contains_bad_urls", url, evidence, page_id)
        for index, (page_id, _, _, indexable) in self.pages.items():
            if indexable and self.urls[index] not in listed:
                self.emit("indexable_not_in_sitemap", self.urls[index], {}, page_id)

    def _llms_txt(self) -> None:
        found = self.site.llms_txt
        if found is None:
            self.skip("llms_txt_missing")
            self.skip("llms_txt_invalid")
            return
        where = _root(self.site.start_url) + "llms.txt"
        status = found.get("status")
        if status is None or not 200 <= status < 300 or not found.get("body"):
            self.emit("llms_txt_missing", where, {"status": status})
            return
        problems = llms_txt.parse(found["body"]).problems
        if problems:
            self.emit("llms_txt_invalid", where, {"problems": problems[:10]})


def _untyped(block: Any) -> bool:
    if not isinstance(block, dict) or block == {"error": "invalid JSON-LD"}:
        return False
    if "@graph" in block:
        return any(isinstance(item, dict) and "@type" not in item for item in block["@graph"])
    return "@type" not in block


def _root(start_url: str) -> str:
    parts = urlsplit(start_url)
    return f"{parts.scheme}://{parts.netloc}/"


def iter_findings(result: Result) -> Iterator[tuple[str, str, Any, dict[str, Any]]]:
    for check_id, rows in result.findings.items():
        for url, page_id, evidence in rows:
            yield check_id, url, page_id, evidence
