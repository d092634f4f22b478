"""A receiver of outbound webhooks on loopback, as a tenant would run one: it records every
request, answers what a test scripts (500, 500, then 200; a Retry-After; a slow answer), and
checks each signature with the `standardwebhooks` library (`Webhook(secret).verify(body,
headers)`), as a real receiver does. Thread-safe; for the tests and the bench alike.

    with WebhookReceiver() as receiver:
        created = ...createEndpoint {url: receiver.url, ...}
        receiver.trust(created["secret"])
        receiver.script(500, 500)          # then the default: 200
        ...
        receiver.wait_for(3)               # three requests seen (bounded)
        assert [r.status for r in receiver.received] == [500, 500, 200]
        assert all(r.verified for r in receiver.received)

`received` holds every request with what it was answered; `verified` says whether any trusted
secret verifies its signature (the receiver answers regardless, so a test decides what a bad
signature means). `ids()` are the `webhook-id`s of the requests, `events()` the verified bodies
kept once per `webhook-id`, as the spec asks receivers to do.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.support.servers import LoopbackServer, send


@dataclass(frozen=True)
class Answer:
    """What the receiver answers one request with."""

    status: int = 200
    body: Any = field(default_factory=lambda: {"received": True})
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a slow receiver, a timeout)


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # names lowercased
    body: bytes
    at: float  # time.monotonic() when it arrived
    status: int  # what it was answered
    verified: bool  # whether a trusted secret verifies its signature
    verified_by: tuple[str, ...]  # the trusted secrets that do

    @property
    def webhook_id(self) -> str:
        return self.headers.get("webhook-id", "")

    @property
    def signatures(self) -> list[str]:
        return self.headers.get("webhook-signature", "").split()

    def json(self) -> Any:
        return json.loads(self.body)


class WebhookReceiver(LoopbackServer):
    def __init__(self, *secrets: str, path: str = "/hooks") -> None:
        super().__init__()
        self.path = path
        # Where it listens, and the URL to give an endpoint.
        self.base_url = self.url
        self.url = f"{self.base_url}{path}"
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.received: list[Received] = []
        self._secrets: list[str] = list(secrets)
        self._script: list[Answer] = []
        self.default = Answer()

    def trust(self, *secrets: str) -> None:
        """Verify signatures with these secrets too (one endpoint's, or a rotation's)."""
        with self.lock:
            self._secrets.extend(secrets)

    def script(self, *answers: int | Answer) -> None:
        """Answer the next requests with these, in order; then the default."""
        with self.lock:
            self._script.extend(a if isinstance(a, Answer) else Answer(status=a) for a in answers)

    def always(self, answer: int | Answer) -> None:
        """Answer every request not scripted with this (e.g. 503: a receiver that is down)."""
        with self.lock:
            self.default = answer if isinstance(answer, Answer) else Answer(status=answer)

    def ids(self) -> list[str]:
        with self.lock:
            return [request.webhook_id for request in self.received]

    def events(self) -> list[dict[str, Any]]:
        """The verified bodies, one per `webhook-id`, in the order they first arrived."""
        seen: dict[str, dict[str, Any]] = {}
        with self.lock:
            for request in self.received:
                if request.verified and request.webhook_id not in seen:
                    seen[request.webhook_id] = request.json()
        return list(seen.values())

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        """Wait until at least `count` requests arrived (bounded): all of them."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{len(self.received)} of {count} webhook requests arrived in {timeout}s"
                    )
                self.arrived.wait(left)
            return list(self.received)

    def _verified_by(
        self, headers: dict[str, str], body: bytes, secrets: Iterable[str]
    ) -> tuple[str, ...]:
        found = []
        for secret in secrets:
            try:
                Webhook(secret).verify(body, headers)
            except WebhookVerificationError:
                continue
            found.append(secret)
        return tuple(found)

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("content-length") or 0)
        body = request.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in request.headers.items()}
        with self.lock:
            answer = self._script.pop(0) if self._script else self.default
            secrets = list(self._secrets)
        verified_by = self._verified_by(headers, body, secrets)
        received = Received(
            path=request.path,
            headers=headers,
            body=body,
            at=time.monotonic(),
            status=answer.status,
            verified=bool(verified_by),
            verified_by=verified_by,
        )
        with self.arrived:
            self.received.append(received)
            self.arrived.notify_all()
        if answer.delay:
            time.sleep(answer.delay)
        send(request, answer.status, answer.headers, answer.body)
