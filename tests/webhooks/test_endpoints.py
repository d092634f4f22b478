"""The webhook endpoint operations over REST and RPC: create (its secret once), list, get with
its stats, update, delete, rotate the secret (both secrets sign during the overlap, as the
`standardwebhooks` library sees it), test; each refusal (400 naming the field, 403 for members
and editors and for API keys, 403 past the plan's limit, 404 for another organization's
endpoint); the audit trail, which never holds a secret or a URL's path."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from pydantic import SecretStr

from contentplatform.billing import service as billing
from contentplatform.config import Settings
from contentplatform.events import catalog
from tests.events.support import payloads
from tests.support.problems import problem
from tests.support.webhook_receiver import WebhookReceiver
from tests.webhooks.support import Hooks

FIELDS = {
    "id",
    "url",
    "description",
    "events",
    "enabled",
    "disabled_reason",
    "secret_hint",
    "previous_secret_expires_at",
    "last_delivery",
    "failing_since",
    "created_at",
    "updated_at",
}
URL = "http://127.0.0.1:9/hooks/content?token=abc"  # loopback is allowed in the suite


def when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_an_admin_creates_an_endpoint_and_sees_its_secret_once(hooks: Hooks, settings: Settings):
    created = hooks.create(
        URL,
        events=["draft.created", "draft.published", "draft.created"],
        description="Our <b>CMS</b> bridge",
    )
    assert set(created) == FIELDS | {"secret"}
    secret = created["secret"]
    assert secret.startswith("whsec_") and len(secret) == len("whsec_") + 32
    assert created["secret_hint"] == secret[-4:]
    assert created["events"] == ["draft.created", "draft.published"]  # each once
    assert created["description"] == "Our CMS bridge"  # plain text
    assert (created["url"], created["enabled"], created["disabled_reason"]) == (URL, True, None)
    assert created["last_delivery"] is None and created["failing_since"] is None
    assert created["previous_secret_expires_at"] is None

    listed = hooks.ok("webhooks.listEndpoints")
    assert listed["total"] == 1
    assert listed["data"] == [{k: v for k, v in created.items() if k != "secret"}]
    shown = hooks.endpoint(created["id"])
    assert shown["stats_24h"] == {"succeeded": 0, "failed": 0, "p50_latency_ms": None}
    assert secret not in json.dumps([listed, shown])

    (audited,) = payloads(settings, hooks.tenant_id, "webhook_endpoint.created")
    assert audited["endpoint_id"] == created["id"]
    assert audited["url"] == "http://127.0.0.1:9/…"  # the token in the query stays out
    assert audited["events"] == ["draft.created", "draft.published"]
    assert secret not in json.dumps(audited) and "token" not in json.dumps(audited)
    assert hooks.ok("billing.getQuota")["items"][6] == {
        "key": "webhook_endpoints", "limit": None, "used": 1, "remaining": None, "resets_at": None,
    }  # fmt: skip


def test_a_disabled_endpoint_may_be_created(hooks: Hooks):
    created = hooks.create(URL, enabled=False)
    assert created["enabled"] is False and created["disabled_reason"] == "manual"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"url": URL}, "events"),
        ({"url": URL, "events": []}, "events"),
        ({"url": URL, "events": ["draft.teleported"]}, "events.0"),
        # Audit types are not for endpoints.
        ({"url": URL, "events": ["webhook_endpoint.created"]}, "events.0"),
        ({"url": URL, "events": ["draft.created"] * 51}, "events"),
        ({"events": ["draft.created"]}, "url"),
        ({"url": "ftp://127.0.0.1/hooks", "events": ["draft.created"]}, "url"),
        ({"url": "http://user:pw@127.0.0.1/hooks", "events": ["draft.created"]}, "url"),
        ({"url": "http://10.1.2.3/hooks", "events": ["draft.created"]}, "url"),
        ({"url": "http://169.254.169.254/latest", "events": ["draft.created"]}, "url"),
        ({"url": "http://127.0.0.1/" + "x" * 2048, "events": ["draft.created"]}, "url"),
        ({"url": URL, "events": ["draft.created"], "description": "x" * 201}, "description"),
        ({"url": URL, "events": ["draft.created"], "secret": "whsec_mine"}, "secret"),
    ],
)
def test_a_bad_endpoint_is_400_naming_the_field(hooks: Hooks, data: dict, field: str):
    body = problem(hooks.request("webhooks.createEndpoint", data), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}, body
    assert hooks.ok("webhooks.listEndpoints")["total"] == 0


def test_an_admin_updates_an_endpoint(hooks: Hooks, settings: Settings):
    created = hooks.create(URL, description="First")
    other_url = "http://127.0.0.1:9/hooks/other"
    changed = hooks.ok(
        "webhooks.updateEndpoint",
        {"id": created["id"], "url": other_url, "events": ["job.run_failed"], "description": None},
    )
    assert (changed["url"], changed["events"], changed["description"]) == (
        other_url,
        ["job.run_failed"],
        None,
    )
    assert when(changed["updated_at"]) >= when(created["updated_at"])
    assert hooks.endpoint(created["id"])["url"] == other_url
    assert changed["secret_hint"] == created["secret_hint"]

    disabled = hooks.ok("webhooks.updateEndpoint", {"id": created["id"], "enabled": False})
    assert disabled["enabled"] is False and disabled["disabled_reason"] == "manual"
    enabled = hooks.ok("webhooks.updateEndpoint", {"id": created["id"], "enabled": True})
    assert enabled["enabled"] is True and enabled["disabled_reason"] is None
    unchanged = hooks.ok("webhooks.updateEndpoint", {"id": created["id"]})
    assert unchanged == enabled

    audited = payloads(settings, hooks.tenant_id, "webhook_endpoint.updated")
    assert len(audited) == 3  # the request that changed nothing wrote nothing
    refused = hooks.request(
        "webhooks.updateEndpoint", {"id": created["id"], "url": "http://10.0.0.1/"}
    )
    assert "url" in {e["path"] for e in problem(refused, 400, "BAD_REQUEST")["errors"]}


def test_endpoint_changes_are_audited(hooks: Hooks):
    """Created, updated (with the diff), rotated and deleted: each in the audit trail, by the
    admin who did it, with neither a secret nor the URL's path or query."""
    created = hooks.create(URL)
    hooks.ok(
        "webhooks.updateEndpoint",
        {"id": created["id"], "url": "http://127.0.0.1:9/hooks/new", "events": ["document.ready"]},
    )
    rotated = hooks.ok("webhooks.rotateEndpointSecret", {"id": created["id"]})
    hooks.ok("webhooks.deleteEndpoint", {"id": created["id"]})

    trail = hooks.ok("activity.list", {"scope": "audit", "resourceId": created["id"], "limit": 10})[
        "data"
    ]
    assert [row["action"] for row in trail] == [
        "webhook_endpoint.deleted",
        "webhook_endpoint.secret_rotated",
        "webhook_endpoint.updated",
        "webhook_endpoint.created",
    ]
    admin = hooks.users["admin"]
    assert all(
        row["actor"]["id"] == admin and row["resource_type"] == "webhook_endpoint" for row in trail
    )
    assert trail[2]["changes"] == {
        # The path changed; the trail tells that the URL changed, not what it holds.
        "url": {"from": "http://127.0.0.1:9/…", "to": "http://127.0.0.1:9/…"},
        "events": {"from": ["draft.created"], "to": ["document.ready"]},
    }
    shown = json.dumps(trail)
    assert created["secret"] not in shown and rotated["secret"] not in shown
    assert "token=abc" not in shown and "/hooks/new" not in shown
    # Audit events are for admins: never in the members' feed.
    feed = hooks.ok("activity.list", {"resourceId": created["id"]}, role="member")
    assert feed["data"] == []


def test_an_admin_deletes_an_endpoint(hooks: Hooks, settings: Settings):
    created = hooks.create(URL)
    assert hooks.ok("webhooks.deleteEndpoint", {"id": created["id"]}) == {"success": True}
    problem(hooks.request("webhooks.getEndpoint", {"id": created["id"]}), 404, "NOT_FOUND")
    problem(hooks.request("webhooks.deleteEndpoint", {"id": created["id"]}), 404, "NOT_FOUND")
    assert hooks.ok("webhooks.listEndpoints") == {"data": [], "total": 0}
    (audited,) = payloads(settings, hooks.tenant_id, "webhook_endpoint.deleted")
    assert audited == {"endpoint_id": created["id"], "url": "http://127.0.0.1:9/…"}


def test_a_rotated_secret_signs_beside_the_old_one_until_the_overlap_ends(
    hooks: Hooks, receiver: WebhookReceiver, settings: Settings
):
    created = hooks.create(receiver.url)
    old = created["secret"]
    rotated = hooks.ok("webhooks.rotateEndpointSecret", {"id": created["id"]})
    new = rotated["secret"]
    assert new.startswith("whsec_") and new != old
    until = when(rotated["previous_secret_expires_at"])
    assert timedelta(hours=23) < until - datetime.now(until.tzinfo) <= timedelta(hours=24)
    shown = hooks.endpoint(created["id"])
    assert shown["secret_hint"] == new[-4:]
    assert shown["previous_secret_expires_at"] == rotated["previous_secret_expires_at"]

    receiver.trust(old, new)
    hooks.ok("webhooks.testEndpoint", {"id": created["id"]})
    (during,) = receiver.received
    assert len(during.signatures) == 2 and set(during.verified_by) == {old, new}

    # Without an overlap the replaced secret stops at once.
    last = hooks.ok(
        "webhooks.rotateEndpointSecret", {"id": created["id"], "expireCurrentInSeconds": 0}
    )
    assert last["previous_secret_expires_at"] is None
    receiver.trust(last["secret"])
    hooks.ok("webhooks.testEndpoint", {"id": created["id"]})
    after = receiver.received[-1]
    assert len(after.signatures) == 1 and after.verified_by == (last["secret"],)
    assert hooks.endpoint(created["id"])["previous_secret_expires_at"] is None

    audited = payloads(settings, hooks.tenant_id, "webhook_endpoint.secret_rotated")
    assert len(audited) == 2
    assert not any(s in json.dumps(audited) for s in (old, new, last["secret"]))
    for seconds in (-1, 604_801):
        refused = hooks.request(
            "webhooks.rotateEndpointSecret",
            {"id": created["id"], "expireCurrentInSeconds": seconds},
        )
        body = problem(refused, 400, "BAD_REQUEST")
        assert "expireCurrentInSeconds" in {error["path"] for error in body["errors"]}


def test_a_test_event_is_delivered_signed(hooks: Hooks, receiver: WebhookReceiver):
    created = hooks.create(receiver.url)
    receiver.trust(created["secret"])
    sent = hooks.ok("webhooks.testEndpoint", {"id": created["id"]})
    (request,) = receiver.received
    assert request.verified and request.webhook_id == sent["webhook_id"]
    body = request.json()
    assert body["type"] == "webhook.test" and body["data"] == {
        "message": "A test event from the Content Platform: you may ignore it."
    }
    assert sent["status"] == "succeeded" and sent["test"] is True
    assert sent["event_type"] == "webhook.test" and sent["endpoint_id"] == created["id"]
    assert sent["request_body"] == request.body.decode()
    (attempt,) = sent["attempts"]
    assert attempt["response_status"] == 200 and attempt["n"] == 1
    assert hooks.deliveries(created["id"]) == [sent]

    sample = hooks.ok("webhooks.testEndpoint", {"id": created["id"], "eventType": "draft.created"})
    assert receiver.received[-1].json()["data"]["sample"] is True
    assert sample["event_type"] == "draft.created" and sample["webhook_id"] != sent["webhook_id"]

    # A failing test is recorded, never tried again, and changes nothing about the endpoint.
    receiver.script(503)
    failed = hooks.ok("webhooks.testEndpoint", {"id": created["id"]})
    assert failed["status"] == "failed" and failed["next_attempt_at"] is None
    assert failed["attempts"][0]["error"] == "The endpoint answered 503."
    shown = hooks.endpoint(created["id"])
    assert shown["enabled"] is True and shown["failing_since"] is None
    assert shown["last_delivery"] is None
    assert shown["stats_24h"]["succeeded"] == 2 and shown["stats_24h"]["failed"] == 1
    assert len(receiver.received) == 3

    refused = hooks.request("webhooks.testEndpoint", {"id": created["id"], "eventType": "nope"})
    assert "eventType" in {e["path"] for e in problem(refused, 400, "BAD_REQUEST")["errors"]}


def test_a_test_of_an_unreachable_endpoint_says_why(hooks: Hooks):
    created = hooks.create("http://127.0.0.1:9/hooks")  # the discard port: nothing listens
    sent = hooks.ok("webhooks.testEndpoint", {"id": created["id"]})
    assert sent["status"] == "failed"
    (attempt,) = sent["attempts"]
    assert attempt["response_status"] is None and "could not be reached" in attempt["error"]


def test_the_delivery_log_filters_and_pages(hooks: Hooks, receiver: WebhookReceiver):
    created = hooks.create(receiver.url)
    receiver.script(500)
    for event_type in ("webhook.test", "draft.created", "webhook.test"):
        hooks.ok("webhooks.testEndpoint", {"id": created["id"], "eventType": event_type})
    every = hooks.ok("webhooks.listDeliveries", {"id": created["id"]})
    assert (every["total"], every["page"], every["limit"]) == (3, 1, 20)
    newest_first = [d["event_type"] for d in every["data"]]
    assert newest_first == ["webhook.test", "draft.created", "webhook.test"]
    assert [d["status"] for d in every["data"]] == ["succeeded", "succeeded", "failed"]

    def ids(**query: Any) -> list[str]:
        return [d["id"] for d in hooks.deliveries(created["id"], **query)]

    assert ids(status="failed") == [every["data"][2]["id"]]
    assert ids(eventType="draft.created") == [every["data"][1]["id"]]
    assert ids(limit=1, page=2) == [every["data"][1]["id"]]
    assert ids(startDate=every["data"][0]["created_at"]) == [every["data"][0]["id"]]
    assert ids(endDate=every["data"][0]["created_at"]) == ids()[1:]
    assert ids(status="exhausted") == []
    for query, field in (({"limit": 101}, "limit"), ({"status": "lost"}, "status")):
        refused = hooks.request("webhooks.listDeliveries", {"id": created["id"], **query})
        assert field in {e["path"] for e in problem(refused, 400, "BAD_REQUEST")["errors"]}


OPERATIONS = [
    ("webhooks.listEndpoints", lambda e: {}),
    ("webhooks.createEndpoint", lambda e: {"url": URL, "events": ["draft.created"]}),
    ("webhooks.getEndpoint", lambda e: {"id": e}),
    ("webhooks.updateEndpoint", lambda e: {"id": e, "description": "Mine"}),
    ("webhooks.deleteEndpoint", lambda e: {"id": e}),
    ("webhooks.rotateEndpointSecret", lambda e: {"id": e}),
    ("webhooks.testEndpoint", lambda e: {"id": e}),
    ("webhooks.listDeliveries", lambda e: {"id": e}),
]


@pytest.mark.parametrize("role", ["member", "editor"])
def test_only_an_admin_manages_endpoints(hooks: Hooks, role: str):
    created = hooks.create(URL)
    for operation, data in OPERATIONS:
        refused = hooks.request(operation, data(created["id"]), role=role)
        assert "admin" in problem(refused, 403, "FORBIDDEN")["detail"], operation
    assert hooks.endpoint(created["id"])["description"] is None


def test_an_api_key_never_reaches_the_endpoints(hooks: Hooks):
    key = hooks.ok("settings.createApiKey", {"name": "Export", "role": "editor"})["secret"]
    headers = {"Authorization": f"Bearer {key}"}
    refused = hooks.client.get("/v1/webhooks/endpoints", headers=headers)
    assert problem(refused, 403, "FORBIDDEN")["detail"].startswith("API keys cannot")


def test_another_organization_s_endpoint_is_not_found(hooks: Hooks, other_hooks: Hooks):
    created = hooks.create(URL)
    for operation, data in OPERATIONS[2:]:
        refused = other_hooks.request(operation, data(created["id"]))
        problem(refused, 404, "NOT_FOUND")
    assert other_hooks.ok("webhooks.listEndpoints") == {"data": [], "total": 0}
    mine = hooks.endpoint(created["id"])
    assert mine["description"] is None and mine["secret_hint"] == created["secret_hint"]
    missing = str(uuid.uuid4())
    body = problem(hooks.request("webhooks.getEndpoint", {"id": missing}), 404, "NOT_FOUND")
    assert missing in body["detail"]


def test_an_endpoint_past_the_plan_s_limit_is_refused(
    hooks: Hooks, settings: Settings, monkeypatch: pytest.MonkeyPatch
):
    limited = settings.model_copy(
        update={
            "stripe_secret_key": SecretStr("sk_test_x"),
            "free_plan_limits": {"webhook_endpoints": 1},
        }
    )
    monkeypatch.setattr(billing, "_settings", lambda: limited)
    first = hooks.create(URL, enabled=False)  # disabled ones count too
    refused = hooks.request("webhooks.createEndpoint", {"url": URL, "events": ["draft.created"]})
    body = problem(refused, 403, "FORBIDDEN")
    assert (body["limit_key"], body["limit"]) == ("webhook_endpoints", 1)
    quota = {item["key"]: item for item in hooks.ok("billing.getQuota")["items"]}
    assert quota["webhook_endpoints"]["used"] == 1 and quota["webhook_endpoints"]["remaining"] == 0

    hooks.ok("webhooks.deleteEndpoint", {"id": first["id"]})
    assert hooks.create(URL)["enabled"] is True  # its place is free again


def test_every_subscribable_type_may_be_subscribed_to(hooks: Hooks):
    created = hooks.create(URL, events=list(catalog.SUBSCRIBABLE))
    assert created["events"] == list(catalog.SUBSCRIBABLE)
