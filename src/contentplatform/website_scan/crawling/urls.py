"""URL normalization, so that one page is one row, and the crawl's scope checks.

Normalized form: scheme and host lowercased, the default port dropped, the fragment dropped,
tracking parameters (utm_*, gclid, fbclid, ...) dropped, the query sorted, an empty path made
"/". Trailing slashes are KEPT as given ("/a" and "/a/" stay two URLs): servers may answer them
differently, and when a site redirects one to the other the redirect's target is what is stored
(the final URL), so duplicates still collapse there. Diffs and the seen-set use this form.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import regex
from courlan import normalize_url

# courlan drops its own list of trackers; these are named here too, so the rule does not move
# with the library's version.
_TRACKING = re.compile(
    r"^(utm_[a-z_]+|gclid|gclsrc|dclid|fbclid|msclkid|mc_cid|mc_eid|yclid|_ga|_gl|igshid|ref_src)$",
    re.IGNORECASE,
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
# A URL longer than this is no page of a site we would store (and a trap for crawlers).
MAX_URL_LENGTH = 2048
PATTERN_TIMEOUT_SECONDS = 0.05


def normalize(url: str, base: str | None = None) -> str | None:
    """The normalized absolute form of `url` (resolved against `base`), or None when it is no
    crawlable http(s) URL (mailto:, javascript:, too long, no host)."""
    try:
        absolute = urljoin(base, url.strip()) if base else url.strip()
        parts = urlsplit(absolute)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or len(absolute) > MAX_URL_LENGTH:
        return None
    host = parts.hostname.lower().rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    query = sorted(
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _TRACKING.match(k)
    )
    cleaned = urlunsplit((scheme, netloc, parts.path or "/", urlencode(query), ""))
    try:
        # courlan: percent-encoding made canonical and its own tracker list.
        return str(normalize_url(cleaned, strict=False))
    except ValueError:
        return None


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def same_site(url: str, start: str, *, allow_subdomains: bool = False) -> bool:
    """Whether `url` belongs to the site of `start`: the same scheme-less host (and port), or a
    subdomain of it when allowed."""
    a, b = urlsplit(url), urlsplit(start)
    if (a.port or _DEFAULT_PORTS.get(a.scheme)) != (b.port or _DEFAULT_PORTS.get(b.scheme)):
        return False
    host, site = host_of(url), host_of(start)
    return host == site or (allow_subdomains and host.endswith("." + site))


@dataclass(frozen=True)
class PathFilter:
    """Include/exclude regexes over the URL path (and query): exclude wins; no include means
    all. Matched with the `regex` package under a timeout, so a pathological pattern cannot hang
    a crawl: when a match times out the URL is skipped (whether it was meant to be in is
    unknowable, and skipping is the safe side)."""

    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    _include: list[regex.Pattern[str]] = field(default_factory=list, repr=False)
    _exclude: list[regex.Pattern[str]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # Compiled once; an invalid pattern raises regex.error here (the config checks first).
        self._include.extend(regex.compile(p) for p in self.include)
        self._exclude.extend(regex.compile(p) for p in self.exclude)

    def allows(self, url: str) -> bool:
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            if any(_search(p, target) for p in self._exclude):
                return False
            return not self._include or any(_search(p, target) for p in self._include)
        except TimeoutError:
            return False


def _search(pattern: regex.Pattern[str], text: str) -> bool:
    return pattern.search(text, timeout=PATTERN_TIMEOUT_SECONDS) is not None


def url_hash(url: str) -> str:
    """The key a (normalized) URL is stored and looked up by: its SHA-256, in hex."""
    return hashlib.sha256(url.encode()).hexdigest()
