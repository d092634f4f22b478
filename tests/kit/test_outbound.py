"""The guarded outbound client (issue 6, point 5): what it refuses, what `allow_loopback` lets
through, redirects, proxies, the size cap and timeouts.

Every test runs under `no_outside_connections`: a connection or DNS query that would leave
loopback fails the test, so refusals are proven to happen before anything is sent. Host names
come from `fake_dns`; numeric literals ("127.1", "0x7f000001") go through the real system
resolver, which the guard lets resolve them only because they need no DNS query.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import ipaddress
import re
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from contentplatform import __version__
from contentplatform.config import Settings
from contentplatform.kit import outbound
from contentplatform.kit.outbound import (
    CertificateRejected,
    GuardedClient,
    OutboundError,
    Policy,
    Refused,
    Response,
    TooLarge,
    Unreachable,
)
from tests.support.network import (
    NetworkGuard,
    OutsideConnection,
    UnknownHost,
    fake_dns,
    no_outside_connections,
)
from tests.support.servers import StubServer
from tests.support.tls import PrivateCA, TLSStubServer

LOCAL = Policy(allow_http=True, allow_loopback=True, timeout=2.0, connect_timeout=2.0)
# http allowed so that plain-http targets get as far as the address check; loopback is not.
HTTP_ONLY = Policy(allow_http=True, timeout=2.0, connect_timeout=2.0)
Handler = Callable[..., tuple[int, dict[str, str], Any]]


@pytest.fixture(autouse=True)
def network() -> Iterator[NetworkGuard]:
    with no_outside_connections() as guard:
        yield guard


@pytest.fixture(scope="module")
def stub_server() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture
def stub(stub_server: StubServer) -> StubServer:
    stub_server.routes.clear()
    stub_server.requests.clear()
    return stub_server


def port_of(server: StubServer | ThreadingHTTPServer) -> int:
    httpd = server.httpd if isinstance(server, StubServer) else server
    return int(httpd.server_address[1])


def fetch(url: str, policy: Policy = LOCAL, method: str = "GET", **options: Any) -> Response:
    async def main() -> Response:
        async with GuardedClient(policy) as client:
            return await client.request(method, url, **options)

    return asyncio.run(main())


def headers_of(request: dict[str, Any]) -> dict[str, str]:
    return {name.lower(): value for name, value in request["headers"].items()}


def answer(status: int = 200, body: Any = None, headers: dict[str, str] | None = None) -> Handler:
    def handle(path: str, request_headers: dict[str, str], request_body: bytes) -> Any:
        return status, dict(headers or {}), {"ok": True} if body is None else body

    return handle


def redirect(status: int, location: str) -> Handler:
    return answer(status, b"", {"location": location})


LOOPBACK, PRIVATE, METADATA = "a loopback address", "a private address", "a cloud metadata address"
LINK_LOCAL, CGNAT, MULTICAST = (
    "a link-local address",
    "a shared (CGNAT) address",
    "a multicast address",
)
RESERVED = "a reserved address"
FORBIDDEN = [
    ("127.0.0.1", LOOPBACK),
    ("127.8.9.10", LOOPBACK),
    ("::1", LOOPBACK),
    ("10.1.2.3", PRIVATE),
    ("172.16.0.1", PRIVATE),
    ("172.31.255.254", PRIVATE),
    ("192.168.1.1", PRIVATE),
    ("fd12:3456::1", PRIVATE),
    ("fec0::1", PRIVATE),  # deprecated site-local, which Python 3.11 does not call private
    ("169.254.169.254", METADATA),
    ("169.254.170.2", METADATA),
    ("fd00:ec2::254", METADATA),
    ("100.100.100.200", METADATA),
    ("169.254.1.1", LINK_LOCAL),
    ("fe80::1", LINK_LOCAL),
    ("100.64.0.1", CGNAT),
    ("100.127.255.254", CGNAT),
    ("224.0.0.1", MULTICAST),
    ("239.255.255.250", MULTICAST),
    ("ff02::1", MULTICAST),
    ("0.0.0.0", RESERVED),
    ("::", RESERVED),
    ("240.0.0.1", RESERVED),
    ("255.255.255.255", RESERVED),
    ("::ffff:10.0.0.1", PRIVATE),
    ("::ffff:169.254.169.254", METADATA),
    ("::ffff:127.0.0.1", LOOPBACK),
    ("64:ff9b::a9fe:a9fe", METADATA),
    ("64:ff9b::a00:1", PRIVATE),
    ("2002:a9fe:a9fe::", METADATA),
    ("2002:7f00:1::", LOOPBACK),
    ("2002:c0a8:101::1", PRIVATE),
]
NOT_LOOPBACK = [(address, reason) for address, reason in FORBIDDEN if reason != LOOPBACK]


def literal_url(address: str) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}/latest/meta-data/"


# --- Refused addresses ---------------------------------------------------------------------


@pytest.mark.parametrize(("address", "reason"), FORBIDDEN)
def test_a_name_resolving_to_a_forbidden_address_is_refused_before_connecting(
    address: str, reason: str, network: NetworkGuard
) -> None:
    with fake_dns({"target.test": [address]}), pytest.raises(Refused) as refused:
        fetch("https://target.test/", HTTP_ONLY)
    # Only a loopback address names the setting that allows it (nothing allows the others).
    hint = f" {outbound.ALLOW_LOOPBACK}" if reason == LOOPBACK else ""
    assert str(refused.value) == (
        f"target.test resolves to {address}, which is {reason}; not allowed.{hint}"
    )
    assert network.here == []


@pytest.mark.parametrize(("address", "reason"), FORBIDDEN)
def test_a_forbidden_address_written_in_the_url_is_refused(
    address: str, reason: str, network: NetworkGuard
) -> None:
    with pytest.raises(Refused, match=re.escape(f"is {reason}; not allowed")) as refused:
        fetch(literal_url(address), HTTP_ONLY)
    assert address in str(refused.value)
    assert network.here == []


@pytest.mark.parametrize(("address", "reason"), NOT_LOOPBACK)
def test_allow_loopback_lets_loopback_through_and_nothing_else(
    address: str, reason: str, network: NetworkGuard
) -> None:
    with fake_dns({"target.test": [address]}), pytest.raises(Refused, match=re.escape(reason)):
        fetch("http://target.test/", LOCAL)
    assert network.here == []


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://2130706433/", LOOPBACK),
        ("http://0x7f000001/", LOOPBACK),
        ("http://127.1/", LOOPBACK),
        ("http://017700000001/", LOOPBACK),
        ("http://0/", RESERVED),
        ("http://0xa9fea9fe/", METADATA),
        ("http://10.1/", PRIVATE),
    ],
)
def test_odd_numeric_forms_of_forbidden_addresses_are_refused(
    url: str, reason: str, network: NetworkGuard
) -> None:
    # The real system resolver reads these as numbers; the guard proves no DNS query is made.
    with pytest.raises(Refused, match=re.escape(f"which is {reason}")):
        fetch(url, HTTP_ONLY)
    assert network.here == []


@pytest.mark.parametrize(
    "answers",
    [
        ["93.184.216.34", "10.0.0.1"],
        ["10.0.0.1", "93.184.216.34"],
        ["2606:2800:220:1::1", "fd00:ec2::254"],
    ],
)
def test_a_name_with_one_forbidden_address_among_public_ones_is_refused(
    answers: list[str], network: NetworkGuard
) -> None:
    with (
        fake_dns({"mixed.test": answers}),
        pytest.raises(Refused, match=re.escape("mixed.test resolves")),
    ):
        fetch("https://mixed.test/")
    assert network.here == []


def test_a_mixed_answer_is_refused_even_when_loopback_is_allowed(
    stub: StubServer, network: NetworkGuard
) -> None:
    with (
        fake_dns({"mixed.test": ["127.0.0.1", "169.254.169.254"]}),
        pytest.raises(Refused, match=re.escape(METADATA)),
    ):
        fetch(f"http://mixed.test:{port_of(stub)}/")
    assert stub.requests == []
    assert network.here == []


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "2606:2800:220:1::1", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"]
)
def test_public_addresses_pass_the_check(address: str) -> None:
    assert outbound.refusal(ipaddress.ip_address(address)) is None


# --- Refused URLs --------------------------------------------------------------------------


def test_http_is_refused_unless_the_policy_allows_it(stub: StubServer) -> None:
    stub.route("GET", "/hello", answer())
    url = f"http://cms.test:{port_of(stub)}/hello"
    with fake_dns({"cms.test": ["127.0.0.1"]}) as dns:
        with pytest.raises(Refused, match=re.escape("Only https URLs are allowed, not 'http'")):
            fetch(url, Policy(allow_loopback=True))
        assert dns.asked == []
        assert stub.requests == []
        assert fetch(url, Policy(allow_loopback=True, allow_http=True)).status == 200


def test_refusals_of_http_and_loopback_name_the_setting_that_allows_them(
    network: NetworkGuard,
) -> None:
    with pytest.raises(Refused) as http:
        fetch("http://cms.test/", Policy(allow_loopback=True))
    assert "CONTENTPLATFORM_OUTBOUND_ALLOW_HTTP=true" in str(http.value)
    with pytest.raises(Refused) as loopback:
        fetch("http://127.0.0.1:9/hook", HTTP_ONLY)
    assert "CONTENTPLATFORM_OUTBOUND_ALLOW_LOOPBACK=true" in str(loopback.value)
    # A scheme nothing allows, and an address no setting allows, name no setting.
    with pytest.raises(Refused) as ftp:
        fetch("ftp://cms.test/", Policy())
    with pytest.raises(Refused) as private:
        fetch("http://10.0.0.1/", LOCAL)
    for refused in (ftp, private):
        assert "CONTENTPLATFORM_" not in str(refused.value)
    assert network.here == []


@pytest.mark.parametrize(
    "url",
    ["https://user:s3cret@cms.test/", "https://user@cms.test/", "https://:s3cret@cms.test/"],
)
def test_credentials_in_the_url_are_refused_without_repeating_them(url: str) -> None:
    with (
        fake_dns({}) as dns,
        pytest.raises(Refused, match=re.escape("may not carry credentials")) as refused,
    ):
        fetch(url)
    assert "s3cret" not in str(refused.value)
    assert dns.asked == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "gopher://cms.test:70/_GET",
        "ftp://cms.test/",
        "dict://cms.test:11211/",
        "ws://cms.test/",
        "javascript:alert(1)",
    ],
)
def test_schemes_other_than_http_are_refused(url: str) -> None:
    with (
        fake_dns({}) as dns,
        pytest.raises(Refused, match=re.escape("Only https or http URLs are allowed")),
    ):
        fetch(url)
    assert dns.asked == []


@pytest.mark.parametrize(
    ("url", "message"),
    [("https:///path", "has no host"), ("http://0177.0.0.1/", "The URL is not valid")],
)
def test_a_url_without_a_usable_host_is_refused(url: str, message: str) -> None:
    with pytest.raises(Refused, match=re.escape(message)):
        fetch(url)


def test_an_unparseable_url_is_refused_without_repeating_its_password() -> None:
    with pytest.raises(Refused, match="The URL is not valid") as refused:
        fetch("https://user:s3cret@[::1/")
    assert "s3cret" not in str(refused.value)


# --- Allowed: loopback for development and tests --------------------------------------------


def test_with_allow_loopback_a_local_server_is_reached_under_the_original_host_name(
    stub: StubServer, network: NetworkGuard
) -> None:
    stub.route("GET", "/hello", answer(body={"hello": "world"}))
    port = port_of(stub)
    with fake_dns({"cms.test": ["127.0.0.1"]}):
        response = fetch(f"http://cms.test:{port}/hello", params={"page": 2})
    assert (response.status, response.json()) == (200, {"hello": "world"})
    assert response.url == f"http://cms.test:{port}/hello?page=2"
    [seen] = stub.requests
    assert seen["path"] == "/hello?page=2"
    assert headers_of(seen)["host"] == f"cms.test:{port}"
    assert network.here == [("127.0.0.1", port)]


def test_with_allow_loopback_a_numeric_loopback_form_is_reached(
    stub: StubServer, network: NetworkGuard
) -> None:
    stub.route("GET", "/hello", answer())
    assert fetch(f"http://127.1:{port_of(stub)}/hello").status == 200
    assert network.here == [("127.0.0.1", port_of(stub))]


def test_the_client_connects_to_the_address_it_checked_not_a_second_answer(
    stub: StubServer, network: NetworkGuard
) -> None:
    stub.route("GET", "/hello", answer())
    answers = iter([["127.0.0.1"], ["169.254.169.254"]])

    async def rebinding(host: str, port: int) -> list[str]:
        return next(answers)

    async def main() -> Response:
        async with GuardedClient(LOCAL, resolver=rebinding) as client:
            return await client.request("GET", f"http://cms.test:{port_of(stub)}/hello")

    assert asyncio.run(main()).status == 200
    assert network.here == [("127.0.0.1", port_of(stub))]


# --- Redirects -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "location",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://metadata.test/computeMetadata/v1/",
    ],
)
def test_a_redirect_to_a_metadata_address_is_refused_at_that_hop(
    location: str, stub: StubServer, network: NetworkGuard
) -> None:
    stub.route("GET", "/go", redirect(302, location))
    names = {"cms.test": ["127.0.0.1"], "metadata.test": ["169.254.169.254"]}
    with (
        fake_dns(names),
        pytest.raises(Refused, match=re.escape("is a cloud metadata address; not allowed")),
    ):
        fetch(f"http://cms.test:{port_of(stub)}/go")
    assert [request["path"] for request in stub.requests] == ["/go"]
    assert network.here == [("127.0.0.1", port_of(stub))]


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("file:///etc/passwd", "Only https or http URLs"),
        ("http://user:pw@cms.test/", "may not carry credentials"),
        ("http://10.0.0.1/admin", PRIVATE),
        ("https://internal.test/", "internal.test resolves to 192.168.0.1, which is a private"),
    ],
)
def test_each_redirect_hop_is_checked_like_the_first_url(
    location: str, message: str, stub: StubServer, network: NetworkGuard
) -> None:
    stub.route("GET", "/go", redirect(302, location))
    names = {"cms.test": ["127.0.0.1"], "internal.test": ["192.168.0.1"]}
    with fake_dns(names), pytest.raises(Refused, match=re.escape(message)):
        fetch(f"http://cms.test:{port_of(stub)}/go")
    assert len(stub.requests) == 1
    assert network.here == [("127.0.0.1", port_of(stub))]


@pytest.fixture
def hops(stub: StubServer) -> StubServer:
    """/hop/0 -> /hop/1 -> ... -> /hop/5, which answers 200."""
    for hop in range(5):
        stub.route("GET", f"/hop/{hop}", redirect(302, f"/hop/{hop + 1}"))
    stub.route("GET", "/hop/5", answer(body={"arrived": True}))
    return stub


def test_three_redirects_are_followed(hops: StubServer) -> None:
    response = fetch(f"http://127.0.0.1:{port_of(hops)}/hop/2")
    assert (response.status, response.json()) == (200, {"arrived": True})
    assert response.url == f"http://127.0.0.1:{port_of(hops)}/hop/5"
    assert [request["path"] for request in hops.requests] == [
        "/hop/2",
        "/hop/3",
        "/hop/4",
        "/hop/5",
    ]


def test_a_fourth_redirect_is_refused_without_being_followed(hops: StubServer) -> None:
    with pytest.raises(Refused, match=re.escape("More than 3 redirects")):
        fetch(f"http://127.0.0.1:{port_of(hops)}/hop/1")
    assert [request["path"] for request in hops.requests] == [
        "/hop/1",
        "/hop/2",
        "/hop/3",
        "/hop/4",
    ]


def test_authorization_is_dropped_on_a_cross_origin_redirect_and_kept_on_the_same_origin(
    stub: StubServer,
) -> None:
    port = port_of(stub)
    stub.route("GET", "/away", redirect(302, f"http://other.test:{port}/landing"))
    stub.route("GET", "/stay", redirect(302, "/landing"))
    stub.route("GET", "/landing", answer())
    sent = {"authorization": "Bearer s3cret", "accept": "application/json"}
    with fake_dns({"cms.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}):
        assert fetch(f"http://cms.test:{port}/away", headers=sent).status == 200
        assert fetch(f"http://cms.test:{port}/stay", headers=sent).status == 200
    away, away_landing, _, stay_landing = map(headers_of, stub.requests)
    assert away["authorization"] == "Bearer s3cret"
    assert "authorization" not in away_landing
    assert away_landing["host"] == f"other.test:{port}"
    assert away_landing["accept"] == "application/json"
    assert stay_landing["authorization"] == "Bearer s3cret"


def test_requests_name_the_service_and_its_version_in_the_user_agent(stub: StubServer) -> None:
    stub.route("GET", "/ping", answer())
    stub.route("POST", "/hook", answer())
    url = f"http://127.0.0.1:{port_of(stub)}"
    fetch(f"{url}/ping")
    fetch(f"{url}/hook", method="POST", json={"event": "test"})
    agents = [headers_of(request)["user-agent"] for request in stub.requests]
    assert agents == [f"contentplatform/{__version__}"] * 2
    # A caller's own wins.
    fetch(f"{url}/ping", headers={"user-agent": "custom/1"})
    assert headers_of(stub.requests[-1])["user-agent"] == "custom/1"


def test_the_user_agent_names_the_packages_url_when_it_has_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Metadata:
        def __init__(self, urls: list[str]) -> None:
            self.urls = urls

        def get_all(self, name: str) -> list[str] | None:
            return self.urls if name == "Project-URL" else None

    found: list[str] = []
    monkeypatch.setattr(outbound.metadata, "metadata", lambda _name: Metadata(found))
    assert outbound.user_agent() == f"contentplatform/{__version__}"
    found.append("Homepage, https://contentplatform.example/docs")
    assert outbound.user_agent() == (
        f"contentplatform/{__version__} (+https://contentplatform.example/docs)"
    )


def test_no_credential_header_follows_a_cross_origin_redirect(stub: StubServer) -> None:
    port = port_of(stub)
    stub.route("GET", "/away", redirect(302, f"http://other.test:{port}/landing"))
    stub.route("GET", "/landing", answer())
    sent = {"x-shopify-access-token": "shpat_s3cret", "cookie": "session=s3cret"}
    with fake_dns({"cms.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}):
        fetch(f"http://cms.test:{port}/away", headers=sent)
    assert "s3cret" not in str(stub.requests[1]["headers"])


@pytest.mark.parametrize(
    ("status", "method"), [(301, "GET"), (302, "GET"), (303, "GET"), (307, "POST"), (308, "POST")]
)
def test_a_post_redirected_with_303_becomes_a_get_and_with_307_stays_a_post(
    status: int, method: str, stub: StubServer
) -> None:
    stub.route("POST", "/submit", redirect(status, "/result"))
    stub.route(method, "/result", answer())
    response = fetch(f"http://127.0.0.1:{port_of(stub)}/submit", method="POST", json={"t": 1})
    assert response.status == 200
    submitted, followed = stub.requests
    assert followed["method"] == method
    if method == "GET":
        assert followed["body"] == b""
        assert "content-type" not in headers_of(followed)
    else:
        assert followed["body"] == submitted["body"] == b'{"t": 1}'
        assert headers_of(followed)["content-type"] == "application/json"


# --- Proxies -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def proxy() -> Iterator[StubServer]:
    """Stands in for a proxy: records whatever is sent to it."""
    with StubServer() as server:
        yield server


def test_proxies_from_the_environment_are_ignored(
    stub: StubServer, proxy: StubServer, network: NetworkGuard, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub.route("GET", "/hello", answer())
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, proxy.url)
        monkeypatch.setenv(name.lower(), proxy.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with fake_dns({"cms.test": ["127.0.0.1"]}):
        assert fetch(f"http://cms.test:{port_of(stub)}/hello").status == 200
    assert proxy.requests == []
    assert len(stub.requests) == 1
    assert network.here == [("127.0.0.1", port_of(stub))]


# --- Response size -------------------------------------------------------------------------


def test_a_body_up_to_the_cap_is_read_and_one_byte_more_is_too_large(stub: StubServer) -> None:
    stub.route("GET", "/big", answer(body=b"x" * 1000, headers={"content-type": "text/plain"}))
    url = f"http://127.0.0.1:{port_of(stub)}/big"
    assert fetch(
        url, Policy(allow_http=True, allow_loopback=True, max_response_bytes=1000)
    ).text == ("x" * 1000)
    with pytest.raises(TooLarge, match=re.escape("more than 999 bytes")):
        fetch(url, Policy(allow_http=True, allow_loopback=True, max_response_bytes=999))


def test_a_small_compressed_body_that_unpacks_past_the_cap_is_too_large(stub: StubServer) -> None:
    unpacked = b"a" * 1_000_000
    packed = gzip.compress(unpacked)
    assert len(packed) < 10_000
    stub.route("GET", "/bomb", answer(body=packed, headers={"content-encoding": "gzip"}))
    url = f"http://127.0.0.1:{port_of(stub)}/bomb"
    with pytest.raises(TooLarge):
        fetch(url, Policy(allow_http=True, allow_loopback=True, max_response_bytes=100_000))
    roomy = Policy(allow_http=True, allow_loopback=True, max_response_bytes=2_000_000)
    assert fetch(url, roomy).body == unpacked


def test_a_nested_compressed_body_is_refused_without_unpacking_it_in_memory(
    stub: StubServer,
) -> None:
    packed = gzip.compress(gzip.compress(bytes(20_000_000)))
    assert len(packed) < 1_000
    stub.route("GET", "/bomb", answer(body=packed, headers={"content-encoding": "gzip, gzip"}))
    tracemalloc.start()
    try:
        with pytest.raises(OutboundError):
            fetch(
                f"http://127.0.0.1:{port_of(stub)}/bomb",
                Policy(allow_http=True, allow_loopback=True, max_response_bytes=10_000),
            )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000


# --- Timeouts ------------------------------------------------------------------------------

QUICK = Policy(allow_http=True, allow_loopback=True, timeout=0.2, connect_timeout=0.2)


def test_a_server_that_does_not_answer_in_time_is_unreachable(stub: StubServer) -> None:
    release = threading.Event()

    def stall(path: str, headers: dict[str, str], body: bytes) -> Any:
        release.wait(5)
        return 200, {}, {"late": True}

    stub.route("GET", "/slow", stall)
    started = time.monotonic()
    try:
        with pytest.raises(Unreachable, match=re.escape("in time")):
            fetch(f"http://127.0.0.1:{port_of(stub)}/slow", QUICK)
    finally:
        release.set()
    # Cut by the 0.2 s deadline, not after the 5 s stall (a busy machine may add some).
    assert time.monotonic() - started < 2.0


@contextlib.contextmanager
def serving(
    handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1"
) -> Iterator[ThreadingHTTPServer]:
    """`handler` served on a free port of `host` (a loopback address) in a thread."""

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    try:
        server = Server((host, 0), handler)
    except OSError:
        pytest.skip(f"cannot listen on {host} here")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class Quiet(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


class Drip(Quiet):
    """Answers with thirty bytes, one every 60 ms: 1.8 s in all, each gap well within a read
    timeout."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "30")
        self.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(30):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.06)


class KeepAlive(Quiet):
    """Answers 200 over HTTP/1.1 connections it keeps open; records the Host headers."""

    protocol_version = "HTTP/1.1"
    hosts: list[str] = []

    def do_GET(self) -> None:
        self.hosts.append(self.headers["host"])
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()


def test_a_server_that_drips_its_answer_past_the_timeout_is_unreachable() -> None:
    with serving(Drip) as server:
        started = time.monotonic()
        with pytest.raises(Unreachable):
            fetch(f"http://127.0.0.1:{port_of(server)}/", QUICK)
        # Cut by the 0.2 s deadline of the whole answer, not after the 1.8 s the drip takes
        # (a busy machine may add some: the margin is wide).
        assert time.monotonic() - started < 1.2


# --- Host names ----------------------------------------------------------------------------


def test_an_internationalised_host_name_is_resolved_and_sent_in_its_ascii_form(
    stub: StubServer,
) -> None:
    stub.route("GET", "/hello", answer())
    port = port_of(stub)
    with fake_dns({"xn--bcher-kva.test": ["127.0.0.1"]}):
        assert fetch(f"http://bücher.test:{port}/hello").status == 200
    assert headers_of(stub.requests[0])["host"] == f"xn--bcher-kva.test:{port}"


def test_an_invalid_host_name_is_an_outbound_error() -> None:
    with pytest.raises(OutboundError):
        fetch(f"https://{'a' * 64}.test/")


def test_each_host_name_gets_a_connection_of_its_own(network: NetworkGuard) -> None:
    async def main(port: int) -> None:
        async with GuardedClient(LOCAL) as client:
            await client.request("GET", f"http://first.test:{port}/")
            await client.request("GET", f"http://second.test:{port}/")

    with (
        serving(KeepAlive) as server,
        fake_dns({"first.test": ["127.0.0.1"], "second.test": ["127.0.0.1"]}),
    ):
        asyncio.run(main(port_of(server)))
    assert network.here == [("127.0.0.1", port_of(server))] * 2


def test_the_host_header_of_an_ipv6_literal_has_its_brackets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(KeepAlive, "hosts", [])
    with serving(KeepAlive, "::1") as server:
        assert fetch(f"http://[::1]:{port_of(server)}/").status == 200
    assert KeepAlive.hosts == [f"[::1]:{port_of(server)}"]


def test_the_local_use_nat64_prefix_is_refused() -> None:
    assert outbound.refusal(ipaddress.ip_address("64:ff9b:1:a00:1::808:808")) is not None


# --- The guard itself ----------------------------------------------------------------------


def test_the_guard_stops_a_connection_before_the_real_socket_is_touched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    touched: list[Any] = []

    def real_socket_connect(self: socket.socket, address: Any) -> None:
        touched.append(address)
        raise AssertionError(f"a connection to {address} reached the real socket")

    monkeypatch.setattr(socket.socket, "connect", real_socket_connect)
    with (
        pytest.raises(OutsideConnection, match=re.escape("8.8.8.8 port 443")),
        no_outside_connections() as guard,
        fake_dns({"public.test": ["8.8.8.8"]}),
    ):
        fetch("https://public.test/")
    assert touched == []
    assert guard.refused == ["connect to 8.8.8.8 port 443"]


def test_the_guard_stops_uvloop_connections_too(monkeypatch: pytest.MonkeyPatch) -> None:
    uvloop = pytest.importorskip("uvloop")
    touched: list[Any] = []

    async def libuv_connect(
        self: Any, factory: Any, host: Any = None, *args: Any, **kw: Any
    ) -> Any:
        touched.append(host)
        raise AssertionError(f"a connection to {host} reached libuv")

    monkeypatch.setattr(uvloop.Loop, "create_connection", libuv_connect)

    async def main() -> Response:
        async with GuardedClient(Policy()) as client:
            return await client.request("GET", "https://public.test/")

    with (
        pytest.raises(OutsideConnection, match=re.escape("8.8.8.8 port 443")),
        no_outside_connections(),
        fake_dns({"public.test": ["8.8.8.8"]}),
        asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
    ):
        runner.run(main())
    assert touched == []


def test_the_guard_refuses_real_dns_but_resolves_numbers_and_localhost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    numeric_only = socket.getaddrinfo
    queried: list[str] = []

    def real_dns(
        host: str, port: Any, family: int = 0, kind: int = 0, proto: int = 0, flags: int = 0
    ) -> Any:
        try:
            numeric_only(host, port, flags=socket.AI_NUMERICHOST)
        except socket.gaierror:
            if host != "localhost" and not flags & socket.AI_NUMERICHOST:
                queried.append(host)
                raise AssertionError(f"{host} was looked up in real DNS") from None
        return numeric_only(host, port, family, kind, proto, flags)

    monkeypatch.setattr(socket, "getaddrinfo", real_dns)
    refusal = re.escape("look up 'example.com'")
    with pytest.raises(OutsideConnection, match=refusal), no_outside_connections():
        assert socket.getaddrinfo("127.1", 80)[0][4] == ("127.0.0.1", 80)
        assert socket.getaddrinfo("localhost", 80)
        socket.getaddrinfo("example.com", 443)
    assert queried == []


def test_a_refusal_the_code_swallows_still_fails_the_block() -> None:
    refusal = re.escape("connect to 192.0.2.1 port 9")
    with (
        pytest.raises(OutsideConnection, match=refusal),
        no_outside_connections(),
        contextlib.suppress(Exception),
    ):
        socket.create_connection(("192.0.2.1", 9), timeout=0.1)


def test_loopback_connections_work_under_the_guard(stub: StubServer, network: NetworkGuard) -> None:
    with socket.create_connection(("127.0.0.1", port_of(stub)), timeout=1):
        pass
    assert network.here == [("127.0.0.1", port_of(stub))]


def test_fake_dns_fails_the_block_for_a_name_it_was_not_given() -> None:
    with (
        pytest.raises(UnknownHost, match=re.escape("'unmapped.test'")),
        fake_dns({"cms.test": ["127.0.0.1"]}) as dns,
    ):
        with contextlib.suppress(UnknownHost):
            fetch("https://unmapped.test/")
        assert dns.asked == ["unmapped.test"]


# --- TLS: certificates, and an operator's private CA ---------------------------------------------


@pytest.fixture(scope="module")
def private_ca(tmp_path_factory: pytest.TempPathFactory) -> PrivateCA:
    return PrivateCA(tmp_path_factory.mktemp("ca"))


def https_site(ca: PrivateCA, host: str = "127.0.0.1", **options: Any) -> TLSStubServer:
    site = TLSStubServer(ca.issue(host, **options))
    site.route("GET", "/", answer(200, {"secure": True}))
    return site


@pytest.mark.parametrize(
    ("host", "expired", "reason"),
    [
        ("127.0.0.1", False, "unable to get local issuer certificate"),
        ("127.0.0.1", True, "certificate has expired"),
        ("blog.example", False, "IP address mismatch"),
    ],
    ids=["untrusted CA", "expired", "another name"],
)
def test_a_certificate_that_fails_the_check_is_rejected_naming_why(
    private_ca: PrivateCA, host: str, expired: bool, reason: str
) -> None:
    """Not "could not be reached": the reason, and (a private CA) what the operator can do."""
    # Trusting the CA for the expired and misnamed ones, so the reason is theirs alone.
    trusted = None if host == "127.0.0.1" and not expired else private_ca.ca_file
    with (
        https_site(private_ca, host, expired=expired) as site,
        pytest.raises(CertificateRejected) as raised,
    ):
        fetch(site.url + "/", Policy(allow_loopback=True, ca_file=trusted))

    said = str(raised.value)
    assert said.startswith("127.0.0.1's TLS certificate was not accepted (")
    assert reason in said
    assert "CONTENTPLATFORM_OUTBOUND_CA_FILE" in said
    assert not isinstance(raised.value, Unreachable)  # nothing to retry


def test_a_private_ca_in_the_ca_file_is_trusted_beside_the_public_ones(
    private_ca: PrivateCA,
) -> None:
    with https_site(private_ca) as site:
        response = fetch(site.url + "/", Policy(allow_loopback=True, ca_file=private_ca.ca_file))

    assert (response.status, response.json()) == (200, {"secure": True})
    # The public CAs are trusted still (certifi's bundle), besides the operator's.
    context = outbound.tls_context(private_ca.ca_file)
    assert len(context.get_ca_certs()) == len(outbound.tls_context().get_ca_certs()) + 1


def test_a_tls_handshake_that_fails_otherwise_is_unreachable(stub: StubServer) -> None:
    """https to a port that speaks http: no certificate to blame, and maybe worth a retry."""
    with pytest.raises(Unreachable, match=re.escape("(TLS handshake failed: ")):
        fetch(f"https://127.0.0.1:{port_of(stub)}/", Policy(allow_loopback=True))


def test_a_ca_file_that_holds_no_certificate_stops_the_service_at_start(tmp_path: Path) -> None:
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate")

    with pytest.raises(ValueError, match="CONTENTPLATFORM_OUTBOUND_CA_FILE"):
        Settings(_env_file=None, outbound_ca_file=not_pem)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="CONTENTPLATFORM_OUTBOUND_CA_FILE"):
        Settings(_env_file=None, outbound_ca_file=tmp_path / "missing.pem")  # type: ignore[call-arg]
