"""Request bodies are limited as they stream in (kit.http.BodyLimitMiddleware): a 1 GiB body to
every kind of route is refused with a 413 problem before the service has read more than its
limit, declared or chunked, with or without a token, and the service's memory does not grow with
it; a normal body still passes.

Against a real `serve` process, so its memory is its own; bodies are sent from a raw socket, which
stops sending as soon as the answer comes (an HTTP client would insist on sending it all)."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.processes import Service, ServiceClient, Services

GIB = 1024**3
CHUNK = 1024 * 1024
# What the OS may buffer between a client and a server that stopped reading (both sockets'
# buffers on loopback): the bytes a client gets sent beyond what the service read.
BUFFERED = 32 * 1024 * 1024


@dataclass
class Refusal:
    status: int
    content_type: str
    body: dict[str, object]
    sent: int  # bytes of the body the client got to send before the answer
    seconds: float


def send_huge(service: Service, path: str, headers: dict[str, str], *, declared: bool) -> Refusal:
    """POST a 1 GiB body of zeros to `path`, chunked or with its Content-Length, until the
    service answers; the answer and how much was sent."""
    address = urlsplit(service.url)
    sock = socket.create_connection((address.hostname, address.port))
    framing = {"content-length": str(GIB)} if declared else {"transfer-encoding": "chunked"}
    head = "".join(
        f"{name}: {value}\r\n"
        for name, value in {
            "host": address.netloc,
            "content-type": "application/json",
            **headers,
            **framing,
        }.items()
    )
    sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode())
    sock.setblocking(False)
    started = time.monotonic()
    frames = _frames(declared)
    pending = memoryview(b"")
    sent = 0
    answer = b""
    try:
        while time.monotonic() - started < 60:
            readable, writable, _ = select.select([sock], [sock], [], 1)
            if readable:
                break
            if writable:
                if not pending:
                    pending = memoryview(next(frames))
                try:
                    count = sock.send(pending)
                except (BrokenPipeError, ConnectionResetError):
                    break
                pending, sent = pending[count:], sent + count
        seconds = time.monotonic() - started
        sock.setblocking(True)
        sock.settimeout(30)
        while b"\r\n\r\n" not in answer or not _complete(answer):
            piece = sock.recv(65536)
            if not piece:
                break
            answer += piece
    finally:
        sock.close()
    status_line, _, rest = answer.partition(b"\r\n")
    header_text, _, body = rest.partition(b"\r\n\r\n")
    answered = dict(
        (line.split(b":", 1)[0].strip().lower().decode(), line.split(b":", 1)[1].strip().decode())
        for line in header_text.split(b"\r\n")
        if b":" in line
    )
    return Refusal(
        status=int(status_line.split()[1]),
        content_type=answered.get("content-type", ""),
        body=json.loads(body) if body else {},
        sent=sent,
        seconds=seconds,
    )


def _frames(declared: bool) -> Iterator[bytes]:
    zeros = b"0" * CHUNK
    for _ in range(GIB // CHUNK):
        yield zeros if declared else f"{CHUNK:x}\r\n".encode() + zeros + b"\r\n"
    yield b"" if declared else b"0\r\n\r\n"


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return True


def memory_kib(service: Service) -> tuple[int, int]:
    """The service process's resident memory now and at its peak (VmRSS, VmHWM), in KiB."""
    found = {}
    for line in Path(f"/proc/{service.process.pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0])
    return found["VmRSS"], found["VmHWM"]


@pytest.fixture
def service(services: Services) -> Service:
    # A limit of 4 MiB for operations, the inbound events' default of 1 MiB.
    return services.start(max_request_bytes=str(4 * 1024 * 1024))


def test_a_gigabyte_body_is_refused_as_it_streams_in_on_every_kind_of_route(
    services: Services, service: Service
) -> None:
    editor = ServiceClient.of_new_org(services, service, "limits")
    before, peak_before = memory_kib(service)
    operation_limit, event_limit = 4 * 1024 * 1024, 1024 * 1024
    routes = [
        ("/api/webhooks/payments", {"stripe-signature": "t=1,v1=00"}, event_limit),
        ("/api/webhooks/identity", {"svix-id": "msg_1"}, event_limit),
        ("/v1/drafts", editor.headers, operation_limit),
        ("/api/rpc/drafts.createDraft", editor.headers, operation_limit),
    ]
    for path, headers, limit in routes:
        for declared in (True, False):
            refused = send_huge(service, path, headers, declared=declared)
            where = f"{path} ({'declared' if declared else 'chunked'}, {refused.seconds:.2f} s)"
            assert refused.status == 413, where
            assert refused.content_type == "application/problem+json", where
            assert refused.body["code"] == "BAD_REQUEST", where
            assert str(limit) in str(refused.body["detail"]), where
            assert refused.sent <= limit + BUFFERED, where
            print(where, f"{refused.sent / CHUNK:.0f} MiB sent before the 413")

    # Without a token, an operation's body is never read: 401 before it.
    refused = send_huge(service, "/v1/drafts", {}, declared=False)
    assert refused.status == 401
    assert refused.sent <= BUFFERED

    after, peak_after = memory_kib(service)
    print(f"service memory: {before} -> {after} KiB, peak {peak_before} -> {peak_after} KiB")
    assert after - before < 50 * 1024
    assert peak_after - max(peak_before, before) < 50 * 1024

    # A normal body passes, a large one under the limit too.
    made = editor.request("POST", "/v1/drafts", json={"title": "Still fine"})
    assert made["title"] == "Still fine"
    # 500,000 characters, each sent as a 6-byte JSON escape: a 3 MB body, under the 4 MiB limit.
    content = "<p>" + "é" * 500_000 + "</p>"
    big = editor.request("POST", "/v1/drafts", json={"title": "Big", "content": content})
    assert big["content"].count("é") == 500_000
