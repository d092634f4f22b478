"""The one way to reach a URL a user gave us (a CMS, a webhook): guarded against SSRF.

- https only (http where `Policy.allow_http`), no credentials in the URL;
- the host is resolved here and every address checked: loopback (unless `allow_loopback`),
  private, link-local, CGNAT, multicast, reserved, unspecified and cloud metadata addresses are
  refused, in their IPv4-mapped, NAT64 and 6to4 IPv6 forms too;
- the connection goes to the address that was checked (the Host header and TLS name stay the
  host's), so a second DNS answer cannot swap it;
- redirects are followed by hand, each hop checked again, at most `max_redirects`;
- proxies from the environment are ignored; timeouts and a response-size cap always apply;
- TLS certificates are checked against the public CAs (certifi's bundle) and those of
  `Policy.ca_file` (an operator's private CA); a certificate that fails the check is
  `CertificateRejected`, which names the reason, never a vague "could not be reached".
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import ipaddress
import json as jsonlib
import socket
import ssl
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import certifi
import httpx

from contentplatform import __version__

if TYPE_CHECKING:
    from contentplatform.config import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Local-use NAT64 (RFC 8215) embeds the IPv4 address in other bits, and only ever reaches
# networks of the operator's: refused outright.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
# Instance metadata endpoints of the clouds (AWS, GCP, Azure, OpenStack; AWS IPv6; Alibaba;
# Oracle). Most are link-local already; named so the refusal says what they are.
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200", "192.0.0.192")
)
_REDIRECTS = {301, 302, 303, 307, 308}
# Headers that may follow a redirect to another origin; any other (Authorization, Cookie,
# X-Shopify-Access-Token, API keys) is a credential for the origin it was given for.
_SAFE_ACROSS_ORIGINS = frozenset({"accept", "accept-language", "content-type", "user-agent"})
# Encodings decoded here, in bounded steps (zlib wbits: gzip header, zlib header).
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_LOOPBACK = "a loopback address"
# What a refusal of http or of a loopback address adds: the setting an operator turns on to
# allow it (config.py: outbound_allow_http, outbound_allow_loopback).
ALLOW_HTTP = "For local development, CONTENTPLATFORM_OUTBOUND_ALLOW_HTTP=true allows http."
ALLOW_LOOPBACK = (
    "For local development, CONTENTPLATFORM_OUTBOUND_ALLOW_LOOPBACK=true allows loopback addresses."
)
# What a certificate refusal adds: how an operator trusts a private CA (config.py
# outbound_ca_file).
TRUST_CA = (
    "If the site's certificate is from a private CA, the operator can trust that CA with "
    "CONTENTPLATFORM_OUTBOUND_CA_FILE."
)


def user_agent() -> str:
    """`contentplatform/<version>`, and `(+<url>)` when the package names a URL of its own
    ([project.urls] in pyproject.toml)."""
    try:
        urls = metadata.metadata("contentplatform").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    home = next((url.partition(",")[2].strip() for url in urls), "")
    return f"contentplatform/{__version__}" + (f" (+{home})" if home else "")


# Sent with every outbound request (a caller's own User-Agent header wins).
USER_AGENT = user_agent()


@dataclass(frozen=True)
class Policy:
    allow_http: bool = False
    # For local development and tests only: lets loopback addresses through (nothing else).
    allow_loopback: bool = False
    connect_timeout: float = 5.0
    timeout: float = 30.0
    max_response_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 3
    # A PEM file of CAs trusted besides the public ones (an operator's private CA).
    ca_file: str | Path | None = None


def policy_of(settings: Settings, **overrides: Any) -> Policy:
    """The guard with the operator's outbound settings (plain http and loopback for local work,
    a private CA, the timeout, the largest response), `overrides` (Policy's fields) replacing
    any of them for one kind of request."""
    policy = Policy(
        allow_http=settings.outbound_allow_http,
        allow_loopback=settings.outbound_allow_loopback,
        timeout=settings.outbound_timeout_seconds,
        max_response_bytes=settings.outbound_max_response_bytes,
        ca_file=settings.outbound_ca_file,
    )
    return replace(policy, **overrides)


class OutboundError(Exception):
    """A request that could not be made or finished; `str()` is safe to show the user."""


class Refused(OutboundError):
    """The URL or an address it resolves to is not allowed. Nothing was sent."""


class Unreachable(OutboundError):
    """DNS failed, the connection failed or timed out: worth trying again later."""


class TooLarge(OutboundError):
    """The response was larger than the policy allows."""


class CertificateRejected(OutboundError):
    """The server's TLS certificate failed the check (expired, for another name, signed by a CA
    not trusted here). Nothing was sent; trying again will not help until the site's certificate
    or the operator's trust changes."""


@dataclass(frozen=True)
class Response:
    status: int
    headers: httpx.Headers
    body: bytes
    url: str
    # From the request's start (its address resolved and checked) to the answer's headers.
    first_byte_ms: int = 0

    def json(self) -> Any:
        return jsonlib.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def refusal(address: IPAddress, *, allow_loopback: bool = False) -> str | None:
    """Why `address` may not be reached, or None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _LOCAL_NAT64:
            return "a private address"
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return refusal(embedded, allow_loopback=allow_loopback)
    if address.is_loopback:
        return None if allow_loopback else _LOOPBACK
    if address in _METADATA:
        return "a cloud metadata address"
    if address.is_link_local:
        return "a link-local address"
    if isinstance(address, ipaddress.IPv4Address) and address in _CGNAT:
        return "a shared (CGNAT) address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "a private address"
    if address.is_unspecified or address.is_reserved:
        return "a reserved address"
    if address.is_private or not address.is_global:
        return "a private address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    return None


def check_url(url: str, policy: Policy) -> httpx.URL:
    """The parsed URL when its form is allowed (scheme, no credentials, a host); else Refused.
    Addresses are checked when it is requested, as they may change."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        # Not quoted back: an unparseable URL may still carry a password.
        raise Refused("The URL is not valid.") from None
    allowed = ("https", "http") if policy.allow_http else ("https",)
    if parsed.scheme not in allowed:
        hint = f" {ALLOW_HTTP}" if parsed.scheme == "http" else ""
        raise Refused(f"Only {' or '.join(allowed)} URLs are allowed, not {parsed.scheme!r}.{hint}")
    if parsed.userinfo:
        raise Refused("URLs may not carry credentials; give them as the connection's credentials.")
    if not parsed.host:
        raise Refused(f"{url!r} has no host.")
    return parsed


async def system_resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        answers = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise Unreachable(f"{host} could not be resolved ({error.strerror}).") from None
    except UnicodeError:  # a label longer than 63 characters, say
        raise Refused(f"{host!r} is not a valid host name.") from None
    return list(dict.fromkeys(str(info[4][0]) for info in answers))


# Looked up at each request, so tests can swap in a resolver of their own.
resolve: Resolver = system_resolve


async def checked_address(url: httpx.URL, policy: Policy, resolver: Resolver | None = None) -> str:
    """The address to connect to for `url`: every address its host resolves to must be allowed
    (one bad answer refuses the lot, so a mixed answer cannot sneak through)."""
    port = url.port or (443 if url.scheme == "https" else 80)
    # The ASCII (IDNA) form: the name the Host header and the TLS check use too.
    addresses = await (resolver or resolve)(url.raw_host.decode("ascii"), port)
    if not addresses:
        raise Unreachable(f"{url.host} has no address.")
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        reason = refusal(address, allow_loopback=policy.allow_loopback)
        if reason is not None:
            named = url.host if url.host == text else f"{url.host} resolves to {text}, which is"
            hint = f" {ALLOW_LOOPBACK}" if reason == _LOOPBACK else ""
            raise Refused(
                f"{named} {'is ' if url.host == text else ''}{reason}; not allowed.{hint}"
            )
    return addresses[0]


@functools.cache
def tls_context(ca_file: str | Path | None = None) -> ssl.SSLContext:
    """One TLS context per trust: certifi's public CAs, and `ca_file`'s when given. Made once,
    as httpx would otherwise read and parse the CA bundle for every client."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


def _tls_failure(error: BaseException) -> ssl.SSLError | None:
    """The TLS error under httpx's (it chains httpcore's, which chains ssl's), if any."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


@contextlib.contextmanager
def _unreachable(host: str, timed_out: str, failed: str) -> Iterator[None]:
    """httpx's failures as Unreachable: `timed_out` on a timeout, else `failed` and the kind of
    failure (never its message, which may carry the address we connected to); a certificate
    that fails the check as CertificateRejected, with the check's reason."""
    try:
        yield
    except httpx.TimeoutException:
        raise Unreachable(f"{timed_out}.") from None
    except httpx.HTTPError as error:
        tls = _tls_failure(error)
        if isinstance(tls, ssl.SSLCertVerificationError):
            reason = tls.verify_message or tls.reason or "it failed the check"
            raise CertificateRejected(
                f"{host}'s TLS certificate was not accepted ({reason}). {TRUST_CA}"
            ) from None
        if tls is not None:
            reason = tls.reason or type(tls).__name__
            raise Unreachable(f"{failed} (TLS handshake failed: {reason}).") from None
        raise Unreachable(f"{failed} ({type(error).__name__}).") from None


class GuardedClient:
    """An HTTP client for user-supplied URLs; see the module docstring for its rules."""

    def __init__(self, policy: Policy, *, resolver: Resolver | None = None) -> None:
        self.policy = policy
        self.resolver = resolver
        self._client = httpx.AsyncClient(
            trust_env=False,
            follow_redirects=False,
            # No keep-alive: the pool is keyed by address, so a kept connection would serve
            # another host name on that address without a TLS check for that name.
            limits=httpx.Limits(max_keepalive_connections=0),
            headers={"accept-encoding": ", ".join(_WBITS), "user-agent": USER_AGENT},
            timeout=httpx.Timeout(policy.timeout, connect=policy.connect_timeout),
            verify=tls_context(policy.ca_file),
        )

    async def __aenter__(self) -> GuardedClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str | int] | None = None,
        json: Any = None,
        content: bytes | None = None,
    ) -> Response:
        if json is not None:
            content = jsonlib.dumps(json).encode()
            headers = {"content-type": "application/json", **(headers or {})}
        target = check_url(url, self.policy)
        if params:
            target = target.copy_merge_params(dict(params))
        sent_headers = dict(headers or {})
        for _ in range(self.policy.max_redirects + 1):
            response = await self._send(method, target, sent_headers, content)
            location = response.headers.get("location")
            if response.status not in _REDIRECTS or not location:
                return response
            following = check_url(str(target.join(location)), self.policy)
            if (following.scheme, following.host, following.port) != (
                target.scheme,
                target.host,
                target.port,
            ):
                # Credentials are for the origin they were given for.
                sent_headers = {
                    k: v for k, v in sent_headers.items() if k.lower() in _SAFE_ACROSS_ORIGINS
                }
            if (response.status == 303 and method != "HEAD") or (
                response.status in (301, 302) and method not in ("GET", "HEAD")
            ):
                method, content = "GET", None
                sent_headers = {
                    k: v for k, v in sent_headers.items() if k.lower() != "content-type"
                }
            target = following
        raise Refused(f"More than {self.policy.max_redirects} redirects from {url}.")

    async def send_once(
        self, method: str, url: str, *, headers: Mapping[str, str] | None = None
    ) -> Response:
        """One exchange with `url`, a redirect answered as it is, not followed: for a caller
        that follows redirects hop by hop to record the chain (the crawler). The URL and every
        address it resolves to are checked as for `request`, with the same caps."""
        return await self._send(method, check_url(url, self.policy), dict(headers or {}), None)

    async def _send(
        self, method: str, url: httpx.URL, headers: dict[str, str], content: bytes | None
    ) -> Response:
        # The read timeout bounds each read; this bounds the whole exchange, so a server
        # dripping its answer cannot hold a worker.
        try:
            async with asyncio.timeout(self.policy.timeout):
                return await self._exchange(method, url, headers, content)
        except TimeoutError:
            raise Unreachable(f"{url.host} did not finish answering in time.") from None

    async def _exchange(
        self, method: str, url: httpx.URL, headers: dict[str, str], content: bytes | None
    ) -> Response:
        started = time.monotonic()
        address = await checked_address(url, self.policy, self.resolver)
        request = self._client.build_request(
            method,
            url.copy_with(host=address),
            # netloc is ASCII, with the port and, for IPv6, the brackets.
            headers={**headers, "host": url.netloc.decode("ascii")},
            content=content,
            # TLS checks the certificate against the host name, not the address.
            extensions={"sni_hostname": url.raw_host.decode("ascii")}
            if url.scheme == "https"
            else {},
        )
        with _unreachable(
            url.host, f"{url.host} did not answer in time", f"{url.host} could not be reached"
        ):
            response = await self._client.send(request, stream=True)
        first_byte_ms = int((time.monotonic() - started) * 1000)
        try:
            with _unreachable(
                url.host,
                f"{url.host} did not finish answering in time",
                f"{url.host} broke off its answer",
            ):
                body = await self._read(url, response)
        finally:
            await response.aclose()
        return Response(response.status_code, response.headers, body, str(url), first_byte_ms)

    async def _read(self, url: httpx.URL, response: httpx.Response) -> bytes:
        """The decoded body; never holds more than the cap, however well it is compressed."""
        limit = self.policy.max_response_bytes
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("", "identity"):
            inflater = None
        elif encoding in _WBITS:
            inflater = zlib.decompressobj(_WBITS[encoding])
        else:
            raise Unreachable(f"{url.host} answered in an encoding not asked for ({encoding}).")
        body = bytearray()
        async for chunk in response.aiter_raw():
            if inflater is None:
                body += chunk
            else:
                try:
                    # At most one byte past the cap: enough to know it is too large.
                    body += inflater.decompress(chunk, limit + 1 - len(body))
                except zlib.error:
                    raise Unreachable(f"{url.host} sent a corrupt {encoding} body.") from None
            if len(body) > limit:
                raise TooLarge(f"{url.host} answered with more than {limit} bytes.")
        return bytes(body)


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds a `Retry-After` header asks to wait (delay-seconds or an HTTP date, RFC 9110
    10.2.3), if it says any; a date in the past is 0."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - time.time())
