"""Generated websites on loopback for the crawler's tests, its benchmark and trying it by hand
(issue 21).

`TestSite()` serves, at http://127.0.0.1:<port>:
- nested pages /, /docs/, /docs/a, /docs/b, /docs/deep/1 .. linking to each other, with the
  same page also linked as /docs/a?utm_source=x&gclid=1 and /docs/a#top (duplicates);
- robots.txt disallowing /private/ with `Crawl-delay` (small) and a Sitemap line to an index
  whose child is gzip (/sitemaps/pages.xml.gz), listing /only-in-sitemap (with a lastmod),
  /docs/b and a page on the subdomain blog.<host>; with `sitemap="conventional"` robots.txt
  names none and the index is at /sitemap.xml, with `sitemap="none"` there is none at all;
- /moved -> 301 -> /docs/b; /loop-a <-> /loop-b a redirect loop;
- /missing (linked, 404); /flaky: 500 the first time, 200 after;
- /noindex-meta (meta robots) and /noindex-header (X-Robots-Tag);
- /big (20 MB) and /slow (answers after `slow_seconds`);
- hreflang, canonical and JSON-LD on /docs/a;
- /to-private -> 301 -> /private/secret (a redirect robots.txt disallows);
- a link to `external` (another site's URL: /docs/a there answers 200, /gone 404) in place of
  the one to https://example.invalid/out, when given;
- every page after `page_delay` seconds (0: at once), to keep fetches in flight.
Its own URLs are written with the host the request named (127.0.0.1:<port> or localhost:<port>).
`requests` records (path, monotonic time) of every request, `methods` its (method, path) and
`most_at_once` the most requests it was answering at the same moment. HEAD is answered too.

`GeneratedSite(pages=N)` serves N nested pages with robots.txt and a sitemap index; between two
crawls, `change(5)` rewrites five pages and `remove(1)` takes one away (bench/site.py serves it
by hand).
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.servers import LoopbackServer, send

BIG_BYTES = 20 * 1024 * 1024
HTML = "text/html; charset=utf-8"


def _answer_head_too(server: LoopbackServer) -> None:
    """LoopbackServer answers GET, POST, ...: its handler class (one per server) serves HEAD
    through `serve` as well."""
    handler: Any = server.httpd.RequestHandlerClass
    handler.do_HEAD = handler.do_GET


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

    def __init__(
        self,
        *,
        crawl_delay: float | None = 0.05,
        slow_seconds: float = 3.0,
        page_delay: float = 0.0,
        external: str | None = None,
        sitemap: str = "robots",
    ) -> None:
        if sitemap not in ("robots", "conventional", "none"):
            raise ValueError(f"no sitemap mode {sitemap!r}")
        super().__init__()
        _answer_head_too(self)
        self.sitemap = sitemap
        self.crawl_delay = crawl_delay
        self.slow_seconds = slow_seconds
        self.page_delay = page_delay
        self.external = external
        self.requests: list[tuple[str, float]] = []
        self.methods: list[tuple[str, str]] = []
        self.in_flight = 0
        self.most_at_once = 0
        self.flaky_calls = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def __exit__(self, *exc: object) -> None:
        self.stop.set()  # the slow page stops waiting
        super().__exit__(*exc)

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def pages(self, base: str | None = None) -> dict[str, tuple[int, dict[str, str], bytes]]:
        """Every fixed answer by path; its own URLs start with `base` (default: `url`)."""
        u = base or self.url
        sub = u.replace("://", "://blog.", 1)
        links = (
            "<a href='/docs/'>Docs</a> <a href='/docs/a?utm_source=x&gclid=1'>A again</a>"
            " <a href='/docs/a#top'>A top</a> <a href='/moved'>Moved</a>"
            " <a href='/loop-a'>Loop</a> <a href='/missing'>Missing</a>"
            " <a href='/flaky'>Flaky</a> <a href='/private/secret'>Private</a>"
            " <a href='/noindex-meta'>NI1</a> <a href='/noindex-header'>NI2</a>"
            " <a href='/big'>Big</a> <a href='/slow'>Slow</a>"
            " <a href='/to-private'>To private</a>"
        )
        if self.external is None:
            links += " <a href='https://example.invalid/out' rel='nofollow'>Outside</a>"
        else:
            links += (
                f" <a href='{self.external}/docs/a'>Elsewhere</a>"
                f" <a href='{self.external}/gone'>Gone elsewhere</a>"
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
            "/to-private": (301, {"location": "/private/secret"}, b""),
            "/robots.txt": (
                200,
                {"content-type": "text/plain"},
                (
                    "User-agent: *\nDisallow: /private/\n"
                    + (f"Crawl-delay: {self.crawl_delay}\n" if self.crawl_delay else "")
                    + (f"Sitemap: {u}/sitemap_index.xml\n" if self.sitemap == "robots" else "")
                ).encode(),
            ),
            **self._sitemap_files(u, sub),
        }

    def _sitemap_files(self, u: str, sub: str) -> dict[str, tuple[int, dict[str, str], bytes]]:
        if self.sitemap == "none":
            return {}
        index = "/sitemap_index.xml" if self.sitemap == "robots" else "/sitemap.xml"
        urlset = (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{u}/only-in-sitemap</loc><lastmod>2026-01-01</lastmod></url>"
            f"<url><loc>{u}/docs/b</loc></url>"
            f"<url><loc>{sub}/from-a-subdomain</loc></url></urlset>"
        )
        return {
            index: (
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
                gzip.compress(urlset.encode()),
            ),
        }

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        with self.lock:
            self.requests.append((path, time.monotonic()))
            self.methods.append((request.command, path))
            self.in_flight += 1
            self.most_at_once = max(self.most_at_once, self.in_flight)
        self._serve(request, path)

    def _reply(
        self,
        request: BaseHTTPRequestHandler,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        content_type: str = "text/html; charset=utf-8",
    ) -> None:
        # No longer in flight from before the answer goes out: a client waiting for it sends
        # its next request only after, so one at a time never counts two.
        with self.lock:
            self.in_flight -= 1
        send(request, status, headers, body, content_type=content_type)

    def _serve(self, request: BaseHTTPRequestHandler, path: str) -> None:
        if self.page_delay and not path.startswith(("/robots.txt", "/sitemap")):
            self.stop.wait(self.page_delay)
        if path == "/flaky":
            with self.lock:
                self.flaky_calls += 1
                first = self.flaky_calls == 1
            if first:
                self._reply(request, 500, {}, b"oops", content_type="text/plain")
            else:
                self._reply(request, 200, {}, _page("Flaky", ""))
            return
        if path == "/slow":
            self.stop.wait(self.slow_seconds)
            self._reply(request, 200, {}, _page("Slow", ""))
            return
        if path == "/big":
            with self.lock:
                self.in_flight -= 1
            self._big(request)
            return
        host = request.headers.get("host")
        answers = self.pages(f"http://{host}" if host else None)
        status, headers, body = answers.get(path, (404, {}, b"not found"))
        self._reply(request, status, headers, body)

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


# Words the generated pages' prose is drawn from: plain text the extractor keeps as content.
_WORDS = (
    "garden soil compost seed bed water light shade root leaf stem flower fruit harvest season "
    "spring summer autumn winter frost mulch prune plant grow tomato bean pea lettuce carrot "
    "onion garlic herb basil thyme mint sage rosemary bee worm bird path fence gate shed tool "
    "spade fork rake hoe barrow hose can glove pot tray label weed pest slug snail aphid "
    "netting cover cloche greenhouse window sill balcony yard plot allotment neighbour crop "
    "rotation manure leafmould bark chip gravel stone brick edge border lawn meadow hedge tree "
    "shrub climber bulb tuber cutting division graft sow thin transplant stake tie feed "
    "morning evening week month year early late warm cool dry damp sunny cloudy windy calm"
)
_VOCABULARY = _WORDS.split()


class GeneratedSite(LoopbackServer):
    """`pages` nested pages: page 0 is /, page i (> 0) hangs under page (i - 1) // fanout at
    <its parent's path>p<i>/ (/p1/, /p1/p11/, ...). Each links home, to the top sections, up
    its breadcrumb, to its children and to its neighbours, around a few paragraphs of prose
    (about 3 KB of HTML). robots.txt names a sitemap index whose gzip children list every page
    (1,000 each) with its lastmod.

    Between two crawls: `change(n)` rewrites n pages (new text, a newer lastmod), `remove(n)`
    takes n leaf pages away (404, and gone from their parent's links and the sitemap). With
    `admin`, `POST /__change?pages=5&remove=1` does both and answers what it did."""

    __test__ = False

    def __init__(
        self,
        pages: int = 200,
        *,
        fanout: int = 10,
        crawl_delay: float | None = None,
        admin: bool = False,
        port: int = 0,
    ) -> None:
        if pages < 1 or fanout < 1:
            raise ValueError("a site has at least one page, each with at least one child")
        super().__init__()
        if port:
            self._rebind(port)
        _answer_head_too(self)
        self.count, self.fanout = pages, fanout
        self.crawl_delay = crawl_delay
        self.admin = admin
        self.lock = threading.Lock()
        self.versions = [0] * pages
        self.removed: set[int] = set()
        self.requests = 0
        self.index = {self.path_of(i): i for i in range(pages)}
        self._cache: dict[str, bytes] = {}
        self.born = datetime(2026, 1, 1, tzinfo=UTC)

    def _rebind(self, port: int) -> None:
        """Listen on `port` instead of a free one (a URL that stays the same across runs)."""
        handler = self.httpd.RequestHandlerClass
        self.httpd.server_close()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.url = f"http://127.0.0.1:{port}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # --- the structure ------------------------------------------------------------------------

    def path_of(self, page: int) -> str:
        chain = []
        while page > 0:
            chain.append(page)
            page = (page - 1) // self.fanout
        return "/" + "".join(f"p{k}/" for k in reversed(chain))

    def urls(self) -> list[str]:
        """Every live page's URL, in page order."""
        return [self.url + self.path_of(i) for i in range(self.count) if i not in self.removed]

    def _children(self, page: int) -> list[int]:
        first = self.fanout * page + 1
        return [
            child
            for child in range(first, min(first + self.fanout, self.count))
            if child not in self.removed
        ]

    def lastmod(self, page: int) -> str:
        moment = self.born + timedelta(minutes=page, days=30 * self.versions[page])
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    # --- changes between crawls -----------------------------------------------------------------

    def change(self, count: int = 5) -> list[str]:
        """Rewrite `count` live pages, spread over the site: their paths."""
        with self.lock:
            live = [i for i in range(1, self.count) if i not in self.removed] or [0]
            step = max(1, len(live) // (count + 1))
            chosen = live[step - 1 :: step][:count]
            for page in chosen:
                self.versions[page] += 1
            self._cache.clear()
        return [self.path_of(page) for page in chosen]

    def remove(self, count: int = 1) -> list[str]:
        """Take `count` leaf pages away, the last ones first: their paths."""
        with self.lock:
            chosen: list[int] = []
            for page in range(self.count - 1, 0, -1):
                if len(chosen) == count:
                    break
                if page not in self.removed and not self._children(page):
                    self.removed.add(page)
                    chosen.append(page)
            self._cache.clear()
        return [self.path_of(page) for page in chosen]

    # --- answers --------------------------------------------------------------------------------

    def html(self, page: int) -> bytes:
        """The page as served now."""
        key = f"page:{page}"
        with self.lock:
            cached = self._cache.get(key)
            version = self.versions[page]
            parent = (page - 1) // self.fanout if page else None
            siblings = self._children(parent) if parent is not None else []
            children = self._children(page)
            top = self._children(0)
        if cached is not None:
            return cached
        words = _prose(page, version)
        title = f"{words[0].title()} {words[1]} {page}"
        link = self.path_of
        nav = " ".join(f"<a href='{link(i)}'>Section {i}</a>" for i in top)
        crumbs, up = [], page
        while up:
            up = (up - 1) // self.fanout
            crumbs.append(f"<a href='{link(up)}'>Page {up}</a>")
        paragraphs = "".join(
            f"<p>{' '.join(words[start : start + 60])}.</p>" for start in range(0, 360, 60)
        )
        below = "".join(f"<li><a href='{link(i)}'>Page {i}</a></li>" for i in children)
        place = siblings.index(page) if page in siblings else -1
        neighbours = [siblings[j] for j in (place - 1, place + 1) if 0 <= j < len(siblings)]
        beside = " ".join(f"<a href='{link(i)}'>Page {i}</a>" for i in neighbours if i != page)
        body = (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f'<meta name="description" content="{" ".join(words[2:20])}">'
            f'<link rel="canonical" href="{self.url}{link(page)}"></head><body>'
            f"<header><a href='/'>Home</a> <nav>{nav}</nav></header>"
            f"<nav class='crumbs'>{' / '.join(reversed(crumbs))}</nav>"
            f"<main><article><h1>{title}</h1>{paragraphs}"
            f"<h2>Further</h2><ul>{below}</ul></article></main>"
            f"<aside>{beside}</aside><footer><p>A generated garden site, page {page} "
            f"(version {version}).</p></footer></body></html>"
        ).encode()
        with self.lock:
            if self.versions[page] == version:
                self._cache[key] = body
        return body

    def _sitemap(self, path: str) -> bytes | None:
        live = self.urls()
        chunks = [live[start : start + 1000] for start in range(0, len(live), 1000)]
        namespace = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        if path == "/sitemap_index.xml":
            entries = "".join(
                f"<sitemap><loc>{self.url}/sitemaps/pages-{k}.xml.gz</loc></sitemap>"
                for k in range(len(chunks))
            )
            return (
                f'<?xml version="1.0"?><sitemapindex {namespace}>{entries}</sitemapindex>'.encode()
            )
        name = path.removeprefix("/sitemaps/pages-").removesuffix(".xml.gz")
        if not name.isdigit() or int(name) >= len(chunks):
            return None
        entries = "".join(
            f"<url><loc>{url}</loc><lastmod>{self.lastmod(self.index[url[len(self.url) :]])}"
            "</lastmod></url>"
            for url in chunks[int(name)]
        )
        xml = f'<?xml version="1.0"?><urlset {namespace}>{entries}</urlset>'
        return gzip.compress(xml.encode(), compresslevel=1)

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        path = parts.path
        with self.lock:
            self.requests += 1
        if self.admin and path == "/__change" and request.command == "POST":
            query = parse_qs(parts.query)
            done = {
                "changed": self.change(int(query.get("pages", ["5"])[0])),
                "removed": self.remove(int(query.get("remove", ["1"])[0])),
            }
            send(request, 200, {}, json.dumps(done).encode(), content_type="application/json")
            return
        if path == "/robots.txt":
            delay = "" if self.crawl_delay is None else f"Crawl-delay: {self.crawl_delay}\n"
            text = f"User-agent: *\nDisallow: /private/\n{delay}"
            text += f"Sitemap: {self.url}/sitemap_index.xml\n"
            send(request, 200, {}, text.encode(), content_type="text/plain")
            return
        if path == "/sitemap_index.xml" or path.startswith("/sitemaps/"):
            xml = self._sitemap(path)
            if xml is not None:
                send(request, 200, {}, xml, content_type="application/xml")
                return
        page = self.index.get(path)
        if page is None or page in self.removed:
            send(request, 404, {}, b"<!doctype html><title>Not found</title>", content_type=HTML)
            return
        send(request, 200, {}, self.html(page), content_type=HTML)


def _prose(page: int, version: int) -> list[str]:
    """360 words of the page's text at this version: the same every time it is asked."""
    state = (page * 7919 + version * 104729 + 1) & 0xFFFFFFFF
    words = []
    for _ in range(360):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        words.append(_VOCABULARY[state % len(_VOCABULARY)])
    return words
