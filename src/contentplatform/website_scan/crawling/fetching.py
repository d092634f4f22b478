"""A polite fetcher over the guarded outbound client (kit/outbound.py).

Per host: at most `concurrency` requests at once and at least `interval` seconds between the
starts of two requests (the config's request rate). A robots.txt Crawl-delay is a minimum as the
site sees it: one request at a time, each started at least the delay after the previous one
ended (spacing starts alone let a slow first request arrive late and the next one early).
429/503 are retried after their Retry-After (bounded), else after a doubling backoff. Redirects
are followed here hop by hop, not by the client, so the chain is recorded, loops are caught and
every hop is checked against the SSRF rules again (the client checks each request it sends); a
caller's `follow` check decides too (the crawler's robots.txt and path patterns), so a redirect
to a page the crawl may not fetch is answered as it is, its target never requested.
Responses larger than the cap are cut off and recorded as too large, never held whole.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import httpx

from contentplatform.kit import outbound
from contentplatform.kit.outbound import GuardedClient, Policy
from contentplatform.website_scan.crawling import urls

_REDIRECTS = {301, 302, 303, 307, 308}
_RETRY_STATUSES = {429, 503}
# Longest Retry-After honoured: a site asking for more is treated as failing for this run.
MAX_RETRY_WAIT_SECONDS = 60.0
MAX_REDIRECTS = 10

# Whether a redirect to this (absolute, not normalized) URL may be followed.
HopCheck = Callable[[str], bool]


@dataclass
class Fetched:
    """What one URL gave: the final answer after redirects, or the error that stopped it.
    `error` is one of: dns, timeout, connection, tls, too_large, refused, redirect_loop,
    too_many_redirects (None when an HTTP answer came, whatever its status)."""

    url: str
    final_url: str
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    redirect_chain: list[str] = field(default_factory=list)
    elapsed_ms: int = 0
    first_byte_ms: int = 0  # the final answer's headers, from its request's start
    error: str | None = None
    message: str | None = None
    # The target of a redirect the caller's `follow` check refused: never requested; the
    # redirect itself is the answer (`status` 3xx, `final_url` the URL that redirected).
    refused_redirect: str | None = None

    @property
    def broken(self) -> bool:
        return self.error is not None or (self.status is not None and self.status >= 400)


def _kind(error: outbound.OutboundError) -> str:
    """The error class recorded for a broken link (the message stays for people)."""
    if isinstance(error, outbound.TooLarge):
        return "too_large"
    if isinstance(error, outbound.Refused):
        return "refused"
    text = str(error)
    if "in time" in text:
        return "timeout"
    if "resolved" in text or "no address" in text:
        return "dns"
    if "SSL" in text or "TLS" in text or "Certificate" in text:
        return "tls"
    return "connection"


class _Host:
    def __init__(self, concurrency: int) -> None:
        self.slots = asyncio.Semaphore(concurrency)
        self.lock = asyncio.Lock()
        self.next_start = 0.0
        self.interval = 0.0
        # robots.txt's Crawl-delay: the interval runs from the previous request's end.
        self.crawl_delay = 0.0


class Fetcher:
    """One crawl's fetcher; `async with` it. `policy` is the outbound policy (size cap and
    timeout of each response included); `interval` the minimum seconds between request starts
    to one host."""

    def __init__(
        self,
        policy: Policy,
        *,
        user_agent: str,
        interval: float = 0.5,
        concurrency: int = 2,
        retries: int = 2,
        backoff: float = 1.0,
        resolver: outbound.Resolver | None = None,
    ) -> None:
        self.policy = policy
        self.user_agent = user_agent
        self.interval = interval
        self.concurrency = max(1, min(concurrency, 2))  # the issue: per-host concurrency 1-2
        self.retries = retries
        self.backoff = backoff
        self.client = GuardedClient(policy, resolver=resolver)
        self._hosts: dict[str, _Host] = {}
        self.requests = 0  # sent, for tests and progress

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()

    def slow_down(self, host: str, seconds: float) -> None:
        """Honour robots.txt's Crawl-delay of `seconds` for `host`: one request at a time, each
        started at least `seconds` after the previous one ended. Called between requests."""
        state = self._host(host)
        state.slots = asyncio.Semaphore(1)
        state.crawl_delay = max(state.crawl_delay, seconds)
        # The request just made (robots.txt itself) is spaced by the delay too.
        state.next_start = max(state.next_start, time.monotonic() + state.crawl_delay)

    def _host(self, host: str) -> _Host:
        if host not in self._hosts:
            self._hosts[host] = _Host(self.concurrency)
            self._hosts[host].interval = self.interval
        return self._hosts[host]

    async def fetch(
        self, url: str, method: str = "GET", *, follow: HopCheck | None = None
    ) -> Fetched:
        """`url` fetched with redirects followed hop by hop, each hop only when `follow` (if
        given) allows its target. Never raises for the network."""
        result = Fetched(url=url, final_url=url)
        started = time.monotonic()
        seen = {urls.normalize(url) or url}
        target = url
        try:
            for _ in range(MAX_REDIRECTS + 1):
                response = await self._polite(method, target)
                result.status, result.final_url = response.status, target
                result.headers, result.body = dict(response.headers), response.body
                result.first_byte_ms = response.first_byte_ms
                location = response.headers.get("location")
                if response.status not in _REDIRECTS or not location:
                    return result
                result.redirect_chain.append(target)
                target = str(httpx.URL(target).join(location))
                key = urls.normalize(target) or target
                if key in seen:
                    result.error, result.message = "redirect_loop", f"Redirect loop at {target}."
                    return result
                if follow is not None and not follow(target):
                    result.redirect_chain.pop()
                    result.refused_redirect = target
                    return result
                seen.add(key)
            result.error = "too_many_redirects"
            result.message = f"More than {MAX_REDIRECTS} redirects."
            return result
        except outbound.OutboundError as error:
            result.final_url = target
            result.error, result.message = _kind(error), str(error)
            result.status, result.body = None, b""
            return result
        finally:
            result.elapsed_ms = int((time.monotonic() - started) * 1000)

    async def _polite(self, method: str, url: str) -> outbound.Response:
        """One request (no redirect following), within the host's limits, retried on 429/503."""
        host = self._host(urls.host_of(url))
        for attempt in range(self.retries + 1):
            async with host.slots:
                async with host.lock:
                    wait = host.next_start - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    host.next_start = time.monotonic() + host.interval
                self.requests += 1
                try:
                    response = await self._send(method, url)
                finally:
                    if host.crawl_delay:
                        host.next_start = max(host.next_start, time.monotonic() + host.crawl_delay)
            if response.status not in _RETRY_STATUSES or attempt == self.retries:
                return response
            asked = outbound.retry_after_seconds(response.headers.get("retry-after"))
            delay = self.backoff * 2**attempt if asked is None else asked
            if delay > MAX_RETRY_WAIT_SECONDS:
                return response
            # Everyone waits: the site asked the whole crawler, not this request, to slow down.
            host.next_start = max(host.next_start, time.monotonic() + delay)
        raise AssertionError("unreachable")

    async def _send(self, method: str, url: str) -> outbound.Response:
        # One hop (request() would follow redirects without recording them): the URL and its
        # addresses are checked for this hop (SSRF), with the size cap and the timeout.
        return await self.client.send_once(method, url, headers={"user-agent": self.user_agent})
