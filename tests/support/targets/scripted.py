"""What the stand-in publishing targets share: a threaded HTTP server on loopback that records
every request and can be scripted to fail, so retry paths can be tested.

A target subclasses `ScriptedServer`, implementing `handle(request)` (its protocol) and
`error_body(status, message, code)` (its error shape). Tests script failures for the next
requests that match a method and/or path; unmatched requests are handled normally:

    server.fail(Failure(500), times=2)                    # the next two requests answer 500
    server.fail(Failure(429, headers={"retry-after": "7"}), method="POST")
    server.fail(Failure(500, after=True), method="POST")  # the write happens, then 500: an
                                                          # answer lost on its way back
    server.fail(Failure(after=True, delay=1.0))           # answers after the client gave up
    server.fail(Failure(drop=True))                       # hangs up without answering
    server.fail(Failure(401, body={"any": "body"}))       # a body of the test's own

`server.requests` lists every request seen (`Seen`, header names lowercased), failed ones too.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.support.servers import LoopbackServer, send

# (status, headers, body): a body that is not bytes is sent as JSON.
Answer = tuple[int, dict[str, str], Any]


@dataclass(frozen=True)
class Seen:
    method: str
    path: str  # without the query
    query: dict[str, str]
    headers: dict[str, str]  # names lowercased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Failure:
    status: int = 500
    message: str | None = None  # None: the status's reason phrase
    code: str | None = None  # the target's error code, where its errors carry one
    body: Any = None  # None: the target's own error body for status, message and code
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering
    # Handle the request first (a create creates), then answer with the failure.
    after: bool = False
    # Close the connection without any answer (after handling it, with `after`).
    drop: bool = False


@dataclass
class _Scripted:
    failure: Failure
    times: int
    method: str | None
    path: str | None

    def matches(self, request: Seen) -> bool:
        return self.method in (None, request.method) and self.path in (None, request.path)


class ScriptedServer(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Seen] = []
        self.lock = threading.RLock()
        self._script: list[_Scripted] = []

    def fail(
        self,
        failure: Failure,
        *,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        """Answer the next `times` requests matching `method` and `path` with `failure`."""
        with self.lock:
            self._script.append(_Scripted(failure, times, method, path))

    def seen(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        """The requests seen, those matching `method` and `path` when given."""
        with self.lock:
            return [
                r
                for r in self.requests
                if method in (None, r.method) and (path is None or r.path == path)
            ]

    # What a target implements.

    def handle(self, request: Seen) -> Answer:
        raise NotImplementedError

    def error_body(self, status: int, message: str, code: str | None) -> Any:
        raise NotImplementedError

    def failure_answer(self, failure: Failure) -> Answer:
        message = failure.message or HTTPStatus(failure.status).phrase
        body = failure.body
        if body is None:
            body = self.error_body(failure.status, message, failure.code)
        return failure.status, dict(failure.headers), body

    # Plumbing.

    def _next_failure(self, request: Seen) -> Failure | None:
        for scripted in self._script:
            if scripted.matches(request):
                scripted.times -= 1
                if scripted.times <= 0:
                    self._script.remove(scripted)
                return scripted.failure
        return None

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        parts = urlsplit(handler.path)
        request = Seen(
            method=handler.command,
            path=parts.path,
            query=dict(parse_qsl(parts.query, keep_blank_values=True)),
            headers={name.lower(): value for name, value in handler.headers.items()},
            body=body,
        )
        with self.lock:
            self.requests.append(request)
            failure = self._next_failure(request)
            answer = self.handle(request) if failure is None or failure.after else None
        if failure is not None:
            time.sleep(failure.delay)
            if failure.drop:
                handler.close_connection = True
                return
            answer = self.failure_answer(failure)
        assert answer is not None
        send(handler, *answer)
