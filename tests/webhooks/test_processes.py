"""Deliveries survive a `kill -9`: real `contentplatform serve` processes (tests/support/
processes.py), each on the test's own databases, and a loopback receiver that verifies every
signature with the `standardwebhooks` library.

- Killed after a change committed and before it was delivered (its event not yet fanned out;
  and a delivery committed whose workflow never started): after the restart each is delivered
  exactly once.
- Killed while an attempt waits for the receiver's answer: the restarted process sends it again
  under the same `webhook-id`, which the receiver drops as a duplicate, and the delivery ends
  succeeded with the one attempt that was recorded.
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any, cast

from sqlalchemy import Table, insert, select

from contentplatform.events.models import Event
from contentplatform.kit.db import utcnow
from contentplatform.webhooks.models import WebhookDelivery
from tests.support.processes import LOOPBACK, Service, Services, Stack, wait_for
from tests.support.webhook_receiver import Answer, WebhookReceiver
from tests.webhooks.support import message_id

EVENTS = cast(Table, Event.__table__)
DELIVERIES = cast(Table, WebhookDelivery.__table__)
SETTINGS = {
    "outbound_allow_http": "true",
    "outbound_allow_loopback": "true",
    "webhook_retry_seconds": "[0, 0.2, 0.4]",
}


class Admin:
    """An admin of a new organization calling one service over REST."""

    def __init__(self, stack: Stack, service: Service) -> None:
        self.org = f"org_hooks_{uuid.uuid4().hex[:8]}"
        self.token = stack.token(self.org, f"admin-{self.org}", "admin")
        self.service = service

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.token}", "x-idp-org-id": self.org}
        response = LOOPBACK.request(
            method, f"{self.service.url}{path}", headers=headers, timeout=30, **kwargs
        )
        assert response.status_code == 200, (response.text, self.service.tail())
        return response.json()

    @property
    def tenant_id(self) -> uuid.UUID:
        return uuid.UUID(self.call("GET", "/v1/system/whoami")["tenant_id"])


def _emitted(stack: Stack, tenant_id: uuid.UUID) -> uuid.UUID:
    """A draft.created event committed as a change in any process would commit it."""
    event_id = uuid.uuid4()
    with stack.engine.begin() as connection:
        connection.execute(
            insert(EVENTS).values(
                id=event_id,
                tenant_id=tenant_id,
                type="draft.created",
                scope="activity",
                actor_type="system",
                actor_name="System",
                resource_type="draft",
                resource_id=uuid.uuid4(),
                payload={"title": "Watering succulents"},
                created_at=utcnow(),
            )
        )
    return event_id


def _statuses(stack: Stack, endpoint_id: str) -> list[str]:
    rows = stack.rows(
        select(DELIVERIES.c.status).where(DELIVERIES.c.endpoint_id == uuid.UUID(endpoint_id))
    )
    return [row[0] for row in rows]


def _settled(stack: Stack, endpoint_id: str, count: int) -> bool:
    found = _statuses(stack, endpoint_id)
    return len(found) == count and "pending" not in found


def test_a_kill_after_the_commit_and_before_the_delivery_delivers_exactly_once(
    stack: Stack, services: Services
):
    with WebhookReceiver() as receiver:
        # Its dispatcher looks for other processes' events only once a minute.
        first = services.start(**SETTINGS, events_poll_seconds="60")
        admin = Admin(stack, first)
        tenant_id = admin.tenant_id
        endpoint = admin.call(
            "POST",
            "/v1/webhooks/endpoints",
            json={"url": receiver.url, "events": ["draft.created"]},
        )
        receiver.trust(endpoint["secret"])

        event_id = _emitted(stack, tenant_id)
        first.kill()
        assert receiver.received == []

        # And the crash between the listener's commit and the enqueue: a delivery with no
        # workflow (as the listener writes it, its first attempt due a minute ago).
        orphan_event = uuid.uuid4()
        with stack.engine.begin() as connection:
            now = utcnow()
            connection.execute(
                insert(DELIVERIES).values(
                    id=uuid.uuid4(),
                    tenant_id=tenant_id,
                    endpoint_id=uuid.UUID(endpoint["id"]),
                    event_id=orphan_event,
                    event_type="draft.created",
                    message_id=message_id(orphan_event),
                    test=False,
                    status="pending",
                    round=0,
                    round_attempts=0,
                    attempt_count=0,
                    next_attempt_at=now - timedelta(minutes=1),
                    request_body='{"type":"draft.created","timestamp":"2026-01-01T00:00:00Z",'
                    '"data":{}}',
                    created_at=now - timedelta(minutes=1),
                    updated_at=now - timedelta(minutes=1),
                )
            )

        second = services.start(**SETTINGS)
        wait_for("both deliveries", lambda: _settled(stack, endpoint["id"], 2), second)
        # A few reconcile passes (every 0.5 s) later, still once each.
        time.sleep(1.5)
        assert sorted(receiver.ids()) == sorted([message_id(event_id), message_id(orphan_event)])
        assert all(request.verified for request in receiver.received)
        assert _statuses(stack, endpoint["id"]) == ["succeeded", "succeeded"]


def test_a_kill_during_an_attempt_sends_it_again_under_the_same_id(
    stack: Stack, services: Services
):
    with WebhookReceiver() as receiver:
        first = services.start(**SETTINGS)
        admin = Admin(stack, first)
        endpoint = admin.call(
            "POST",
            "/v1/webhooks/endpoints",
            json={"url": receiver.url, "events": ["draft.created"]},
        )
        receiver.trust(endpoint["secret"])
        receiver.script(Answer(200, delay=5))  # holds the first answer back

        event_id = _emitted(stack, admin.tenant_id)
        receiver.wait_for(1)
        first.kill()  # while the attempt waits for its answer

        second = services.start(**SETTINGS)
        wait_for("the delivery", lambda: _settled(stack, endpoint["id"], 1), second)
        assert receiver.ids() == [message_id(event_id)] * 2
        assert all(request.verified for request in receiver.received)
        assert len(receiver.events()) == 1  # the receiver kept it once
        admin.service = second
        (delivery,) = admin.call("GET", f"/v1/webhooks/endpoints/{endpoint['id']}/deliveries")[
            "data"
        ]
        assert delivery["status"] == "succeeded"
        assert [attempt["response_status"] for attempt in delivery["attempts"]] == [200]
