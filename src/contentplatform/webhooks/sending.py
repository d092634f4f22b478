"""One attempt of a delivery: the signed POST through the guarded outbound client, and what its
answer means.

- 2xx within the timeout (`webhook_timeout_seconds`, 15 s): succeeded.
- 410 Gone: the receiver says the endpoint is gone for good; the endpoint is disabled.
- 408, 429, 5xx, a timeout, a dropped or refused connection: tried again (a Retry-After is
  honoured for 408, 429 and 5xx).
- A redirect, another 4xx, or a URL the outbound guard refuses now (its host resolves to a
  private address): failed without retrying. The same bytes would meet the same refusal; once
  the receiver is fixed, webhooks.redeliver sends them again.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from contentplatform.config import Settings
from contentplatform.kit import outbound
from contentplatform.webhooks import messages

Verdict = Literal["succeeded", "retry", "failed", "gone"]

MAX_EXCERPT_BYTES = 2048
# A receiver's answer is read up to this (its excerpt is kept); a larger one fails the attempt.
MAX_RESPONSE_BYTES = 1024 * 1024
MAX_ERROR = 500
# POSTs one process has in flight at most: an event for 100 endpoints, or a burst of events,
# waits its turn instead of opening a socket per delivery at once.
MAX_IN_FLIGHT = 64
_RETRIED = frozenset({408, 429})


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to (a DBOS step's output: JSON, and never a secret)."""

    verdict: Verdict
    at: str  # when it was sent, RFC 3339
    latency_ms: int
    status: int | None = None
    error: str | None = None
    excerpt: str | None = None
    retry_after: float | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, data: dict[str, Any]) -> Outcome:
        return cls(**data)

    @property
    def sent_at(self) -> datetime:
        return datetime.fromisoformat(self.at)


def policy(settings: Settings) -> outbound.Policy:
    """The outbound guard as for publishers, with the webhook's timeout and no redirects."""
    timeout = settings.webhook_timeout_seconds
    return outbound.policy_of(
        settings,
        connect_timeout=min(5.0, timeout),
        timeout=timeout,
        max_response_bytes=MAX_RESPONSE_BYTES,
        max_redirects=0,
    )


# One client per event loop and policy: it keeps no connection alive (kit/outbound.py), so
# sharing it only saves making an HTTP client, and its TLS context, per attempt.
_clients: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[outbound.Policy, outbound.GuardedClient]
] = weakref.WeakKeyDictionary()


_in_flight: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _slots() -> asyncio.Semaphore:
    return _in_flight.setdefault(asyncio.get_running_loop(), asyncio.Semaphore(MAX_IN_FLIGHT))


def client(settings: Settings) -> outbound.GuardedClient:
    guard = policy(settings)
    made = _clients.setdefault(asyncio.get_running_loop(), {})
    if guard not in made:
        made[guard] = outbound.GuardedClient(guard)
    return made[guard]


async def check_url(settings: Settings, url: str) -> str | None:
    """Why `url` may not be an endpoint's (its form, or an address its host resolves to now),
    or None when it may."""
    guard = policy(settings)
    try:
        await outbound.checked_address(outbound.check_url(url, guard), guard)
    except outbound.OutboundError as error:
        return str(error)
    return None


async def post(
    settings: Settings, url: str, message_id: str, body: str, secrets: Sequence[str]
) -> Outcome:
    """Send `body` to `url`, signed with `secrets`, once; never raises for what the receiver
    or the network does. Waits for one of the process's slots first: the timestamp and the
    latency are the request's own."""
    async with _slots():
        return await _post(settings, url, message_id, body, secrets)


async def _post(
    settings: Settings, url: str, message_id: str, body: str, secrets: Sequence[str]
) -> Outcome:
    now = datetime.now(UTC)
    at = now.isoformat()
    if len(body) > messages.MAX_BODY_BYTES:  # ASCII JSON: characters are bytes
        return Outcome("failed", at, 0, error="The body is larger than 256 KB; it is not sent.")
    headers = messages.signed_headers(message_id, body, secrets, now)
    started = time.monotonic()

    def elapsed() -> int:
        return round((time.monotonic() - started) * 1000)

    try:
        response = await client(settings).request(
            "POST", url, headers=headers, content=body.encode()
        )
    except outbound.Refused as error:
        # With no redirect allowed, the guard refuses one as "more than 0 redirects".
        reason = (
            "The endpoint answered with a redirect, which is not followed: give the final URL."
            if "redirect" in str(error)
            else str(error)
        )
        return Outcome("failed", at, elapsed(), error=reason[:MAX_ERROR])
    except outbound.OutboundError as error:  # unreachable, timed out, answered too much
        return Outcome("retry", at, elapsed(), error=str(error)[:MAX_ERROR])
    latency = elapsed()
    excerpt = response.body[:MAX_EXCERPT_BYTES].decode("utf-8", errors="replace") or None
    status = response.status
    if 200 <= status < 300:
        return Outcome("succeeded", at, latency, status=status, excerpt=excerpt)
    said = f"The endpoint answered {status}."
    if status == 410:
        return Outcome("gone", at, latency, status=status, error=said, excerpt=excerpt)
    if status >= 500 or status in _RETRIED:
        wait = outbound.retry_after_seconds(response.headers.get("retry-after"))
        return Outcome("retry", at, latency, status, said, excerpt, wait)
    if 300 <= status < 400:
        said = f"The endpoint answered {status}, a redirect, which is not followed."
    return Outcome("failed", at, latency, status=status, error=said, excerpt=excerpt)
