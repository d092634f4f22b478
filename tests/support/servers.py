"""Real HTTP servers for tests: the app under uvicorn, and small stand-ins for outside services."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import httpx
import uvicorn
from fastapi import FastAPI
from sqlalchemy import event

from contentplatform.app import create_app
from contentplatform.config import Settings
from contentplatform.core.procedures import ProcedureRouter
from contentplatform.kit import logs

# How long a client waits for the service's OpenAPI document: made at its first request, seconds
# of CPU (a minute under CI's load) in a thread (kit/docs.py).
DOCUMENT_TIMEOUT = 120


class AppServer:
    """Runs an ASGI app under uvicorn on a free loopback port, in a thread. `client()` talks to
    it over that socket; `in_process_client()` hands requests to the same app on the server's
    event loop, without the socket."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.loop: asyncio.AbstractEventLoop | None = None

        async def recording_loop(scope: Any, receive: Any, send: Any) -> None:
            # The loop the app's resources (engines, DBOS) belong to, for in_process_client().
            if scope["type"] == "lifespan":
                self.loop = asyncio.get_running_loop()
            await app(scope, receive, send)

        # The server keeps an idle connection longer than httpx's pool does (5 s, uvicorn's
        # default too): with equal timeouts, a request reusing a connection at the moment the
        # server closes it meets a reset (seen once under CI's load, on a document upload).
        config = uvicorn.Config(
            recording_loop,
            log_config=None,
            lifespan="on",
            timeout_graceful_shutdown=5,
            timeout_keep_alive=30,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def __enter__(self) -> AppServer:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the app server failed to start")
            self.thread.join(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.socket.close()

    def on_loop(self, work: Callable[[], None]) -> None:
        """Run `work` on the server's event loop and wait for it: where the app's engine runs
        its event listeners, so adding or removing one there cannot race their dispatch (from
        the test's thread it once did: "deque mutated during iteration" in a background
        statement)."""
        assert self.loop is not None, "the server has not started"
        done = concurrent.futures.Future[None]()

        def run() -> None:
            try:
                work()
                done.set_result(None)
            except BaseException as error:
                done.set_exception(error)

        self.loop.call_soon_threadsafe(run)
        done.result(timeout=30)

    def client(self) -> httpx.Client:
        """A client of the app over its socket, to use in a `with`."""
        return httpx.Client(base_url=self.url, timeout=30)

    def in_process_client(self) -> httpx.Client:
        """A client of the app that skips the socket (see InProcessTransport), to use in a
        `with`. Absolute URLs the app hands out (upload URLs) reach the app the same way."""
        assert self.loop is not None, "the server has not started"
        transport = InProcessTransport(self.app, self.loop)
        return httpx.Client(base_url=self.url, timeout=30, transport=transport)


class InProcessTransport(httpx.BaseTransport):
    """Hands each request to an ASGI app on the event loop it is served from (uvicorn's, in
    another thread), and waits for the whole answer: the app, its middleware and its resources
    are exactly those uvicorn serves, without the socket and without parsing HTTP on both ends.
    An error the app did not handle is the 500 a real client would get, as over the socket."""

    def __init__(self, app: Any, loop: asyncio.AbstractEventLoop, timeout: float = 60) -> None:
        self.asgi = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self.loop = loop
        self.timeout = timeout

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()

        async def exchange() -> tuple[int, httpx.Headers, bytes]:
            sent = httpx.Request(
                request.method, request.url, headers=request.headers, content=content
            )
            answer = await self.asgi.handle_async_request(sent)
            return answer.status_code, answer.headers, await answer.aread()

        future = asyncio.run_coroutine_threadsafe(exchange(), self.loop)
        status, headers, body = future.result(self.timeout)
        return httpx.Response(status, headers=headers, content=body, request=request)


@contextlib.contextmanager
def second_service(
    settings: Settings, routers: Sequence[ProcedureRouter] | None = None
) -> Iterator[AppServer]:
    """A second service on the suite's (already migrated) database, with `settings` of its own
    and only `routers` when given; without durable workers, which the suite's server runs."""
    with AppServer(create_app(settings, routers=routers, durable_workers=False)) as running:
        yield running


class LoopbackServer:
    """A threaded HTTP server on a free loopback port, in a thread: every request, whatever its
    method, goes to `serve(request)`, which a subclass implements."""

    def __init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                owner.serve(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, *args: Any) -> None:
                pass  # the tests look at what the server saw instead

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # A short poll: shutting down waits for the loop to notice.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class StubServer(LoopbackServer):
    """A tiny HTTP server whose responses a test sets: `route(method, path, handler)`.

    A handler gets (path, headers, body bytes) and returns (status, headers, body bytes or JSON).
    Every request is recorded in `requests`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[tuple[str, str], Callable[..., tuple[int, dict[str, str], Any]]] = {}
        self.requests: list[dict[str, Any]] = []

    def route(
        self, method: str, path: str, handler: Callable[..., tuple[int, dict[str, str], Any]]
    ) -> None:
        self.routes[(method, path)] = handler

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("content-length") or 0)
        body = request.rfile.read(length) if length else b""
        path = request.path.split("?", 1)[0]
        self.requests.append(
            {
                "method": request.command,
                "path": request.path,
                "headers": dict(request.headers),
                "body": body,
            }
        )
        handler = self.routes.get((request.command, path))
        if handler is None:
            status, headers, payload = 404, {}, {"error": "not found"}
        else:
            status, headers, payload = handler(request.path, dict(request.headers), body)
        send(request, status, headers, payload, content_type="application/json")


def send(
    request: BaseHTTPRequestHandler,
    status: int,
    headers: Mapping[str, str],
    payload: Any,
    *,
    content_type: str = "application/json; charset=UTF-8",
) -> None:
    """Answer `request`: a payload that is not bytes goes as JSON, with `content_type` unless
    `headers` name one; to HEAD, the headers alone."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    try:
        request.send_response(status)
        if "content-type" not in {name.lower() for name in headers}:
            request.send_header("content-type", content_type)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("content-length", str(len(data)))
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # The client gave up waiting (a scripted delay): nothing to answer.


@contextlib.contextmanager
def statements(server: AppServer) -> Iterator[list[str]]:
    """The statements `server` sends to its database meanwhile for requests, flattened and
    lowercased. Background work shares the engine: only what runs under a request's id is
    counted, as tests/api/test_queries_per_request.py does. The listener is added and removed on
    the server's loop, where the engine's connections run."""
    sent: list[str] = []
    engine = server.app.state.runtime.db.engine.sync_engine

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if logs.request_id():
            sent.append(" ".join(statement.split()).lower())

    server.on_loop(lambda: event.listen(engine, "before_cursor_execute", record))
    try:
        yield sent
    finally:
        server.on_loop(lambda: event.remove(engine, "before_cursor_execute", record))
