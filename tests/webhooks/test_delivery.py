"""Deliveries end to end, on the suite's server (its dispatcher and DBOS workers): an event
emitted for a tenant reaches the receiver of each subscribed endpoint of that tenant only,
signed so that the `standardwebhooks` library verifies it; 500s then 200 end in one success;
a receiver down for the whole retry window (three attempts in the suite: tests/conftest.py)
disables its endpoint; 410, other 4xx, redirects, 429 with Retry-After and timeouts each meet
their rule; redelivery keeps the `webhook-id`; the reconciler starts a delivery whose workflow
never started; the log forgets what is older than 30 days."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.events.models import Event
from contentplatform.kit.db import Database, utcnow
from contentplatform.webhooks import durable
from contentplatform.webhooks.models import WebhookDelivery
from tests.conftest import Run
from tests.support.database import select_all
from tests.support.problems import problem
from tests.support.webhook_receiver import Answer, WebhookReceiver
from tests.webhooks.support import Hooks, emit, message_id


def subscribed(
    hooks: Hooks, receiver: WebhookReceiver, url: str | None = None, **fields: Any
) -> dict[str, Any]:
    """An endpoint of `hooks` at `receiver` (or `url`), which trusts its secret."""
    created = hooks.create(url or receiver.url, **fields)
    receiver.trust(created["secret"])
    return created


def statuses(delivery: dict[str, Any]) -> list[int | None]:
    return [attempt["response_status"] for attempt in delivery["attempts"]]


def disabled_events(settings: Settings, tenant_id: uuid.UUID) -> list[dict[str, Any]]:
    rows = select_all(
        settings,
        select(Event).where(
            Event.tenant_id == tenant_id, Event.type == "webhook_endpoint.disabled"
        ),
    )
    return [row.payload for row in rows]


def test_an_event_reaches_its_endpoint_signed_as_the_spec_says(
    hooks: Hooks, receiver: WebhookReceiver, run: Run
):
    endpoint = subscribed(hooks, receiver, events=["draft.created"])
    emit(run, hooks.tenant_id, "draft.published")  # a type it does not subscribe to
    payload = {"draft_id": str(uuid.uuid4()), "title": "Watering succulents", "status": "draft"}
    event_id = emit(run, hooks.tenant_id, "draft.created", payload)

    (request,) = receiver.wait_for(1)
    assert request.verified, request.headers
    assert request.webhook_id == message_id(event_id)
    assert len(request.signatures) == 1 and request.signatures[0].startswith("v1,")
    assert abs(int(request.headers["webhook-timestamp"]) - time.time()) < 60
    assert request.headers["content-type"] == "application/json"
    body = request.json()
    assert set(body) == {"type", "timestamp", "data"}
    assert body["type"] == "draft.created" and body["data"] == payload
    assert datetime.fromisoformat(body["timestamp"]) <= datetime.now(UTC)

    delivery = hooks.wait_for_delivery(endpoint["id"])
    assert delivery["status"] == "succeeded"
    assert delivery["event_id"] == str(event_id) and delivery["event_type"] == "draft.created"
    assert delivery["webhook_id"] == message_id(event_id) and delivery["test"] is False
    assert delivery["request_body"] == request.body.decode()
    assert delivery["response_excerpt"] == '{"received": true}'
    assert delivery["next_attempt_at"] is None and delivery["error"] is None
    (attempt,) = delivery["attempts"]
    assert attempt["n"] == 1 and attempt["response_status"] == 200 and attempt["error"] is None
    assert attempt["response_excerpt"] == '{"received": true}'
    assert attempt["latency_ms"] >= 0

    shown = hooks.endpoint(endpoint["id"])
    assert shown["last_delivery"]["status"] == "succeeded" and shown["failing_since"] is None
    assert shown["stats_24h"]["succeeded"] == 1 and shown["stats_24h"]["failed"] == 0
    assert shown["stats_24h"]["p50_latency_ms"] == attempt["latency_ms"]
    assert len(receiver.received) == 1  # the unsubscribed type went nowhere


def test_500s_then_200_end_in_one_success(hooks: Hooks, receiver: WebhookReceiver, run: Run):
    endpoint = subscribed(hooks, receiver)
    receiver.script(500, 500)
    event_id = emit(run, hooks.tenant_id, "draft.created")

    tries = receiver.wait_for(3)
    assert [request.status for request in tries] == [500, 500, 200]
    assert {request.webhook_id for request in tries} == {message_id(event_id)}
    assert all(request.verified for request in tries)
    assert [request.body for request in tries] == [tries[0].body] * 3

    delivery = hooks.wait_for_delivery(endpoint["id"])
    assert delivery["status"] == "succeeded"
    assert statuses(delivery) == [500, 500, 200]
    assert [attempt["n"] for attempt in delivery["attempts"]] == [1, 2, 3]
    assert delivery["attempts"][0]["error"] == "The endpoint answered 500."
    assert delivery["response_excerpt"] == delivery["attempts"][-1]["response_excerpt"]
    assert len(hooks.deliveries(endpoint["id"])) == 1  # one delivery, not three
    shown = hooks.endpoint(endpoint["id"])
    assert shown["enabled"] is True and shown["failing_since"] is None
    assert shown["stats_24h"]["succeeded"] == 1 and shown["stats_24h"]["failed"] == 2


def test_an_endpoint_failing_for_long_is_disabled(
    hooks: Hooks, receiver: WebhookReceiver, run: Run, settings: Settings
):
    """A receiver down for the whole retry window: the delivery exhausted, the endpoint
    disabled (`failing`) and its admins told; enabled again, the delivery is sent anew."""
    endpoint = subscribed(hooks, receiver)
    receiver.always(503)
    event_id = emit(run, hooks.tenant_id, "draft.created")

    shown = hooks.wait_for_endpoint(endpoint["id"], lambda found: not found["enabled"])
    assert shown["disabled_reason"] == "failing" and shown["failing_since"] is not None
    assert shown["last_delivery"]["status"] == "failed"
    delivery = hooks.wait_for_delivery(endpoint["id"])
    assert delivery["status"] == "exhausted" and statuses(delivery) == [503, 503, 503]
    # Its admins hear of it (the notifications domain turns this event into notifications).
    (told,) = disabled_events(settings, hooks.tenant_id)
    assert told["endpoint_id"] == endpoint["id"] and told["reason"] == "failing"
    assert told["url"] == receiver.base_url + "/…"  # never the path, which may hold a token

    # Disabled, it is sent nothing more (once the dispatcher took that event: before the
    # endpoint is enabled again below).
    later = emit(run, hooks.tenant_id, "draft.created")
    deadline = time.monotonic() + 10
    while select_all(settings, select(Event.dispatched_at).where(Event.id == later)) == [None]:
        assert time.monotonic() < deadline, "the event was never dispatched"
        time.sleep(0.05)
    refused = hooks.request("webhooks.redeliver", {"id": delivery["id"]})
    assert problem(refused, 409, "CONFLICT")["disabled_reason"] == "failing"

    # Enabled again: a fresh start, and the exhausted delivery sent again with its id.
    receiver.always(200)
    enabled = hooks.ok("webhooks.updateEndpoint", {"id": endpoint["id"], "enabled": True})
    assert enabled["enabled"] is True and enabled["disabled_reason"] is None
    assert enabled["failing_since"] is None
    again = hooks.ok("webhooks.redeliver", {"id": delivery["id"]})
    assert again["status"] == "pending" and len(again["attempts"]) == 3
    done = hooks.wait_for_delivery(endpoint["id"], lambda found: found["status"] == "succeeded")
    assert done["id"] == delivery["id"] and statuses(done) == [503, 503, 503, 200]
    assert receiver.received[-1].webhook_id == message_id(event_id)
    assert receiver.received[-1].verified
    assert len(receiver.received) == 4  # the event emitted while it was disabled never went


def test_a_410_disables_the_endpoint_at_once(
    hooks: Hooks, receiver: WebhookReceiver, run: Run, settings: Settings
):
    endpoint = subscribed(hooks, receiver)
    receiver.script(410)
    emit(run, hooks.tenant_id, "draft.created")

    delivery = hooks.wait_for_delivery(endpoint["id"])
    assert delivery["status"] == "failed" and statuses(delivery) == [410]
    shown = hooks.endpoint(endpoint["id"])
    assert shown["enabled"] is False and shown["disabled_reason"] == "gone"
    assert [told["reason"] for told in disabled_events(settings, hooks.tenant_id)] == ["gone"]


def test_another_4xx_fails_without_retrying_and_a_redirect_is_not_followed(
    hooks: Hooks, receiver: WebhookReceiver, run: Run
):
    endpoint = subscribed(hooks, receiver)
    receiver.script(400)
    emit(run, hooks.tenant_id, "draft.created")
    refused = hooks.wait_for_delivery(endpoint["id"])
    assert refused["status"] == "failed" and statuses(refused) == [400]
    shown = hooks.endpoint(endpoint["id"])
    assert shown["enabled"] is True and shown["failing_since"] is not None

    elsewhere = f"{receiver.base_url}/elsewhere"
    receiver.script(Answer(302, headers={"location": elsewhere}))
    second = emit(run, hooks.tenant_id, "draft.created")
    moved = hooks.wait_for_delivery(
        endpoint["id"],
        lambda found: found["event_id"] == str(second) and found["status"] != "pending",
    )
    assert moved["status"] == "failed"
    assert "redirect" in moved["attempts"][0]["error"]
    assert [request.path for request in receiver.received] == ["/hooks", "/hooks"]

    # The suite's retry window is 0.6 s: on a slow machine the two failures may span it and
    # disable the endpoint. Enabled again (which clears the streak) either way, then
    # sent again once the receiver is fixed: the same id, signed afresh.
    hooks.ok("webhooks.updateEndpoint", {"id": endpoint["id"], "enabled": True})
    again = hooks.ok("webhooks.redeliver", {"id": refused["id"]})
    assert again["status"] == "pending"
    done = hooks.wait_for_delivery(
        endpoint["id"],
        lambda found: found["id"] == refused["id"] and found["status"] == "succeeded",
    )
    assert statuses(done) == [400, 200]
    assert receiver.received[-1].webhook_id == receiver.received[0].webhook_id
    assert receiver.received[-1].verified
    assert hooks.endpoint(endpoint["id"])["failing_since"] is None


def test_a_429_waits_for_its_retry_after(hooks: Hooks, receiver: WebhookReceiver, run: Run):
    endpoint = subscribed(hooks, receiver)
    receiver.script(Answer(429, headers={"retry-after": "2"}))
    emit(run, hooks.tenant_id, "draft.created")

    first, second = receiver.wait_for(2)
    # The schedule says 0.2 s; the receiver asked for 2.
    assert second.at - first.at >= 1.9
    delivery = hooks.wait_for_delivery(endpoint["id"])
    assert delivery["status"] == "succeeded" and statuses(delivery) == [429, 200]


def test_a_timeout_is_tried_again(hooks: Hooks, receiver: WebhookReceiver, run: Run):
    endpoint = subscribed(hooks, receiver)
    receiver.script(Answer(200, delay=3))  # past the suite's 2-second timeout
    emit(run, hooks.tenant_id, "draft.created")

    delivery = hooks.wait_for_delivery(endpoint["id"])
    assert delivery["status"] == "succeeded" and statuses(delivery) == [None, 200]
    timed_out = delivery["attempts"][0]
    assert "in time" in timed_out["error"] and timed_out["latency_ms"] >= 1900


def test_disabling_an_endpoint_cancels_what_it_has_pending(
    hooks: Hooks, receiver: WebhookReceiver, run: Run
):
    endpoint = subscribed(hooks, receiver)
    receiver.always(503)
    emit(run, hooks.tenant_id, "draft.created")
    receiver.wait_for(1)

    hooks.ok("webhooks.updateEndpoint", {"id": endpoint["id"], "enabled": False})
    (delivery,) = hooks.deliveries(endpoint["id"])
    assert delivery["status"] == "cancelled" and delivery["next_attempt_at"] is None
    assert "disabled" in delivery["error"]
    shown = hooks.endpoint(endpoint["id"])
    assert shown["enabled"] is False and shown["disabled_reason"] == "manual"


def test_a_draft_change_in_one_tenant_never_reaches_another_s_endpoints(
    hooks: Hooks, other_hooks: Hooks, run: Run
):
    with WebhookReceiver() as mine, WebhookReceiver() as theirs:
        own = subscribed(hooks, mine, events=["draft.status_changed"])
        other = subscribed(other_hooks, theirs, events=["draft.status_changed"])
        # Real changes: each tenant approves a draft of its own.
        ours = hooks.ok("drafts.createDraft", {"title": "Ours", "content": "<p>Ours.</p>"})
        hooks.ok("drafts.approve", {"id": ours["id"]})
        their = other_hooks.ok("drafts.createDraft", {"title": "Theirs", "content": "<p>T.</p>"})
        other_hooks.ok("drafts.approve", {"id": their["id"]})

        (got,) = mine.wait_for(1)
        (their_own,) = theirs.wait_for(1)
        hooks.wait_for_delivery(own["id"])
        other_hooks.wait_for_delivery(other["id"])
        data = got.json()["data"]
        assert (data["draft_id"], data["title"], data["from"], data["to"]) == (
            ours["id"],
            "Ours",
            "reviewing",
            "approved",
        )
        assert their_own.json()["data"]["draft_id"] == their["id"]
        assert got.verified and their_own.verified
        assert [d["event_type"] for d in other_hooks.deliveries(other["id"])] == [
            "draft.status_changed"
        ]
        time.sleep(0.3)  # nothing more arrives at either
        assert len(mine.received) == 1 and len(theirs.received) == 1


def test_each_endpoint_of_the_tenant_gets_the_event_once(
    hooks: Hooks, receiver: WebhookReceiver, run: Run
):
    endpoints = [subscribed(hooks, receiver, url=f"{receiver.url}?n={n}") for n in range(3)]
    hooks.create(receiver.url, events=["document.ready"])  # subscribed to something else
    event_id = emit(run, hooks.tenant_id, "draft.created")

    requests = receiver.wait_for(3)
    for endpoint in endpoints:
        assert hooks.wait_for_delivery(endpoint["id"])["status"] == "succeeded"
    assert sorted(request.path for request in requests) == [f"/hooks?n={n}" for n in range(3)]
    # One event, one webhook-id, whichever endpoint it went through.
    assert {request.webhook_id for request in requests} == {message_id(event_id)}
    assert all(request.verified for request in requests)
    assert len(receiver.received) == 3


def test_the_reconciler_starts_a_delivery_whose_workflow_never_started(
    hooks: Hooks, receiver: WebhookReceiver, run: Run
):
    """The crash between the listener's commit and the enqueue, made by hand: the row alone."""
    endpoint = subscribed(hooks, receiver)
    event_id = uuid.uuid4()
    body = '{"type":"draft.created","timestamp":"2026-01-01T00:00:00Z","data":{}}'

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            now = utcnow()
            session.add(
                WebhookDelivery(
                    id=uuid.uuid4(),
                    tenant_id=hooks.tenant_id,
                    endpoint_id=uuid.UUID(endpoint["id"]),
                    event_id=event_id,
                    event_type="draft.created",
                    message_id=message_id(event_id),
                    test=False,
                    status="pending",
                    round=0,
                    round_attempts=0,
                    attempt_count=0,
                    next_attempt_at=now - timedelta(minutes=1),
                    request_body=body,
                    created_at=now,
                    updated_at=now,
                )
            )

    run(scenario)
    (request,) = receiver.wait_for(1)
    assert request.webhook_id == message_id(event_id) and request.body.decode() == body
    assert request.verified
    assert hooks.wait_for_delivery(endpoint["id"])["status"] == "succeeded"


def test_the_log_forgets_deliveries_older_than_30_days(
    hooks: Hooks, receiver: WebhookReceiver, run: Run
):
    endpoint = subscribed(hooks, receiver)
    hooks.ok("webhooks.testEndpoint", {"id": endpoint["id"]})
    hooks.ok("webhooks.testEndpoint", {"id": endpoint["id"]})
    old, recent = hooks.deliveries(endpoint["id"])

    async def scenario(db: Database) -> int:
        async with db.unit_of_work() as session:
            row = await session.get(WebhookDelivery, uuid.UUID(old["id"]))
            assert row is not None
            row.created_at = utcnow() - timedelta(days=31)
        return await durable.forget_old_deliveries(db)

    assert run(scenario) >= 1
    assert [d["id"] for d in hooks.deliveries(endpoint["id"])] == [recent["id"]]


def test_redelivery_refuses_what_it_cannot_send_again(
    hooks: Hooks, other_hooks: Hooks, receiver: WebhookReceiver, run: Run
):
    endpoint = subscribed(hooks, receiver)
    emit(run, hooks.tenant_id, "draft.created")
    succeeded = hooks.wait_for_delivery(endpoint["id"])
    assert succeeded["status"] == "succeeded"
    body = problem(hooks.request("webhooks.redeliver", {"id": succeeded["id"]}), 409, "CONFLICT")
    assert body["delivery_status"] == "succeeded" and "succeeded" in body["detail"]

    receiver.script(500)
    test = hooks.ok("webhooks.testEndpoint", {"id": endpoint["id"]})
    assert test["status"] == "failed"
    refused = problem(hooks.request("webhooks.redeliver", {"id": test["id"]}), 409, "CONFLICT")
    assert "testEndpoint" in refused["detail"]

    missing = str(uuid.uuid4())
    problem(hooks.request("webhooks.redeliver", {"id": missing}), 404, "NOT_FOUND")
    problem(other_hooks.request("webhooks.redeliver", {"id": succeeded["id"]}), 404, "NOT_FOUND")
    for role in ("member", "editor"):
        forbidden = hooks.request("webhooks.redeliver", {"id": succeeded["id"]}, role=role)
        problem(forbidden, 403, "FORBIDDEN")
