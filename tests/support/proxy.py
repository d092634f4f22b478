"""A TCP proxy on a free loopback port in front of a service, for tests that must lose a
connection mid-stream as a network or a load balancer loses it: `drop(path)` cuts every open
connection whose last request went to a path containing `path`, both ways, at once. It passes
bytes through untouched and notes each HTTP/1.1 exchange it carried (`exchanges`: the request's
method, target and headers, and the status of its answer), on connections the browser keeps
alive too, so a test sees what a browser sent (a reconnect's Last-Event-ID, a new URL) and what
it was answered."""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field
from typing import Self
from urllib.parse import urlsplit


@dataclass
class Exchange:
    method: str
    target: str
    headers: dict[str, str]  # names in lower case
    status: int | None = None  # None until the answer's status line has passed


@dataclass
class _Connection:
    client: socket.socket
    upstream: socket.socket
    exchanges: list[Exchange] = field(default_factory=list)
    answered: int = 0  # how many of `exchanges` have their status


class DroppingProxy:
    def __init__(self, target_url: str) -> None:
        parts = urlsplit(target_url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.exchanges: list[Exchange] = []
        self._open: list[_Connection] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()
        self.drop()

    def drop(self, path: str = "") -> int:
        """Cut the open connections whose latest request's target contains `path` (all of them
        by default); how many."""
        with self._lock:
            cut = [c for c in self._open if c.exchanges and path in c.exchanges[-1].target]
            if not path:
                cut = list(self._open)
            for connection in cut:
                for side in (connection.client, connection.upstream):
                    with contextlib.suppress(OSError):
                        side.shutdown(socket.SHUT_RDWR)
                    side.close()
                self._open.remove(connection)
        return len(cut)

    def to(self, path: str) -> list[Exchange]:
        """The exchanges with `path` in their target, in the order they began."""
        with self._lock:
            return [e for e in self.exchanges if path in e.target]

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self.target)
            connection = _Connection(client, upstream)
            with self._lock:
                self._open.append(connection)
            for source, sink, reading in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(
                    target=self._pump, args=(connection, source, sink, reading), daemon=True
                ).start()

    def _pump(
        self, connection: _Connection, source: socket.socket, sink: socket.socket, requests: bool
    ) -> None:
        reading = _Reading(requests)
        try:
            while chunk := source.recv(65536):
                if not reading.blind:
                    try:
                        self._note(connection, reading, chunk)
                    except (ValueError, IndexError):
                        reading.blind = True  # not HTTP as expected: pass it on, note no more
                sink.sendall(chunk)
        except OSError:
            pass  # cut, or the other side went away
        finally:
            for side in (source, sink):
                with contextlib.suppress(OSError):
                    side.shutdown(socket.SHUT_RDWR)
            with self._lock:
                if connection in self._open:
                    self._open.remove(connection)

    def _note(self, connection: _Connection, reading: _Reading, chunk: bytes) -> None:
        """Note the request heads (client to server) or the status lines (server to client)
        in what has come so far, passing over bodies (by their Content-Length, or their chunks:
        an event stream is one chunked body)."""
        data = reading.pending + chunk
        while data:
            if reading.skip:
                skipped = min(reading.skip, len(data))
                reading.skip -= skipped
                data = data[skipped:]
                continue
            if reading.chunked:
                if b"\r\n" not in data:
                    break
                line, _, data = data.partition(b"\r\n")
                size = int(line.split(b";")[0], 16)
                # A chunk and its CRLF; the last (empty) chunk is followed by the body's CRLF.
                reading.skip = size + 2 if size else 2
                reading.chunked = size > 0
                continue
            if b"\r\n\r\n" not in data:
                break
            head, _, data = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in lines[1:])
            }
            with self._lock:
                if reading.requests:
                    method, target, _ = lines[0].split(" ", 2)
                    exchange = Exchange(method, target, headers)
                    connection.exchanges.append(exchange)
                    self.exchanges.append(exchange)
                elif connection.answered < len(connection.exchanges):
                    answered = connection.exchanges[connection.answered]
                    answered.status = int(lines[0].split(" ", 2)[1])
                    connection.answered += 1
            if "content-length" in headers:
                reading.skip = int(headers["content-length"])
            elif "chunked" in headers.get("transfer-encoding", ""):
                reading.chunked = True
        reading.pending = data


@dataclass
class _Reading:
    """Where one direction of a connection is in its HTTP messages."""

    requests: bool
    pending: bytes = b""  # a head not yet whole
    skip: int = 0  # body bytes still to pass over
    chunked: bool = False  # in a chunked body, at the start of a chunk
    blind: bool = False  # met something it cannot read: notes nothing more
