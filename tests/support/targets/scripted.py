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
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

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


class ScriptedServer:
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.lock = threading.RLock()
        self._script: list[_Scripted] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                owner._serve(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

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

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
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
        _send(handler, *answer)


def _send(
    handler: BaseHTTPRequestHandler, status: int, headers: Mapping[str, str], payload: Any
) -> None:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    try:
        handler.send_response(status)
        sent = {name.lower() for name in headers}
        if "content-type" not in sent:
            handler.send_header("content-type", "application/json; charset=UTF-8")
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # The client gave up waiting (a scripted delay): nothing to answer.
