"""Guards that keep a test's network traffic on loopback, and a fake DNS for the guarded client.

`no_outside_connections()` patches the socket layer for as long as it is open: any attempt to
connect or send to an address outside loopback (127.0.0.0/8, ::1, ::ffff:127.x), and any real
DNS lookup of a name other than "localhost", raises `OutsideConnection` *before* a packet
leaves, and is recorded: leaving the block raises `OutsideConnection` again (over any other
error, kept as its context), so the test fails even when the code under test swallows the error
or wraps it (anyio raises ExceptionGroups). Loopback traffic (the suite's own servers,
PostgreSQL, Redis) is untouched. It covers `socket.socket.connect` / `connect_ex` / `sendto`
(which `socket.create_connection`, asyncio's default loop, anyio and httpx all end in),
`socket.getaddrinfo` (numeric literals such as "127.1" or "2130706433" are resolved locally and
allowed) and, when uvloop is installed, the uvloop loop's own `create_connection` /
`getaddrinfo`, which bypass the Python socket calls. Traffic from child processes is not seen.
Use it as a fixture:

    @pytest.fixture(autouse=True)
    def network() -> Iterator[NetworkGuard]:
        with no_outside_connections() as guard:
            yield guard

(`network_guard` below is that fixture, not autouse; import it or list this module in
`pytest_plugins`.) `guard.connections` lists the loopback (host, port) pairs connected to
(`guard.here`: those of the guard's own thread), so a test can also prove that nothing was
connected to at all.

`stand_in_network()` is for inputs nobody chose (the fuzz pass): while open, every host name
resolves to 127.0.0.1 and every request the guarded client lets through is answered by a
stand-in (503 unless told otherwise) without opening a socket, so an arbitrary URL in a
publisher's config can reach neither the internet nor a loopback port it happens to name. The
guarded client's own checks (schemes, private addresses) still run first.

`fake_dns({"cms.test": ["127.0.0.1"]})` installs a resolver into
`contentplatform.kit.outbound.resolve`, the one the guarded client looks up at each request:
names in the mapping (case-insensitive) resolve to the given addresses, IP literals resolve to
themselves, and any other name raises `UnknownHost` and is recorded (never real DNS). The
returned `FakeDns.asked` lists the names looked up, in order. A `GuardedClient` built with a
`resolver=` of its own does not consult it. Other code's DNS lookups are the guard's business.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from contentplatform.kit import outbound


class OutsideConnection(AssertionError):
    """A test tried to reach (or look up) something outside loopback."""


class UnknownHost(AssertionError):
    """The guarded client asked the fake DNS for a name the test did not map."""


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


class NetworkGuard:
    def __init__(self) -> None:
        self.refused: list[str] = []
        # Every loopback (host, port) connected to while open, by any thread of the process
        # (the suite's own service runs in threads of the test process).
        self.connections: list[tuple[str, int]] = []
        # Those the guard's own thread made: what a test that runs the code in its own thread
        # (asyncio.run) made, without what the service's background work did meanwhile (a
        # delivery retried to an earlier test's receiver).
        self.here: list[tuple[str, int]] = []
        self._thread = threading.get_ident()

    def refuse(self, what: str) -> OutsideConnection:
        self.refused.append(what)
        return OutsideConnection(f"the test tried to {what}; only loopback is allowed")

    def check_address(self, family: int, address: Any, action: str) -> None:
        if family not in (socket.AF_INET, socket.AF_INET6):
            return  # Unix sockets and the like stay on this machine.
        host, port = str(address[0]), int(address[1])
        if not is_loopback_host(host):
            raise self.refuse(f"{action} {host} port {port}")
        self.connections.append((host, port))
        if threading.get_ident() == self._thread:
            self.here.append((host, port))

    def check_lookup(self, original: Any, host: Any, port: Any) -> None:
        if host is None:
            return
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name in ("", "localhost"):
            return
        try:
            original(name, port, flags=socket.AI_NUMERICHOST)
        except socket.gaierror:
            raise self.refuse(f"look up {name!r} in real DNS") from None
        # A numeric literal: resolved here without any query; connecting is checked later.


@contextlib.contextmanager
def no_outside_connections() -> Iterator[NetworkGuard]:
    """While open, no connection, datagram or DNS query may go outside loopback."""
    guard = NetworkGuard()
    plain = socket.socket
    connect, connect_ex, sendto = plain.connect, plain.connect_ex, plain.sendto
    getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> None:
        guard.check_address(self.family, address, "connect to")
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        guard.check_address(self.family, address, "connect to")
        return connect_ex(self, address)

    def guarded_sendto(self: socket.socket, data: Any, *flags_and_address: Any) -> int:
        guard.check_address(self.family, flags_and_address[-1], "send a datagram to")
        return sendto(self, data, *flags_and_address)

    def guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        flags = kwargs.get("flags", args[3] if len(args) > 3 else 0)
        if not flags & socket.AI_NUMERICHOST:  # that flag forbids a query by itself
            guard.check_lookup(getaddrinfo, host, port)
        return getaddrinfo(host, port, *args, **kwargs)

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(plain, "connect", guarded_connect)
            patch.setattr(plain, "connect_ex", guarded_connect_ex)
            patch.setattr(plain, "sendto", guarded_sendto)
            patch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
            _guard_uvloop(guard, patch, getaddrinfo)
            yield guard
    finally:
        # Raised even over another error (which stays attached as its context): the attempt
        # may have been swallowed, wrapped (anyio raises ExceptionGroups) or turned into a
        # different error by the code under test.
        if guard.refused:
            raise OutsideConnection(
                "the test tried to reach outside loopback: " + "; ".join(guard.refused)
            )


def _guard_uvloop(guard: NetworkGuard, patch: pytest.MonkeyPatch, getaddrinfo: Any) -> None:
    """uvloop connects and resolves in libuv, past the Python socket calls patched above."""
    try:
        import uvloop
    except ImportError:
        return
    loop_class = uvloop.Loop
    create_connection, loop_getaddrinfo = loop_class.create_connection, loop_class.getaddrinfo

    async def guarded_create_connection(
        self: Any, factory: Any, host: Any = None, port: Any = None, **kwargs: Any
    ) -> Any:
        if host is not None:
            family = socket.AF_INET6 if ":" in str(host) else socket.AF_INET
            guard.check_address(family, (host, port or 0), "connect to")
        return await create_connection(self, factory, host, port, **kwargs)

    async def guarded_loop_getaddrinfo(self: Any, host: Any, port: Any, **kwargs: Any) -> Any:
        guard.check_lookup(getaddrinfo, host, port)
        return await loop_getaddrinfo(self, host, port, **kwargs)

    patch.setattr(loop_class, "create_connection", guarded_create_connection)
    patch.setattr(loop_class, "getaddrinfo", guarded_loop_getaddrinfo)


@pytest.fixture
def network_guard() -> Iterator[NetworkGuard]:
    with no_outside_connections() as guard:
        yield guard


class FakeDns:
    def __init__(self, mapping: Mapping[str, list[str]]) -> None:
        self.mapping = {name.lower(): list(addresses) for name, addresses in mapping.items()}
        self.asked: list[str] = []
        self.unknown: list[str] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        with contextlib.suppress(ValueError):
            return [str(ipaddress.ip_address(host))]
        addresses = self.mapping.get(host.lower())
        if addresses is None:
            self.unknown.append(host)
            raise UnknownHost(f"the test did not map {host!r} in fake_dns (no real DNS in tests)")
        return addresses


@contextlib.contextmanager
def fake_dns(mapping: Mapping[str, list[str]]) -> Iterator[FakeDns]:
    """While open, the guarded client resolves host names from `mapping` only."""
    dns = FakeDns(mapping)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(outbound, "resolve", dns.resolve)
            yield dns
    finally:
        if dns.unknown:
            names = ", ".join(map(repr, dns.unknown))
            raise UnknownHost(f"the test did not map {names} in fake_dns")


class StandInNetwork:
    def __init__(self, status: int) -> None:
        self.status = status
        self.requests: list[tuple[str, str]] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        with contextlib.suppress(ValueError):
            return [str(ipaddress.ip_address(host))]
        return ["127.0.0.1"]

    async def exchange(
        self,
        client: outbound.GuardedClient,
        method: str,
        url: Any,
        headers: dict[str, str],
        content: bytes | None,
    ) -> outbound.Response:
        # The guard's verdict on the address is kept; only the exchange itself is stood in for.
        await outbound.checked_address(url, client.policy, client.resolver)
        self.requests.append((method, str(url)))
        body = b'{"message": "stand-in network"}'
        headers_out = httpx.Headers({"content-type": "application/json"})
        return outbound.Response(self.status, headers_out, body, str(url))


@contextlib.contextmanager
def stand_in_network(status: int = 503) -> Iterator[StandInNetwork]:
    """While open, the guarded client sends nothing anywhere (see the module docstring)."""
    network = StandInNetwork(status)

    async def exchange(
        client: outbound.GuardedClient,
        method: str,
        url: Any,
        headers: dict[str, str],
        content: bytes | None,
    ) -> outbound.Response:
        return await network.exchange(client, method, url, headers, content)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(outbound, "resolve", network.resolve)
        patch.setattr(outbound.GuardedClient, "_exchange", exchange)
        yield network
