"""`subscription.updated` over REST and RPC: the payment provider's subscription events, applied
as billing's workflow applies them (billing/payment_events.py), tell a change of plan or status
once, by the system; an event that changes neither tells nothing. Light on purpose: the billing
tests run the provider's stand-in against a service process of their own (tests/billing)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from contentplatform.billing import payment_events
from contentplatform.billing import repository as billing_repository
from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.events import service as events
from contentplatform.kit.db import Database
from tests.conftest import Run
from tests.events.support import SYSTEM, Trail, payloads
from tests.support.orgs import org_fixture
from tests.support.servers import AppServer

trail = org_fixture(Trail)
other = org_fixture(Trail, second=True)


def a_plan(run: Run) -> tuple[str, str]:
    """A subscription plan of the catalogue, not for sale (the suite sells nothing): its price
    id and key."""
    price_id, key = f"price_{uuid.uuid4().hex[:12]}", f"pro-{uuid.uuid4().hex[:6]}"

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await billing_repository.upsert_plan(
                session,
                price_id,
                {
                    "key": key,
                    "name": "Pro",
                    "kind": "subscription",
                    "interval": "month",
                    "price_amount": 2900,
                    "currency": "usd",
                    "monthly_credits": 5000,
                    "limits": {},
                    "features": [],
                    "provider_product_id": f"prod_{uuid.uuid4().hex[:12]}",
                    "active": False,
                },
            )

    run(scenario)
    return price_id, key


def subscription_event(
    server: AppServer, tenant_id: uuid.UUID, price_id: str, status: str, created: int
) -> str:
    """Store and apply a customer.subscription.updated event: its status. On the service's own
    loop, as its webhook would: a change of plan retires the tenant's cached flags, in the
    service's cache (Redis: its connections belong to that loop)."""
    obj: dict[str, Any] = {
        "id": f"sub_{tenant_id.hex[:12]}",
        "object": "subscription",
        "customer": f"cus_{tenant_id.hex[:12]}",
        "status": status,
        "metadata": {"tenant_id": str(tenant_id)},
        "items": {"data": [{"price": {"id": price_id}}]},
    }
    payload = {
        "id": f"evt_{uuid.uuid4().hex}",
        "type": "customer.subscription.updated",
        "created": created,
        "data": {"object": obj},
    }

    async def scenario() -> str:
        db = runtime.current().db
        async with db.unit_of_work() as session:
            stored = await payment_events.receive_event(
                session, payload["id"], payload["type"], payload
            )
        assert stored is not None
        async with db.unit_of_work() as session:
            return await payment_events.process_event(session, stored)

    assert server.loop is not None
    status_after: str = asyncio.run_coroutine_threadsafe(scenario(), server.loop).result(30)
    asyncio.run_coroutine_threadsafe(events.wake_dispatcher(), server.loop).result(10)
    return status_after


def test_a_change_of_plan_or_status_is_told_once(
    trail: Trail, other: Trail, run: Run, settings: Settings, server: AppServer
) -> None:
    price_id, key = a_plan(run)
    now = int(time.time())

    assert subscription_event(server, trail.tenant_id, price_id, "active", now) == "processed"
    row = trail.one("subscription.updated", trail.tenant_id)
    assert row["resource_type"] == "tenant"
    assert row["actor"] == SYSTEM
    # The same state again is no change.
    assert subscription_event(server, trail.tenant_id, price_id, "active", now + 1) == "processed"
    assert subscription_event(server, trail.tenant_id, price_id, "past_due", now + 2) == "processed"

    assert payloads(settings, trail.tenant_id, "subscription.updated") == [
        {"plan": key, "status": "active", "previous_plan": None, "previous_status": "none"},
        {"plan": key, "status": "past_due", "previous_plan": key, "previous_status": "active"},
    ]
    assert trail.activity(action="subscription.updated")["total"] == 2
    assert other.activity(action="subscription.updated")["total"] == 0
