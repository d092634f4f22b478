"""A garden shop on loopback with one planted failure per audit check, for the acceptance test:
every page is sound (title, description, one H1, canonical, lang, viewport, Open Graph, Twitter
card, JSON-LD, images with alt, security headers, enough words of its own, a link home) but for
the one thing its path names. `fix(check_id)` removes the planted failure of that check, so a
second crawl sees it fixed.

`PLANTED` is what the audit must find: for each check, the URL paths it must report, exactly
(a page planted for one check sometimes fails another by nature: a 404 linked from the home
page is also a broken internal link; those are listed under both, with the reason).
"""

from __future__ import annotations

import html
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.servers import LoopbackServer, send

HTML = "text/html; charset=utf-8"
HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'self'",
}
_WORDS = [
    "soil",
    "compost",
    "seed",
    "spade",
    "rake",
    "hoe",
    "mulch",
    "bloom",
    "root",
    "leaf",
    "water",
    "season",
    "harvest",
    "tomato",
    "basil",
    "shade",
    "frost",
    "trellis",
    "pot",
    "clay",
    "loam",
    "worm",
    "prune",
    "graft",
    "sow",
    "sprout",
    "bulb",
    "hedge",
    "lawn",
    "orchard",
    "berry",
    "bean",
    "pea",
    "squash",
    "onion",
    "garlic",
    "carrot",
    "beet",
    "kale",
    "chard",
    "herb",
    "thyme",
    "sage",
    "mint",
    "fennel",
]

# The pages the home page links to (each a path of its own), and those only a sitemap lists.
LINKED = [
    "/p-title-missing",
    "/p-title-too-long",
    "/p-title-too-short",
    "/p-dup-title-a",
    "/p-dup-title-b",
    "/p-meta-missing",
    "/p-meta-too-long",
    "/p-meta-too-short",
    "/p-dup-meta-a",
    "/p-dup-meta-b",
    "/p-h1-missing",
    "/p-multiple-h1",
    "/p-viewport-missing",
    "/p-og-missing",
    "/p-og-incomplete",
    "/p-twitter-missing",
    "/p-thin-content",
    "/p-dup-content-a",
    "/p-dup-content-b",
    "/p-missing-page",
    "/p-server-error",
    "/p-redirect-once",
    "/p-redirect-chain",
    "/p-redirect-loop",
    "/p-blocked-by-robots",
    "/p-noindex-page",
    "/p-noindex-in-sitemap",
    "/p-nofollow-page",
    "/p-canonical-missing",
    "/p-canonical-mismatch",
    "/p-canonical-target",
    "/p-canonical-to-non-200",
    "/p-canonical-external",
    "/p-not-in-sitemap",
    "/p-deep-1",
    "/p-no-outlinks",
    "/p-nofollow-links",
    "/p-image-missing-alt",
    "/p-image-alt-long",
    "/p-invalid-json-ld",
    "/p-json-ld-no-type",
    "/p-no-structured-data",
    "/p-hreflang-a",
    "/p-hreflang-b",
    "/p-hreflang-non-200",
    "/p-hreflang-bad-code",
    "/p-lang-missing",
    "/p-slow-ttfb",
    "/p-page-too-large",
    "/p-no-content-type-options",
    "/p-no-frame-options",
    "/p-no-csp",
]
DEEP = ["/p-deep-1", "/p-deep-2", "/p-deep-3", "/p-deep-4", "/p-deep-5"]
SITEMAP_ONLY = ["/p-orphan-page", "/p-sitemap-gone"]
# Reached only through their redirects: listed nowhere (a sitemap would fetch them directly).
REDIRECTED = {
    "/p-redirect-once": ["/p-redirect-target"],
    "/p-redirect-chain": ["/p-chain-hop", "/p-chain-end"],
    "/p-redirect-loop": ["/p-loop-b", "/p-redirect-loop"],
}
NOT_LISTED = {
    "/p-not-in-sitemap",
    "/p-noindex-page",
    "/p-canonical-mismatch",
    "/p-canonical-to-non-200",
    "/p-canonical-external",
    "/p-missing-page",
    "/p-server-error",
    "/p-blocked-by-robots",
    *REDIRECTED,
}
ROBOTS = (
    "User-agent: GPTBot\nDisallow: /\n\nUser-agent: OAI-SearchBot\nDisallow: /\n\n"
    "User-agent: *\nDisallow: /p-blocked\n\n"
)
GOOD_LLMS = "# Garden shop\n\n> Tools for every season.\n\n## Shop\n\n- [Home]({root}/): Home\n"
BAD_LLMS = "Garden shop\n\nTools for every season.\n"
SLOW_SECONDS = 1.2  # over slow_ttfb's default of 800 ms

# check id -> the paths it must report.
PLANTED: dict[str, set[str]] = {
    "http_4xx": {"/p-missing-page", "/p-sitemap-gone"},  # one linked, one in a sitemap only
    "http_5xx": {"/p-server-error"},
    "internal_redirect": {"/p-redirect-once"},
    "redirect_chain": {"/p-redirect-chain"},
    "redirect_loop": {"/p-redirect-loop"},
    "blocked_by_robots": {"/p-blocked-by-robots"},
    "sitemap_invalid": {"/sitemap-broken.xml"},
    "sitemap_contains_bad_urls": {"/p-sitemap-gone"},
    "noindex_in_sitemap": {"/p-noindex-in-sitemap"},
    # Reached through redirects only, so no sitemap lists the pages they land on.
    "indexable_not_in_sitemap": {"/p-not-in-sitemap", "/p-redirect-target", "/p-chain-end"},
    "noindex_page": {"/p-noindex-page", "/p-noindex-in-sitemap"},
    "nofollow_page": {"/p-nofollow-page"},
    "canonical_missing": {"/p-canonical-missing"},
    "canonical_mismatch": {"/p-canonical-mismatch"},
    "canonical_to_non_200": {"/p-canonical-to-non-200"},
    "canonical_external": {"/p-canonical-external"},
    "title_missing": {"/p-title-missing"},
    "title_too_long": {"/p-title-too-long"},
    "title_too_short": {"/p-title-too-short"},
    "duplicate_title": {"/p-dup-title-a", "/p-dup-title-b"},
    "meta_description_missing": {"/p-meta-missing"},
    "meta_description_too_long": {"/p-meta-too-long"},
    "meta_description_too_short": {"/p-meta-too-short"},
    "duplicate_meta_description": {"/p-dup-meta-a", "/p-dup-meta-b"},
    "h1_missing": {"/p-h1-missing"},
    "multiple_h1": {"/p-multiple-h1"},
    "viewport_missing": {"/p-viewport-missing"},
    "open_graph_missing": {"/p-og-missing"},
    "open_graph_incomplete": {"/p-og-incomplete"},
    "twitter_card_missing": {"/p-twitter-missing"},
    "thin_content": {"/p-thin-content"},
    "duplicate_content": {"/p-dup-content-a", "/p-dup-content-b"},
    # The 404 and the 500 are linked from the home page: broken links by nature.
    "broken_internal_link": {"/p-missing-page", "/p-server-error"},
    "orphan_page": {"/p-orphan-page"},
    "deep_page": {"/p-deep-5"},
    "no_outgoing_links": {"/p-no-outlinks"},
    "nofollow_internal_links": {"/p-nofollow-links"},
    "image_missing_alt": {"/p-image-missing-alt"},
    "image_alt_too_long": {"/p-image-alt-long"},
    "invalid_json_ld": {"/p-invalid-json-ld"},
    "json_ld_missing_type": {"/p-json-ld-no-type"},
    "structured_data_missing": {"/p-no-structured-data"},
    "hreflang_missing_return_link": {"/p-hreflang-a"},
    "hreflang_to_non_200": {"/p-hreflang-non-200"},
    "hreflang_invalid_code": {"/p-hreflang-bad-code"},
    "html_lang_missing": {"/p-lang-missing"},
    "slow_ttfb": {"/p-slow-ttfb"},
    "page_too_large": {"/p-page-too-large"},
    "x_content_type_options_missing": {"/p-no-content-type-options"},
    "clickjacking_protection_missing": {"/p-no-frame-options"},
    "csp_missing": {"/p-no-csp"},
    "ai_search_crawler_blocked": {"/robots.txt"},
    "ai_training_crawler_blocked": {"/robots.txt"},
    "llms_txt_invalid": {"/llms.txt"},
    # A crawl gives no Core Web Vitals: PageSpeed results are planted for these (VITALS).
    "lcp_poor": {"/p-slow-ttfb"},
    "inp_poor": {"/p-slow-ttfb"},
    "cls_poor": {"/p-page-too-large"},
}
# The URL's own field data (Chrome UX Report, 75th percentile) the test plants as PageSpeed
# results: past Google's "poor" lines (LCP 4 s, INP 500 ms, CLS 0.25) where PLANTED says so.
VITALS = {
    "/p-slow-ttfb": {"lcp_ms": 5200, "inp_ms": 640, "cls": 0.05},
    "/p-page-too-large": {"lcp_ms": 1800, "inp_ms": 120, "cls": 0.31},
}
# Checks the loopback site cannot plant, and why (http_not_https is asserted on its own: the
# site is plain http, so every analysed URL has it).
# Each is found instead on planted scans: test_audits.py
# test_what_the_loopback_site_cannot_plant_is_found_on_planted_scans.
NOT_PLANTED = {
    "fetch_failed": "a URL that gives no answer at all would stall the crawl's retries",
    "mixed_content": "only an https page can load http resources; the loopback site is http",
    "hsts_missing": "HSTS applies to https pages only; the loopback site is http",
    "robots_txt_missing": "the site's one robots.txt is planted to block AI crawlers",
    "robots_txt_unreachable": "the site's one robots.txt is planted to block AI crawlers",
    "sitemap_missing": "the site's sitemaps are planted (one valid, one broken)",
    "llms_txt_missing": "the site's one llms.txt is planted invalid",
    "http_not_https": "every URL of the http loopback site has it (asserted separately)",
}
# What the test fixes before the second crawl.
FIXED = ("title_missing", "h1_missing", "llms_txt_invalid")


def _text(seed: str, words: int = 140) -> str:
    chosen = random.Random(seed).choices(_WORDS, k=words)
    return f"<p>{seed.strip('/').replace('-', ' ')} " + " ".join(chosen) + ".</p>"


class AuditSite(LoopbackServer):
    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.fixed: set[str] = set()
        self.lock = threading.Lock()

    def fix(self, check_id: str) -> None:
        with self.lock:
            self.fixed.add(check_id)

    def planted(self, check_id: str) -> bool:
        with self.lock:
            return check_id not in self.fixed

    # --- the pages ---------------------------------------------------------------------------

    def page(self, path: str) -> tuple[int, dict[str, str], bytes]:
        url = self.url + path
        slug = path.strip("/").replace("p-", "", 1) or "home"
        title = f"Garden shop: a careful guide to {slug}"
        description = (
            f"Everything about {slug} at the garden shop: tools, seeds and advice for careful "
            "growers all year round."
        )
        h1s = [f"All about {slug}"]
        canonical: str | None = url
        lang: str | None = "en"
        head: list[str] = ['<meta name="viewport" content="width=device-width, initial-scale=1">']
        og = {"og:title": title, "og:type": "article", "og:image": f"{self.url}/img/og.png"}
        og["og:url"] = url
        twitter = True
        json_ld: list[str] = [json.dumps({"@context": "https://schema.org", "@type": "WebPage"})]
        images = [(f"/img/{slug}.png", f"A picture of {slug}")]
        body = _text(path)
        links = ['<a href="/">Home</a>']
        headers = dict(HEADERS)
        hreflang: dict[str, str] = {}
        if path == "/":
            title = "Garden shop: tools and seeds for every season"
            links = [f'<a href="{target}">{target}</a>' for target in LINKED]
        planted = self.planted
        if path == "/p-title-missing" and planted("title_missing"):
            title = ""
        if path == "/p-title-too-long":
            title = "Garden shop guide to every tool, seed and bulb we sell, season after season"
        if path == "/p-title-too-short":
            title = "Short"
        if path in ("/p-dup-title-a", "/p-dup-title-b"):
            title = "Garden shop guide to the same thing twice"
        if path == "/p-meta-missing":
            description = ""
        if path == "/p-meta-too-long":
            description = "Tools and seeds for careful growers. " * 6
        if path == "/p-meta-too-short":
            description = "Tools and seeds."
        if path in ("/p-dup-meta-a", "/p-dup-meta-b"):
            description = (
                "The same description twice, for tools and seeds and careful growers alike."
            )
        if path == "/p-h1-missing" and planted("h1_missing"):
            h1s = []
        if path == "/p-multiple-h1":
            h1s = ["One heading", "Another heading"]
        if path == "/p-viewport-missing":
            head = []
        if path == "/p-og-missing":
            og = {}
        if path == "/p-og-incomplete":
            og = {"og:title": title}
        if path == "/p-twitter-missing":
            twitter = False
        if path == "/p-thin-content":
            body = "<p>Too few words on this page.</p>"
        if path in ("/p-dup-content-a", "/p-dup-content-b"):
            body = _text("the same text on two pages")
            h1s, images = ["The same text"], [("/img/same.png", "The same picture")]
        if path == "/p-noindex-page" or path == "/p-noindex-in-sitemap":
            head.append('<meta name="robots" content="noindex">')
        if path == "/p-nofollow-page":
            head.append('<meta name="robots" content="nofollow">')
        if path == "/p-canonical-missing":
            canonical = None
        if path == "/p-canonical-mismatch":
            canonical = self.url + "/p-canonical-target"
        if path == "/p-canonical-to-non-200":
            canonical = self.url + "/p-missing-page"
        if path == "/p-canonical-external":
            canonical = "https://elsewhere.example/original"
        if path == "/p-no-outlinks":
            links = []
        if path == "/p-nofollow-links":
            links = ['<a href="/" rel="nofollow">Home</a>']
        if path.startswith("/p-deep-") and path != DEEP[-1]:
            links.append(f'<a href="{DEEP[DEEP.index(path) + 1]}">Deeper</a>')
        if path == "/p-image-missing-alt":
            images = [("/img/no-alt.png", None)]  # type: ignore[list-item]
        if path == "/p-image-alt-long":
            images = [("/img/long-alt.png", "A very long description of a garden " * 6)]
        if path == "/p-invalid-json-ld":
            json_ld = ['{"@type": "WebPage",']
        if path == "/p-json-ld-no-type":
            json_ld = [json.dumps({"@context": "https://schema.org", "name": "Untyped"})]
        if path == "/p-no-structured-data":
            json_ld = []
        if path == "/p-hreflang-a":
            hreflang = {"en": url, "de": self.url + "/p-hreflang-b"}
        if path == "/p-hreflang-non-200":
            hreflang = {"en": url, "de": self.url + "/p-missing-page"}
        if path == "/p-hreflang-bad-code":
            hreflang = {"english": url}
        if path == "/p-lang-missing":
            lang = None
        if path == "/p-page-too-large":
            body += "<!-- " + "x" * 80_000 + " -->"
        if path == "/p-no-content-type-options":
            del headers["x-content-type-options"]
        if path == "/p-no-frame-options":
            del headers["x-frame-options"]
        if path == "/p-no-csp":
            del headers["content-security-policy"]

        head += [f'<meta property="{key}" content="{html.escape(v)}">' for key, v in og.items()]
        if twitter:
            head.append('<meta name="twitter:card" content="summary_large_image">')
        if title:
            head.append(f"<title>{html.escape(title)}</title>")
        if description:
            head.append(f'<meta name="description" content="{html.escape(description)}">')
        if canonical:
            head.append(f'<link rel="canonical" href="{canonical}">')
        head += [f'<link rel="alternate" hreflang="{k}" href="{v}">' for k, v in hreflang.items()]
        head += [f'<script type="application/ld+json">{block}</script>' for block in json_ld]
        pictures = "".join(
            f'<img src="{src}">' if alt is None else f'<img src="{src}" alt="{html.escape(alt)}">'
            for src, alt in images
        )
        headings = "".join(f"<h1>{html.escape(text)}</h1>" for text in h1s)
        lang_attribute = f' lang="{lang}"' if lang else ""
        document = (
            f"<!doctype html><html{lang_attribute}><head>{''.join(head)}</head><body><main>"
            f"<article>{headings}{body}{pictures}<nav>{' '.join(links)}</nav></article>"
            "</main></body></html>"
        )
        return 200, headers, document.encode()

    def sitemap(self) -> bytes:
        listed = [
            path for path in ["/", *LINKED, *DEEP[1:], *SITEMAP_ONLY] if path not in NOT_LISTED
        ]
        urls = "".join(f"<url><loc>{self.url}{path}</loc></url>" for path in listed)
        namespace = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        return f'<?xml version="1.0"?><urlset {namespace}>{urls}</urlset>'.encode()

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        if path == "/robots.txt":
            robots = (
                ROBOTS
                + f"Sitemap: {self.url}/sitemap.xml\nSitemap: {self.url}/sitemap-broken.xml\n"
            )
            send(request, 200, {}, robots.encode(), content_type="text/plain")
        elif path == "/llms.txt":
            text = BAD_LLMS if self.planted("llms_txt_invalid") else GOOD_LLMS.format(root=self.url)
            send(request, 200, {}, text.encode(), content_type="text/plain")
        elif path == "/sitemap.xml":
            send(request, 200, {}, self.sitemap(), content_type="application/xml")
        elif path == "/sitemap-broken.xml":
            send(request, 200, {}, b"<urlset><url><loc>", content_type="application/xml")
        elif path in ("/p-missing-page", "/p-sitemap-gone"):
            status = 404 if path == "/p-missing-page" else 410
            send(request, status, {}, b"<html><body>Gone</body></html>", content_type=HTML)
        elif path == "/p-server-error":
            send(request, 500, {}, b"<html><body>Oops</body></html>", content_type=HTML)
        elif path in REDIRECTED or path in ("/p-chain-hop", "/p-loop-b"):
            hops = {
                "/p-redirect-once": "/p-redirect-target",
                "/p-redirect-chain": "/p-chain-hop",
                "/p-chain-hop": "/p-chain-end",
                "/p-redirect-loop": "/p-loop-b",
                "/p-loop-b": "/p-redirect-loop",
            }
            send(request, 301, {"location": hops[path]}, b"", content_type=HTML)
        elif path.startswith("/img/"):
            send(request, 200, {}, b"\x89PNG", content_type="image/png")
        else:
            if path == "/p-slow-ttfb":
                time.sleep(SLOW_SECONDS)  # the server answers late: what slow_ttfb measures
            status, headers, body = self.page(path)
            send(request, status, headers, body, content_type=HTML)

    def expected(self) -> dict[str, set[str]]:
        """PLANTED as absolute URLs."""
        return {check: {self.url + path for path in paths} for check, paths in PLANTED.items()}


def urls_of(found: list[dict[str, Any]]) -> set[str]:
    return {row["url"] for row in found}
