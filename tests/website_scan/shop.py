"""A small shop website on loopback for the crawl-run tests: `/` links to `/p/1` .. `/p/N`, each
product page links to the next one and to `/gone` (a 404). Between two crawls a test may change
a page's text or remove it; `hold()` makes product pages wait until released, so a test can
catch a crawl while it runs."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler

from tests.support.servers import LoopbackServer, send

HTML = "text/html; charset=utf-8"


class Shop(LoopbackServer):
    __test__ = False

    def __init__(
        self, pages: int = 5, robots_status: int = 200, external: str = "", sitemaps: bool = False
    ) -> None:
        super().__init__()
        # robots.txt declares /sitemap_index.xml, an index of /sitemaps/products.xml listing the
        # products and /gone (not the home page); /llms.txt is served. A test may turn it off.
        self.sitemaps = sitemaps
        # Another site's URL the home page links to (its /p/1 and its /p/999, a 404).
        self.external = external
        self.robots_status = robots_status
        self.count = pages
        self.texts = {
            n: f"Product {n} is a sturdy garden tool made of ash and steel."
            for n in range(1, pages + 1)
        }
        self.removed: set[int] = set()
        self.paths: list[str] = []
        self.lock = threading.Lock()
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Semaphore(0)

    def hold(self) -> None:
        """Product pages wait (each request signals `waiting`) until `release()`."""
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def __exit__(self, *exc: object) -> None:
        self.gate.set()
        super().__exit__(*exc)

    def page(self, title: str, body: str) -> bytes:
        return (
            f'<!doctype html><html lang="en"><head><title>{title}</title>'
            f'<meta name="description" content="About {title}"></head><body><main>'
            f"<h1>{title}</h1>{body}</main></body></html>"
        ).encode()

    def site_files(self) -> dict[str, tuple[str, bytes]]:
        xml = "application/xml"
        listed = [f"{self.url}/p/{n}" for n in range(1, self.count + 1)] + [f"{self.url}/gone"]
        urls = "".join(f"<url><loc>{url}</loc></url>" for url in listed)
        namespace = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        return {
            "/sitemap_index.xml": (
                xml,
                f'<?xml version="1.0"?><sitemapindex {namespace}><sitemap>'
                f"<loc>{self.url}/sitemaps/products.xml</loc></sitemap></sitemapindex>".encode(),
            ),
            "/sitemaps/products.xml": (
                xml,
                f'<?xml version="1.0"?><urlset {namespace}>{urls}</urlset>'.encode(),
            ),
            "/llms.txt": ("text/plain", b"# Garden shop\n\n> Tools for every season.\n"),
        }

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        with self.lock:
            self.paths.append(path)
        if path == "/robots.txt":
            robots = b"User-agent: *\nAllow: /\n"
            if self.sitemaps:
                robots += f"Sitemap: {self.url}/sitemap_index.xml\n".encode()
            send(request, self.robots_status, {}, robots, content_type="text/plain")
            return
        if self.sitemaps and path in self.site_files():
            kind, body = self.site_files()[path]
            send(request, 200, {}, body, content_type=kind)
            return
        if path == "/":
            links = " ".join(f"<a href='/p/{n}'>Product {n}</a>" for n in range(1, self.count + 1))
            if self.external:
                links += (
                    f" <a href='{self.external}/p/1'>Partner</a>"
                    f" <a href='{self.external}/p/999'>Old partner</a>"
                )
            body = f"<p>Welcome to the garden shop, with tools for every season.</p>{links}"
            send(request, 200, {}, self.page("Garden shop", body), content_type=HTML)
            return
        if path.startswith("/p/") and path[3:].isdigit():
            number = int(path[3:])
            if not self.gate.is_set():
                self.waiting.release()
                self.gate.wait(30)
            if number in self.texts and number not in self.removed:
                body = (
                    f"<p>{self.texts[number]}</p><a href='/p/{number + 1}'>Next</a> "
                    "<a href='/gone'>Old catalogue</a>"
                )
                send(request, 200, {}, self.page(f"Product {number}", body), content_type=HTML)
                return
        send(request, 404, {}, self.page("Not found", "<p>Nothing here.</p>"), content_type=HTML)
