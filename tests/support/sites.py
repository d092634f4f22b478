"""A small generated website on loopback for the crawler's tests (issue 21).

`TestSite()` serves, at http://127.0.0.1:<port>:
- nested pages /, /docs/, /docs/a, /docs/b, /docs/deep/1 .. linking to each other, with the
  same page also linked as /docs/a?utm_source=x&gclid=1 and /docs/a#top (duplicates);
- robots.txt disallowing /private/ with `Crawl-delay` (small) and a Sitemap line to an index
  whose child is gzip (/sitemaps/pages.xml.gz), listing /only-in-sitemap;
- /moved -> 301 -> /docs/b; /loop-a <-> /loop-b a redirect loop;
- /missing (linked, 404); /flaky: 500 the first time, 200 after;
- /noindex-meta (meta robots) and /noindex-header (X-Robots-Tag);
- /big (20 MB) and /slow (answers after `slow_seconds`);
- hreflang, canonical and JSON-LD on /docs/a.
`requests` records (path, monotonic time) of every request.
"""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.support.servers import LoopbackServer, send

BIG_BYTES = 20 * 1024 * 1024


def _page(title: str, body: str, head: str = "") -> bytes:
    return (
        f'<!doctype html><html lang="en"><head><title>{title}</title>'
        f'<meta name="description" content="About {title}">{head}</head>'
        f"<body><nav><a href='/'>Home</a></nav><main><h1>{title}</h1>{body}"
        f"<p>{title} is a page of the test site with enough words to count as main content "
        "for the extractor, which drops navigation and boilerplate around it.</p></main>"
        "</body></html>"
    ).encode()


class TestSite(LoopbackServer):
    __test__ = False  # not a pytest class

    def __init__(self, *, crawl_delay: float = 0.05, slow_seconds: float = 3.0) -> None:
        super().__init__()
        self.crawl_delay = crawl_delay
        self.slow_seconds = slow_seconds
        self.requests: list[tuple[str, float]] = []
        self.flaky_calls = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def __exit__(self, *exc: object) -> None:
        self.stop.set()  # the slow page stops waiting
        super().__exit__(*exc)

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def pages(self) -> dict[str, tuple[int, dict[str, str], bytes]]:
        u = self.url
        links = (
            "<a href='/docs/'>Docs</a> <a href='/docs/a?utm_source=x&gclid=1'>A again</a>"
            " <a href='/docs/a#top'>A top</a> <a href='/moved'>Moved</a>"
            " <a href='/loop-a'>Loop</a> <a href='/missing'>Missing</a>"
            " <a href='/flaky'>Flaky</a> <a href='/private/secret'>Private</a>"
            " <a href='/noindex-meta'>NI1</a> <a href='/noindex-header'>NI2</a>"
            " <a href='/big'>Big</a> <a href='/slow'>Slow</a>"
            " <a href='https://example.invalid/out' rel='nofollow'>Outside</a>"
        )
        head_a = (
            f'<link rel="canonical" href="{u}/docs/a">'
            f'<link rel="alternate" hreflang="de" href="{u}/de/docs/a">'
            '<script type="application/ld+json">{"@type": "Article", "name": "A"}</script>'
        )
        html = {"content-type": "text/html; charset=utf-8"}
        return {
            "/": (200, html, _page("Home", links)),
            "/docs/": (200, html, _page("Docs", "<a href='a'>A</a> <a href='b'>B</a>")),
            "/docs/a": (200, html, _page("A", "<h2>Part</h2><a href='deep/1'>Deep</a>", head_a)),
            "/docs/b": (200, html, _page("B", "<a href='/docs/'>Up</a>")),
            "/docs/deep/1": (200, html, _page("Deep 1", "<a href='2'>Deeper</a>")),
            "/docs/deep/2": (200, html, _page("Deep 2", "")),
            "/only-in-sitemap": (200, html, _page("Only in sitemap", "")),
            "/private/secret": (200, html, _page("Secret", "")),
            "/noindex-meta": (
                200,
                html,
                _page("NI meta", "", '<meta name="robots" content="noindex, follow">'),
            ),
            "/noindex-header": (200, {**html, "x-robots-tag": "noindex"}, _page("NI header", "")),
            "/moved": (301, {"location": "/docs/b"}, b""),
            "/loop-a": (302, {"location": "/loop-b"}, b""),
            "/loop-b": (302, {"location": "/loop-a"}, b""),
            "/robots.txt": (
                200,
                {"content-type": "text/plain"},
                (
                    "User-agent: *\nDisallow: /private/\n"
                    f"Crawl-delay: {self.crawl_delay}\nSitemap: {u}/sitemap_index.xml\n"
                ).encode(),
            ),
            "/sitemap_index.xml": (
                200,
                {"content-type": "application/xml"},
                (
                    '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/'
                    f'sitemap/0.9"><sitemap><loc>{u}/sitemaps/pages.xml.gz</loc></sitemap>'
                    "</sitemapindex>"
                ).encode(),
            ),
            "/sitemaps/pages.xml.gz": (
                200,
                {"content-type": "application/gzip"},
                gzip.compress(
                    (
                        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
                        f'sitemap/0.9"><url><loc>{u}/only-in-sitemap</loc>'
                        "<lastmod>2026-01-01</lastmod></url>"
                        f"<url><loc>{u}/docs/b</loc></url></urlset>"
                    ).encode()
                ),
            ),
        }

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        with self.lock:
            self.requests.append((path, time.monotonic()))
        if path == "/flaky":
            with self.lock:
                self.flaky_calls += 1
                first = self.flaky_calls == 1
            if first:
                send(request, 500, {}, b"oops", content_type="text/plain")
            else:
                send(request, 200, {}, _page("Flaky", ""), content_type="text/html")
            return
        if path == "/slow":
            self.stop.wait(self.slow_seconds)
            send(request, 200, {}, _page("Slow", ""), content_type="text/html")
            return
        if path == "/big":
            self._big(request)
            return
        status, headers, body = self.pages().get(path, (404, {}, b"not found"))
        send(request, status, headers, body, content_type="text/html; charset=utf-8")

    def _big(self, request: BaseHTTPRequestHandler) -> None:
        # Streamed: the crawler must stop reading at its cap, not hold 20 MB.
        try:
            request.send_response(200)
            request.send_header("content-type", "text/html")
            request.send_header("content-length", str(BIG_BYTES))
            request.end_headers()
            chunk = b"<p>" + b"x" * (64 * 1024 - 7) + b"</p>\n"
            for _ in range(BIG_BYTES // len(chunk)):
                request.wfile.write(chunk)
            request.wfile.write(b" " * (BIG_BYTES % len(chunk)))
        except (BrokenPipeError, ConnectionResetError):
            pass
