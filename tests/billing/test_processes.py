"""A kill -9 between storing a payment event and granting its credits: after the restart (and
Stripe's redelivery of the same event) the pack is granted exactly once. Real `contentplatform
serve` processes (tests/support/processes.py), each on the test's own databases."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any, cast

from sqlalchemy import Table, insert, text

from contentplatform.billing.models import PaymentEvent
from contentplatform.kit.db import utcnow
from tests.billing.conftest import PATH, billing_settings, key_of
from tests.support.processes import LOOPBACK, Service, Services, Stack, wait_for
from tests.support.stripe_standin import (
    PACK_METADATA,
    StripeStandIn,
    new_webhook_secret,
    signed_event,
)

EVENTS = cast(Table, PaymentEvent.__table__)


def _tenant_and_pack(stack: Stack, service: Service) -> tuple[uuid.UUID, str]:
    org = f"org_kill_{uuid.uuid4().hex[:8]}"
    headers = {
        "Authorization": f"Bearer {stack.token(org, f'admin-{org}', 'admin')}",
        "x-idp-org-id": org,
    }
    tenant_id = uuid.UUID(
        LOOPBACK.get(f"{service.url}/v1/system/whoami", headers=headers).json()["tenant_id"]
    )

    def pack_id() -> str | None:
        plans = LOOPBACK.get(f"{service.url}/v1/billing/plans", headers=headers).json()["data"]
        return next((p["id"] for p in plans if p["key"] == "pack-1000"), None)

    return tenant_id, wait_for("the catalogue to be mirrored", pack_id, service)


def _completed(tenant_id: uuid.UUID, pack_id: str) -> dict[str, Any]:
    return {
        "id": f"cs_test_{uuid.uuid4().hex}",
        "object": "checkout.session",
        "mode": "payment",
        "payment_status": "paid",
        "status": "complete",
        "client_reference_id": str(tenant_id),
        "metadata": {"tenant_id": str(tenant_id), "plan_id": pack_id, "quantity": "1"},
        "payment_intent": f"pi_{uuid.uuid4().hex}",
        "customer": None,
    }


def _granted(stack: Stack, tenant_id: uuid.UUID, reference: str) -> list[Any]:
    return stack.rows(
        text(
            "SELECT granted FROM credit_buckets WHERE tenant_id = :t AND reference = :r"
        ).bindparams(t=key_of(stack, tenant_id), r=reference)
    )


def _status(stack: Stack, event_id: str) -> str | None:
    rows = stack.rows(
        text("SELECT status FROM payment_events WHERE event_id = :e").bindparams(e=event_id)
    )
    return rows[0][0] if rows else None


def test_a_kill_between_the_event_and_the_grant_grants_exactly_once(
    stack: Stack, services: Services
):
    with StripeStandIn() as standin:
        standin.add_product("1,000 credits", PACK_METADATA, amount=900)
        secret = new_webhook_secret()
        settings = billing_settings(standin, secret)
        first = services.start(**settings)
        tenant_id, pack_id = _tenant_and_pack(stack, first)
        done = _completed(tenant_id, pack_id)
        event_id = f"evt_{uuid.uuid4().hex}"
        body, headers = signed_event(secret, "checkout.session.completed", done, event_id=event_id)

        # Delivered, and the process killed at once: stored, and maybe applied or not.
        answer = LOOPBACK.post(f"{first.url}{PATH}", content=body, headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text
        first.kill()

        second = services.start(**settings)
        # Stripe redelivers (it saw the 200, but a retry after a timeout looks the same).
        body, headers = signed_event(secret, "checkout.session.completed", done, event_id=event_id)
        again = LOOPBACK.post(f"{second.url}{PATH}", content=body, headers=headers, timeout=30)
        assert again.json() == {"received": True, "duplicate": True}
        wait_for("the event to be applied", lambda: _status(stack, event_id) == "processed", second)
        assert _granted(stack, tenant_id, done["id"]) == [(1000,)]


def test_an_event_stored_without_its_workflow_is_applied_once_on_restart(
    stack: Stack, services: Services
):
    """The exact crash: the event's row committed, the process gone before its workflow
    started. The reconciler of the next process applies it; a redelivery is a duplicate."""
    with StripeStandIn() as standin:
        standin.add_product("1,000 credits", PACK_METADATA, amount=900)
        secret = new_webhook_secret()
        settings = billing_settings(standin, secret)
        first = services.start(**settings)
        tenant_id, pack_id = _tenant_and_pack(stack, first)
        first.stop()

        done = _completed(tenant_id, pack_id)
        event_id = f"evt_{uuid.uuid4().hex}"
        body, headers = signed_event(secret, "checkout.session.completed", done, event_id=event_id)

        with stack.engine.begin() as connection:
            connection.execute(
                insert(EVENTS).values(
                    id=uuid.uuid4(),
                    source="stripe",
                    event_id=event_id,
                    type="checkout.session.completed",
                    payload=json.loads(body),
                    status="received",
                    created_at=utcnow() - timedelta(minutes=5),
                    updated_at=utcnow() - timedelta(minutes=5),
                )
            )

        second = services.start(**settings)
        wait_for("the reconciler to apply it", lambda: _status(stack, event_id) == "processed",
                 second)  # fmt: skip
        again = LOOPBACK.post(f"{second.url}{PATH}", content=body, headers=headers, timeout=30)
        assert again.json() == {"received": True, "duplicate": True}
        assert _granted(stack, tenant_id, done["id"]) == [(1000,)]
