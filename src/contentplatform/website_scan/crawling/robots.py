"""robots.txt (RFC 9309) read with protego: may we fetch a URL, the Crawl-delay, the Sitemaps.

Missing or 4xx: everything allowed. 5xx or unreachable: everything disallowed for now (the RFC's
"complete disallow"), with `retry` set so a later run tries again. Capped at 500 KiB, the
size the RFC says a crawler must at least parse; the rest is cut off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from protego import Protego

from contentplatform.website_scan.crawling.fetching import Fetcher

MAX_ROBOTS_BYTES = 500 * 1024
# A Disallow line that disallows something (an empty value allows all, RFC 9309 2.2.2).
_DISALLOW = re.compile(r"^[ \t]*disallow[ \t]*:[ \t]*[^\s#]", re.IGNORECASE | re.MULTILINE)


@dataclass
class Robots:
    found: bool = False
    disallow_all: bool = False
    retry: bool = False
    parser: Protego | None = None
    sitemaps: list[str] = field(default_factory=list)
    disallow_count: int = 0  # Disallow rules of every group (a summary for people)
    problem: str | None = None  # why it could not be read (then `disallow_all`)
    status: int | None = None  # the HTTP status robots.txt answered (None: no answer)
    body: str | None = None  # its text when found (at most MAX_ROBOTS_BYTES), for the audits

    def allowed(self, url: str, agent: str) -> bool:
        if self.disallow_all:
            return False
        return self.parser is None or bool(self.parser.can_fetch(url, agent))

    def crawl_delay(self, agent: str) -> float | None:
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(agent)
        return None if delay is None else float(delay)


def parse(text: str, status: int | None = 200) -> Robots:
    parser = Protego.parse(text)
    return Robots(
        found=True,
        parser=parser,
        sitemaps=list(parser.sitemaps),
        disallow_count=len(_DISALLOW.findall(text)),
        status=status,
        body=text,
    )


async def load(fetcher: Fetcher, origin: str) -> Robots:
    """The robots.txt of `origin` ("https://host[:port]")."""
    fetched = await fetcher.fetch(origin.rstrip("/") + "/robots.txt")
    # Unreachable (or too large, a loop): like a 5xx, the site's wishes are unknown.
    if fetched.status is None or fetched.status >= 500:
        problem = fetched.error or f"HTTP {fetched.status}"
        return Robots(disallow_all=True, retry=True, problem=problem, status=fetched.status)
    if fetched.status >= 400 or fetched.error is not None:
        return Robots(status=fetched.status)
    text = fetched.body[:MAX_ROBOTS_BYTES].decode("utf-8", errors="replace")
    return parse(text, fetched.status)
