"""admin.listWebhookEvents and admin.replayWebhookEvent over REST and RPC: the identity
provider's and the payment provider's stored events in one list (filters, paging, the tenant
each names), and a failed one replayed through its durable processing: answered `received`
with one more attempt, then applied (the organization renamed) and `processed`; an event
still being processed is 409, an unknown one 404. Events are written straight to their tables,
as the verified receiving routes store them."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import delete

from contentplatform.billing.models import PaymentEvent, Subscription
from contentplatform.kit.db import Database
from contentplatform.team.models import IdentityEvent
from tests.admin.support import NOBODY, Operator
from tests.conftest import Run
from tests.events.support import Trail
from tests.support.orgs import Org
from tests.support.problems import problem

DEADLINE = 30.0


@pytest.fixture
def stored(run: Run, tenant: Org, other_tenant: Org) -> dict[str, Any]:
    """A failed rename of the organization (identity), a processed invoice of the other
    organization's customer (payments), and a user event naming no organization."""
    customer = f"cus_{uuid.uuid4().hex[:10]}"
    made = {
        "rename": uuid.uuid4(),
        "invoice": uuid.uuid4(),
        "user": uuid.uuid4(),
        "type": f"test.{uuid.uuid4().hex[:8]}",
    }
    now = datetime.now(UTC)
    other_id = other_tenant.tenant_id

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            session.add(Subscription(tenant_id=other_id, status="active", customer_id=customer))
            rename = {
                "type": "organization.updated",
                "data": {"id": tenant.org, "name": "Renamed Gardens", "updated_at": 1},
            }
            session.add_all(
                [
                    IdentityEvent(
                        id=made["rename"], source="clerk", event_id=f"msg_{made['rename'].hex}",
                        type="organization.updated", payload=rename, status="failed",
                        error="database unavailable", processed_at=now,
                    ),
                    PaymentEvent(
                        id=made["invoice"], source="stripe", event_id=f"evt_{made['invoice'].hex}",
                        type=made["type"],
                        payload={"type": made["type"], "data": {"object": {"customer": customer}}},
                        status="processed", processed_at=now,
                    ),
                    IdentityEvent(
                        id=made["user"], source="clerk", event_id=f"msg_{made['user'].hex}",
                        type=made["type"], payload={"type": "user.updated", "data": {"id": "u"}},
                        status="ignored", processed_at=now,
                    ),
                ]
            )  # fmt: skip

    run(scenario)
    yield made

    async def clean(db: Database) -> None:
        async with db.unit_of_work() as session:
            ids = [made["invoice"]]
            await session.execute(delete(PaymentEvent).where(PaymentEvent.id.in_(ids)))
            ids = [made["rename"], made["user"]]
            await session.execute(delete(IdentityEvent).where(IdentityEvent.id.in_(ids)))

    run(clean)


def listed(operator: Operator, **query: Any) -> dict[str, Any]:
    return operator.ok("admin.listWebhookEvents", {"limit": 100, **query})


def test_both_sources_are_listed_with_the_tenant_each_names(
    operator: Operator, stored: dict[str, Any], tenant: Org, other_tenant: Org
) -> None:
    rows = {row["id"]: row for row in listed(operator, tenantId=str(tenant.tenant_id))["data"]}
    rename = rows[str(stored["rename"])]
    assert rename == {
        "id": str(stored["rename"]), "source": "identity",
        "provider_event_id": f"msg_{stored['rename'].hex}", "type": "organization.updated",
        "tenant_id": str(tenant.tenant_id), "status": "failed", "attempts": 1,
        "error": "database unavailable", "received_at": rename["received_at"],
        "processed_at": rename["processed_at"],
    }  # fmt: skip
    assert str(stored["invoice"]) not in rows  # the other organization's
    theirs = listed(operator, tenantId=str(other_tenant.tenant_id))["data"]
    assert [(r["id"], r["source"]) for r in theirs] == [(str(stored["invoice"]), "payments")]

    typed = listed(operator, type=stored["type"])
    assert {r["id"] for r in typed["data"]} == {str(stored["invoice"]), str(stored["user"])}
    assert typed["total"] == 2
    identity = listed(operator, type=stored["type"], source="identity")["data"]
    assert [(r["id"], r["tenant_id"]) for r in identity] == [(str(stored["user"]), None)]
    assert listed(operator, type=stored["type"], status="processed")["total"] == 1
    page = operator.ok("admin.listWebhookEvents", {"type": stored["type"], "limit": 1, "page": 2})
    assert len(page["data"]) == 1 and page["total"] == 2 and page["page"] == 2


def test_a_failed_event_replayed_is_applied(
    operator: Operator, stored: dict[str, Any], tenant: Org
) -> None:
    tenant.whoami()
    event_id = str(stored["rename"])
    answer = operator.ok("admin.replayWebhookEvent", {"id": event_id})
    assert answer["id"] == event_id and answer["attempts"] == 2
    assert answer["status"] in ("received", "processed")  # processed already if fast
    assert answer["error"] is None
    deadline = time.monotonic() + DEADLINE
    while True:
        [row] = [r for r in listed(operator, tenantId=str(tenant.tenant_id))["data"]
                 if r["id"] == event_id]  # fmt: skip
        if row["status"] != "received" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert row["status"] == "processed", row
    assert tenant.whoami()["organization"]["name"] == "Renamed Gardens"
    trail = Trail.of(tenant).one("inbound_event.replayed", scope="audit")
    assert trail["actor"]["id"] == operator.subject and trail["resource_id"] == event_id


def test_a_replay_is_refused_while_received_or_for_nobody(
    operator: Operator, stored: dict[str, Any], run: Run
) -> None:
    async def receiving(db: Database) -> None:
        async with db.unit_of_work() as session:
            row = await session.get(PaymentEvent, stored["invoice"])
            assert row is not None
            row.status = "received"

    run(receiving)
    problem(
        operator.request("admin.replayWebhookEvent", {"id": str(stored["invoice"])}),
        409,
        "CONFLICT",
    )
    problem(operator.request("admin.replayWebhookEvent", {"id": NOBODY}), 404, "NOT_FOUND")
    problem(operator.request("admin.replayWebhookEvent", {"id": "nope"}), 400, "BAD_REQUEST")


def test_the_list_refuses_bad_filters(operator: Operator) -> None:
    for bad in (
        {"source": "github"},
        {"status": "done"},
        {"limit": 0},
        {"tenantId": "x"},
        {"type": "t" * 101},
    ):
        problem(operator.request("admin.listWebhookEvents", bad), 400, "BAD_REQUEST")
