"""publishers.rotateSecret over REST and RPC: a webhook connection's new signing secret, the overlap
during which every delivery carries the previous secret's signature too (verified by a receiver
with the `standardwebhooks` library, as a real one would), its end, the audit trail, the bounds,
roles and tenancy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from contentplatform.config import Settings
from contentplatform.events.models import Event
from contentplatform.publishers.strategies.webhook import new_signing_secret
from tests.publishers.desk import Desk
from tests.support.database import select_all
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.targets.scripted import Seen
from tests.support.targets.webhook import WebhookReceiver
from tests.support.targets.wordpress import WordPressServer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

NOWHERE = "http://127.0.0.1:9/hooks"
DAY = 86_400

desk = org_fixture(Desk)
other = org_fixture(Desk, second=True)


@contextmanager
def webhook_to(desk: Desk) -> Iterator[tuple[WebhookReceiver, dict[str, Any]]]:
    """A receiver and a webhook connection to it; the receiver verifies with the secret the
    connection's create answered (until a test hands it another)."""
    with WebhookReceiver(new_signing_secret()) as receiver:
        connection = desk.webhook(receiver.hook_url)
        receiver.verifier = Webhook(connection["signing_secret"])
        yield receiver, connection


def signatures(delivery: Seen) -> list[str]:
    return delivery.headers["webhook-signature"].split(" ")


def verifies(secret: str, delivery: Seen) -> bool:
    """Whether a receiver holding only `secret` accepts the delivery (standardwebhooks)."""
    try:
        Webhook(secret).verify(delivery.body, delivery.headers)
    except WebhookVerificationError:
        return False
    return True


def deliver(desk: Desk, receiver: WebhookReceiver, connection_id: str) -> Seen:
    """Make the connection send one event (a published draft): the delivery as received."""
    before = len(receiver.deliveries)
    draft = desk.approved(f"Notes {before}")
    desk.published(draft["id"], connection_id)
    assert len(receiver.deliveries) == before + 1, receiver.rejected
    return receiver.deliveries[-1]


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- the overlap --------------------------------------------------------------------------------


def test_during_the_overlap_each_delivery_is_signed_with_both_secrets(desk: Desk) -> None:
    with webhook_to(desk) as (receiver, connection):
        old = connection["signing_secret"]
        assert len(signatures(deliver(desk, receiver, connection["id"]))) == 1

        before = datetime.now(UTC)
        rotated = desk.rotate(connection["id"])

        new = rotated["signing_secret"]
        assert new.startswith("whsec_") and new != old
        expires = instant(rotated["previous_secret_expires_at"])
        assert (
            before + timedelta(seconds=DAY) <= expires <= datetime.now(UTC) + timedelta(seconds=DAY)
        )
        delivery = deliver(desk, receiver, connection["id"])
        assert [signature[:3] for signature in signatures(delivery)] == ["v1,", "v1,"]
        # A receiver still on the old secret and one already on the new both accept it.
        assert verifies(old, delivery) and verifies(new, delivery)
        # Connection tests are signed the same way.
        assert desk.ok("publishers.test", {"id": connection["id"]}, role="admin")["ok"] is True
        assert verifies(old, receiver.deliveries[-1]) and verifies(new, receiver.deliveries[-1])


def test_with_no_overlap_only_the_new_secret_signs(desk: Desk) -> None:
    with webhook_to(desk) as (receiver, connection):
        old = connection["signing_secret"]

        before = datetime.now(UTC)
        rotated = desk.rotate(connection["id"], expireCurrentInSeconds=0)

        assert before <= instant(rotated["previous_secret_expires_at"]) <= datetime.now(UTC)
        receiver.verifier = Webhook(rotated["signing_secret"])
        delivery = deliver(desk, receiver, connection["id"])
        assert len(signatures(delivery)) == 1
        assert verifies(rotated["signing_secret"], delivery)
        assert not verifies(old, delivery)


def test_a_second_rotation_retires_the_secret_the_first_replaced(desk: Desk) -> None:
    with webhook_to(desk) as (receiver, connection):
        first = connection["signing_secret"]
        second = desk.rotate(connection["id"])["signing_secret"]
        third = desk.rotate(connection["id"], expireCurrentInSeconds=3600)["signing_secret"]
        receiver.verifier = Webhook(third)

        delivery = deliver(desk, receiver, connection["id"])

        assert len(signatures(delivery)) == 2
        assert verifies(third, delivery) and verifies(second, delivery)
        assert not verifies(first, delivery)


def test_the_new_secret_is_shown_once(desk: Desk) -> None:
    connection = desk.webhook(NOWHERE)

    secret = desk.rotate(connection["id"])["signing_secret"]

    for shown in (desk.connection(connection["id"]), desk.ok("publishers.list", role="admin")):
        assert secret not in json.dumps(shown)


# --- the audit trail --------------------------------------------------------------------------


@pytest.mark.own_org
def test_a_rotation_is_in_the_audit_trail_without_the_secret(
    desk: Desk, settings: Settings
) -> None:
    connection = desk.webhook(NOWHERE)
    old = connection["signing_secret"]

    new = desk.rotate(connection["id"])["signing_secret"]

    [row] = desk.activity("admin", scope="audit", action="publisher.secret_rotated")
    assert row["resource_type"] == "publisher"
    assert row["resource_id"] == connection["id"]
    assert row["actor"]["id"] == desk.users["admin"]
    # Not in the everyday trail, and the audit scope is the admins'.
    assert desk.activity("admin", action="publisher.secret_rotated") == []
    problem(desk.request("activity.list", {"scope": "audit"}, role="editor"), 403, "FORBIDDEN")
    [event] = select_all(
        settings,
        select(Event).where(
            Event.tenant_id == desk.tenant_id, Event.type == "publisher.secret_rotated"
        ),
    )
    stored = json.dumps(event.payload)
    assert old not in stored and new not in stored
    assert event.payload["publisher_connection_id"] == connection["id"]


# --- refusals ---------------------------------------------------------------------------------


def test_only_webhook_connections_rotate(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)

    body = problem(desk.try_rotate(connection["id"]), 400, "BAD_REQUEST")

    assert "webhook" in body["detail"]
    assert wp.requests == []


@pytest.mark.parametrize("seconds", [-1, 604_801, "soon"])
def test_the_overlap_is_bounded(desk: Desk, seconds: Any) -> None:
    connection = desk.webhook(NOWHERE)

    body = problem(
        desk.try_rotate(connection["id"], expireCurrentInSeconds=seconds), 400, "BAD_REQUEST"
    )

    assert [error["path"] for error in body["errors"]] == ["expireCurrentInSeconds"]


def test_a_week_of_overlap_is_the_most(desk: Desk) -> None:
    connection = desk.webhook(NOWHERE)

    rotated = desk.rotate(connection["id"], expireCurrentInSeconds=604_800)

    assert instant(rotated["previous_secret_expires_at"]) > datetime.now(UTC) + timedelta(days=6)


@pytest.mark.parametrize("role", ["member", "editor"])
def test_only_admins_rotate(desk: Desk, role: str) -> None:
    with webhook_to(desk) as (receiver, connection):
        problem(desk.try_rotate(connection["id"], role=role), 403, "FORBIDDEN")

        # The secret is unchanged: a delivery verifies with it alone.
        delivery = deliver(desk, receiver, connection["id"])
        assert len(signatures(delivery)) == 1


@pytest.mark.own_org
def test_another_organizations_connection_is_not_found(desk: Desk, other: Desk) -> None:
    connection = desk.webhook(NOWHERE)

    problem(other.try_rotate(connection["id"]), 404, "NOT_FOUND")
    problem(desk.try_rotate("00000000-0000-4000-8000-000000000000"), 404, "NOT_FOUND")
    assert desk.activity("admin", scope="audit", action="publisher.secret_rotated") == []
