"""Deliveries: made from events, tried on the retry schedule, recorded attempt by attempt; and
the endpoint disabled when it fails for a whole retry window. Never commits (the dispatcher's
transaction, or each workflow step's).

The retry schedule is `webhook_retry_seconds`: entry k is the wait before attempt k + 1 (the
first, 0 by default, before the first attempt), each but a zero one with +-20 % jitter, so
retries of many deliveries do not meet; a Retry-After longer than the wait wins, up to 10 hours.
A redelivery runs the schedule again from its start (the next round) on the same delivery.

Locks are taken endpoint first, then delivery, everywhere (here and in service.py): an
attempt's record updates its endpoint, and disabling an endpoint cancels its deliveries.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.events import catalog
from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.kit.db import utcnow
from contentplatform.publishers.vault import vault
from contentplatform.webhooks import messages, repository
from contentplatform.webhooks.models import WebhookDelivery
from contentplatform.webhooks.sending import Outcome

JITTER = 0.2
# The longest a receiver's Retry-After holds an attempt back (the default schedule's longest
# wait); beyond it, the schedule's own wait applies.
MAX_RETRY_AFTER_SECONDS = 36_000.0
# Delivery ids are derived from the event and the endpoint: the same pair is the same delivery.
_DELIVERY_IDS = uuid.UUID("7d0e0d5c-4f3a-4a57-9a0e-5e1b2c3d4f60")
_SUBSCRIBABLE = frozenset(catalog.SUBSCRIBABLE)

# A workflow to start: (its id, its arguments: tenant, delivery, round, attempt).
Start = tuple[str, tuple[str, str, int, int]]
# The workflow of an event's first attempts: (its id, its arguments: tenant, event).
EventStart = tuple[str, tuple[str, str]]


def event_workflow_id(event_id: uuid.UUID | str) -> str:
    """`webhook-event:<event>`: the first attempt to every endpoint the event is for, sent
    together (one workflow per event, not per delivery: a fan-out to 100 endpoints is one)."""
    return f"webhook-event:{event_id}"


def first_of(delivery: WebhookDelivery) -> EventStart | None:
    """The event workflow a delivery's first attempt belongs to; None once it was made."""
    if delivery.round != 0 or delivery.round_attempts != 0:
        return None
    return event_workflow_id(delivery.event_id), (str(delivery.tenant_id), str(delivery.event_id))


def workflow_id(delivery_id: uuid.UUID | str, round_: int, attempt: int) -> str:
    """`webhook-delivery:<delivery>:<round>` starts a round (0 the first time, n the nth
    redelivery); its later attempts add `:<attempt>`."""
    base = f"webhook-delivery:{delivery_id}:{round_}"
    return base if attempt == 1 else f"{base}:{attempt}"


def start_of(delivery: WebhookDelivery) -> Start:
    """The workflow of the delivery's next attempt."""
    attempt = delivery.round_attempts + 1
    args = (str(delivery.tenant_id), str(delivery.id), delivery.round, attempt)
    return workflow_id(delivery.id, delivery.round, attempt), args


def retry_delay(
    schedule: Sequence[float], attempts_made: int, retry_after: float | None
) -> float | None:
    """Seconds to wait before attempt `attempts_made` + 1 of a round, or None when the
    schedule has no more."""
    if attempts_made >= len(schedule):
        return None
    wait = schedule[attempts_made] * random.uniform(1 - JITTER, 1 + JITTER)
    if retry_after is not None:
        wait = max(wait, min(retry_after, MAX_RETRY_AFTER_SECONDS))
    return wait


def window(schedule: Sequence[float]) -> timedelta:
    """How long a round of attempts lasts, jitter aside: what "failing for a whole retry
    window" means."""
    return timedelta(seconds=sum(schedule))


def redacted(url: str) -> str:
    """What events tell of an endpoint's URL: its scheme, host and port, and `/…` for a path or
    query, which may hold a token (`https://hooks.example.com/…`)."""
    parts = urlsplit(url)
    hidden = (parts.path not in ("", "/")) or bool(parts.query)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}" + ("/…" if hidden else "")


# --- fan-out ------------------------------------------------------------------------------------


async def fan_out(
    session: AsyncSession, settings: Settings, batch: Sequence[Event]
) -> list[EventStart]:
    """A delivery for each new event and each enabled endpoint of the event's own tenant that
    subscribes to its type; the workflows to start once this commits, one per event. One query
    reads the endpoints of every tenant in the batch."""
    wanted = [event for event in batch if event.type in _SUBSCRIBABLE]
    if not wanted:
        return []
    by_tenant: dict[uuid.UUID, list[tuple[uuid.UUID, frozenset[str]]]] = {}
    tenant_ids = {event.tenant_id for event in wanted}
    for tenant_id, subscriber, subscribed in await repository.subscribers(session, tenant_ids):
        by_tenant.setdefault(tenant_id, []).append((subscriber, frozenset(subscribed)))
    now = utcnow()
    first_wait = timedelta(seconds=settings.webhook_retry_seconds[0])
    rows: list[dict[str, Any]] = []
    starts: list[EventStart] = []
    for event in wanted:
        text: str | None = None
        for endpoint_id, types in by_tenant.get(event.tenant_id, ()):
            if event.type not in types:
                continue
            text = text or messages.body(event.type, event.created_at, event.payload)
            delivery_id = uuid.uuid5(_DELIVERY_IDS, f"{event.id}:{endpoint_id}")
            rows.append(
                {
                    "id": delivery_id,
                    "tenant_id": event.tenant_id,
                    "endpoint_id": endpoint_id,
                    "event_id": event.id,
                    "event_type": event.type,
                    "message_id": messages.message_id(event.id),
                    "test": False,
                    "status": "pending",
                    "error": None,
                    "round": 0,
                    "round_attempts": 0,
                    "round_started_at": None,
                    "attempt_count": 0,
                    "next_attempt_at": now + first_wait,
                    "request_body": text,
                    "response_excerpt": None,
                    "created_at": now,
                    "updated_at": now,
                }
            )
        if text is not None:
            starts.append((event_workflow_id(event.id), (str(event.tenant_id), str(event.id))))
    await repository.insert_deliveries(session, rows)
    return starts


# --- attempts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """What an attempt sends, and where: held in memory only (the secrets are open)."""

    url: str
    message_id: str
    body: str
    secrets: list[str]


async def prepare(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    delivery_id: uuid.UUID,
    round_: int,
    attempt: int,
) -> Prepared | None:
    """What attempt `attempt` of round `round_` sends; None when it is not due any more (the
    delivery ended, was redelivered or deleted, or its endpoint was disabled: then it is
    cancelled here)."""
    delivery = await repository.delivery(session, tenant_id, delivery_id)
    if not _awaits(delivery, round_, attempt):
        return None
    assert delivery is not None
    endpoint = await repository.endpoint(session, tenant_id, delivery.endpoint_id)
    if endpoint is None:
        return None
    if not endpoint.enabled:
        # Disabling cancelled it already, unless it was made just then: this one alone, so
        # no other delivery's lock is waited for here.
        locked = await repository.delivery(session, tenant_id, delivery_id, for_update=True)
        if locked is not None and _awaits(locked, round_, attempt):
            _finish(locked, "cancelled", _disabled(endpoint.disabled_reason))
        return None
    box = vault(settings)
    return Prepared(
        url=endpoint.url,
        message_id=delivery.message_id,
        body=delivery.request_body,
        secrets=[str(box.open(sealed)) for sealed in endpoint.secrets_sealed()],
    )


async def prepare_first(
    session: AsyncSession, settings: Settings, tenant_id: uuid.UUID, event_id: uuid.UUID
) -> list[tuple[WebhookDelivery, Prepared]]:
    """What the first attempt of each of the event's deliveries still to try sends (as
    `prepare` for one): two queries for all of them."""
    pending = await repository.first_round_pending(session, tenant_id, event_id)
    if not pending:
        return []
    endpoints = await repository.endpoints_by_id(
        session, tenant_id, {delivery.endpoint_id for delivery in pending}
    )
    box = vault(settings)
    secrets: dict[uuid.UUID, list[str]] = {}
    ready = []
    for delivery in pending:
        endpoint = endpoints.get(delivery.endpoint_id)
        if endpoint is None:
            continue
        if not endpoint.enabled:
            locked = await repository.delivery(session, tenant_id, delivery.id, for_update=True)
            if locked is not None and _awaits(locked, 0, 1):
                _finish(locked, "cancelled", _disabled(endpoint.disabled_reason))
            continue
        if endpoint.id not in secrets:
            secrets[endpoint.id] = [str(box.open(sealed)) for sealed in endpoint.secrets_sealed()]
        ready.append(
            (
                delivery,
                Prepared(
                    url=endpoint.url,
                    message_id=delivery.message_id,
                    body=delivery.request_body,
                    secrets=secrets[endpoint.id],
                ),
            )
        )
    return ready


def _awaits(delivery: WebhookDelivery | None, round_: int, attempt: int) -> bool:
    return (
        delivery is not None
        and delivery.status == "pending"
        and delivery.round == round_
        and delivery.round_attempts == attempt - 1
    )


async def record(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    delivery_id: uuid.UUID,
    round_: int,
    attempt: int,
    outcome: Outcome,
) -> float | None:
    """Keep what attempt `attempt` of round `round_` came to; the seconds to wait before the
    next one, or None when the delivery is over. Recording it twice (its step ran again)
    changes nothing and answers the same."""
    found = await repository.delivery(session, tenant_id, delivery_id)
    if found is None:
        return None
    await _lock_endpoint(session, tenant_id, found.endpoint_id)
    delivery = await repository.delivery(session, tenant_id, delivery_id, for_update=True)
    if delivery is None or delivery.round != round_:
        return None
    now = utcnow()
    if delivery.round_attempts >= attempt:
        if delivery.status == "pending" and delivery.next_attempt_at is not None:
            return max(0.0, (delivery.next_attempt_at - now).total_seconds())
        return None
    if delivery.status not in ("pending", "cancelled"):
        return None
    at = outcome.sent_at
    succeeded = outcome.verdict == "succeeded"
    delivery.attempt_count += 1
    await repository.add_attempt(
        session,
        {
            "id": uuid.uuid4(),
            "tenant_id": tenant_id,
            "delivery_id": delivery.id,
            "endpoint_id": delivery.endpoint_id,
            "n": delivery.attempt_count,
            "at": at,
            "succeeded": succeeded,
            "response_status": outcome.status,
            "latency_ms": outcome.latency_ms,
            "error": outcome.error,
            "response_excerpt": outcome.excerpt,
        },
    )
    delivery.round_attempts = attempt
    if attempt == 1:
        delivery.round_started_at = at
    delivery.response_excerpt = outcome.excerpt
    delivery.updated_at = now
    await repository.mark_endpoint(
        session, tenant_id, delivery.endpoint_id, succeeded=succeeded, at=at
    )
    if succeeded:
        _finish(delivery, "succeeded", None)
        return None
    if delivery.status == "cancelled":  # its endpoint was disabled while it was sent
        return None
    if outcome.verdict == "gone":
        _finish(delivery, "failed", None)
        await disable(session, tenant_id, delivery.endpoint_id, "gone")
        return None
    if outcome.verdict == "retry":
        schedule = settings.webhook_retry_seconds
        delay = retry_delay(schedule, attempt, outcome.retry_after)
        if delay is not None:
            delivery.next_attempt_at = now + timedelta(seconds=delay)
            return delay
        _finish(delivery, "exhausted", None)
        # Failing since this round's first attempt at least: the whole window.
        failing_before = delivery.round_started_at or at
    else:
        _finish(delivery, "failed", None)
        failing_before = now - window(settings.webhook_retry_seconds)
    await disable(
        session, tenant_id, delivery.endpoint_id, "failing", failing_before=failing_before
    )
    return None


async def record_first(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    sent: Sequence[tuple[uuid.UUID, uuid.UUID, Outcome]],
) -> list[tuple[uuid.UUID, float]]:
    """Keep what the first attempts of one event came to, as `record` does for each: the
    successes (most of them) in a few statements for all, the rest one by one; (delivery,
    wait) of those to retry. Recording again (the step ran again) changes nothing."""
    await repository.lock_endpoints(session, tenant_id, {endpoint for _, endpoint, _ in sent})
    succeeded = [each for each in sent if each[2].verdict == "succeeded"]
    waiting = await repository.awaiting_first(session, tenant_id, [d for d, _, _ in succeeded])
    await repository.record_first_successes(
        session,
        tenant_id,
        [
            {
                "delivery_id": delivery_id,
                "endpoint_id": endpoint_id,
                "at": outcome.sent_at,
                "response_status": outcome.status,
                "latency_ms": outcome.latency_ms,
                "response_excerpt": outcome.excerpt,
            }
            for delivery_id, endpoint_id, outcome in succeeded
            if delivery_id in waiting
        ],
        utcnow(),
    )
    retries = []
    for delivery_id, _, outcome in sent:
        if outcome.verdict == "succeeded":
            continue
        delay = await record(session, settings, tenant_id, delivery_id, 0, 1, outcome)
        if delay is not None:
            retries.append((delivery_id, delay))
    return retries


async def _lock_endpoint(
    session: AsyncSession, tenant_id: uuid.UUID, endpoint_id: uuid.UUID
) -> None:
    await repository.endpoint(session, tenant_id, endpoint_id, for_update=True)


def _finish(delivery: WebhookDelivery, status: str, error: str | None) -> None:
    delivery.status = status
    delivery.error = error
    delivery.next_attempt_at = None
    delivery.updated_at = utcnow()


def _disabled(reason: str | None) -> str:
    return f"Cancelled: the endpoint was disabled ({reason or 'manual'})."


async def disable(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    reason: str,
    *,
    failing_before: datetime | None = None,
) -> bool:
    """Disable an enabled endpoint (with `failing_before`: only when failing since then at
    least) and cancel its pending deliveries; whether this did. A disabling by failure or a 410
    is told as `webhook_endpoint.disabled` (its admins are notified); an admin's own is the
    update's audit event. The caller holds the endpoint's lock."""
    now = utcnow()
    disabled = await repository.disable_failing(
        session, tenant_id, endpoint_id, reason=reason, failing_before=failing_before, at=now
    )
    if not disabled:
        return False
    await cancel_pending(session, tenant_id, endpoint_id, reason)
    if reason != "manual":
        endpoint = await repository.endpoint(session, tenant_id, endpoint_id)
        assert endpoint is not None
        await session.refresh(endpoint)
        events.emit(
            session,
            tenant_id,
            "webhook_endpoint.disabled",
            resource_id=endpoint_id,
            payload={
                "endpoint_id": endpoint_id,
                "url": redacted(endpoint.url),
                "description": endpoint.description,
                "reason": reason,
                "failing_since": endpoint.failing_since,
            },
        )
    return True


async def cancel_pending(
    session: AsyncSession, tenant_id: uuid.UUID, endpoint_id: uuid.UUID, reason: str | None
) -> None:
    await repository.cancel_pending(session, tenant_id, endpoint_id, _disabled(reason), utcnow())


async def give_up(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    delivery_id: uuid.UUID,
    round_: int,
    attempt: int,
    reason: str,
) -> None:
    """The reconciler's word on an attempt whose workflow failed: the delivery fails."""
    delivery = await repository.delivery(session, tenant_id, delivery_id, for_update=True)
    if _awaits(delivery, round_, attempt):
        assert delivery is not None
        _finish(delivery, "failed", reason[:500])


async def overdue(session: AsyncSession, before: datetime, limit: int) -> list[WebhookDelivery]:
    return await repository.overdue(session, before, limit)


async def forget_older_than(session: AsyncSession, cutoff: datetime) -> int:
    return await repository.delete_older_than(session, cutoff)
