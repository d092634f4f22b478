"""POST /api/webhooks/payments: Stripe-signed events, stored once, applied once by a workflow,
out-of-order safe; the money they move granted exactly once."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tests.billing.conftest import PATH, Billing, event_status, granted, key_of, settled
from tests.support.processes import Stack
from tests.support.stripe_standin import (
    PACK_METADATA,
    PLAN_METADATA,
    StripeStandIn,
    charge,
    invoice,
    signature,
    signed_event,
    subscription,
)


def grants(stack: Stack, tenant_id: uuid.UUID) -> dict[str, tuple[int, bool]]:
    """Billing's record of what it granted: reference -> (amount, revoked)."""
    rows = stack.rows(
        text(
            "SELECT reference, amount, revoked FROM billing_credit_grants WHERE tenant_id = :t"
        ).bindparams(t=key_of(stack, tenant_id))
    )
    return {row[0]: (row[1], bool(row[2])) for row in rows}


def bought_pack(billing: Billing, standin: StripeStandIn, quantity: int = 2) -> dict[str, Any]:
    made = billing.checkout("pack-1000", quantity=quantity)
    return standin.completed(made["id"])


def test_a_completed_pack_checkout_grants_once_and_its_replay_is_a_duplicate(
    send, billing: Billing, stripe_standin: StripeStandIn, billing_stack: Stack
):
    done = bought_pack(billing, stripe_standin, quantity=2)
    event_id = f"evt_{uuid.uuid4().hex}"
    first = send("checkout.session.completed", done, event_id=event_id)
    assert first.status_code == 200, first.text
    assert first.json() == {"received": True, "duplicate": False}
    assert settled(billing_stack, event_id) == "processed"
    assert grants(billing_stack, billing.tenant_id) == {done["id"]: (2000, False)}
    assert granted(billing_stack, billing.tenant_id) == {done["id"]: 2000}

    # Stripe retries with the same event id: acknowledged, nothing changes.
    again = send("checkout.session.completed", done, event_id=event_id)
    assert again.json() == {"received": True, "duplicate": True}
    # The same checkout reported by another event: applied, granting nothing more.
    other = f"evt_{uuid.uuid4().hex}"
    assert send("checkout.session.completed", done, event_id=other).status_code == 200
    assert settled(billing_stack, other) == "processed"
    assert grants(billing_stack, billing.tenant_id) == {done["id"]: (2000, False)}
    assert granted(billing_stack, billing.tenant_id) == {done["id"]: 2000}


def test_an_unpaid_checkout_grants_nothing_until_its_payment_succeeds(
    send, billing: Billing, stripe_standin: StripeStandIn, billing_stack: Stack
):
    done = bought_pack(billing, stripe_standin, quantity=1)
    pending = {**done, "payment_status": "unpaid"}
    waiting = f"evt_{uuid.uuid4().hex}"
    send("checkout.session.completed", pending, event_id=waiting)
    assert settled(billing_stack, waiting) == "ignored"
    assert grants(billing_stack, billing.tenant_id) == {}
    paid = f"evt_{uuid.uuid4().hex}"
    send("checkout.session.async_payment_succeeded", done, event_id=paid)
    assert settled(billing_stack, paid) == "processed"
    assert grants(billing_stack, billing.tenant_id) == {done["id"]: (1000, False)}


@pytest.mark.parametrize("how", ["forged", "stale", "unsigned", "livemode", "not-json"])
def test_a_bad_signature_or_stale_event_is_400_and_nothing_is_stored(
    send,
    client: httpx.Client,
    webhook_secret: str,
    billing: Billing,
    stripe_standin: StripeStandIn,
    billing_stack: Stack,
    how: str,
):
    done = bought_pack(billing, stripe_standin)
    event_id = f"evt_{uuid.uuid4().hex}"
    kind = "checkout.session.completed"
    if how == "forged":
        answer = send(kind, done, event_id=event_id, secret="whsec_" + "0" * 32)
    elif how == "stale":
        answer = send(kind, done, event_id=event_id, timestamp=time.time() - 600)
    elif how == "livemode":
        answer = send(kind, done, event_id=event_id, livemode=True)
    elif how == "not-json":
        body, headers = signed_event(webhook_secret, kind, done, event_id=event_id)
        answer = client.post(PATH, content=body[:-1], headers=headers)
    else:
        answer = client.post(PATH, json={"id": event_id, "type": kind, "data": {"object": done}})
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "BAD_REQUEST"
    time.sleep(0.3)
    assert event_status(billing_stack, event_id) is None
    assert grants(billing_stack, billing.tenant_id) == {}


@pytest.mark.parametrize(
    "body", [b"[]", b'[{"id": "evt_1", "type": "x"}]', b'"event"', b"null", b"3"]
)
def test_a_signed_body_that_is_json_but_not_an_object_is_400(
    client: httpx.Client, webhook_secret: str, body: bytes
):
    sent_at = int(time.time())
    headers = {
        "Stripe-Signature": f"t={sent_at},v1={signature(webhook_secret, body, sent_at)}",
        "content-type": "application/json",
    }
    answer = client.post(PATH, content=body, headers=headers)
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "BAD_REQUEST"
    assert "not an event" in answer.json()["detail"]


def subscribe(
    send, billing: Billing, standin: StripeStandIn, stack: Stack, status: str = "active"
) -> dict[str, Any]:
    """The tenant subscribed to Pro, as Stripe reports it (checkout, then the subscription)."""
    made = billing.checkout("pro")
    done = standin.completed(made["id"])
    first = f"evt_{uuid.uuid4().hex}"
    send("checkout.session.completed", done, event_id=first)
    assert settled(stack, first) == "processed"
    price = billing.plan("pro")
    found = subscription(
        done["customer"],
        _price_id(standin, price["key"]),
        status,
        subscription_id=done["subscription"],
        tenant_id=str(billing.tenant_id),
    )
    second = f"evt_{uuid.uuid4().hex}"
    send("customer.subscription.created", found, event_id=second)
    assert settled(stack, second) == "processed"
    return found


def _price_id(standin: StripeStandIn, key: str) -> str:
    for price in standin.prices.values():
        if standin.products[price["product"]]["metadata"].get("plan_key") == key:
            return str(price["id"])
    raise AssertionError(key)


def test_a_subscription_sets_the_plan_and_an_older_update_changes_nothing(
    send, billing: Billing, stripe_standin: StripeStandIn, billing_stack: Stack
):
    found = subscribe(send, billing, stripe_standin, billing_stack)
    shown = billing.ok("billing.getSubscription", role="member")
    pro = billing.plan("pro")
    assert shown["status"] == "active" and shown["plan_id"] == pro["id"]
    assert shown["plan_key"] == "pro" and shown["provider"] == "stripe"
    assert shown["current_period_end"] and shown["next_grant_at"] == shown["current_period_end"]
    assert billing.plan("pro")["is_current"] is True
    assert billing.plans()["free"]["is_current"] is False

    # Already subscribed: a plan's checkout is 409 (change plans in the portal).
    refused = billing.request(
        "billing.createCheckoutSession",
        {
            "planId": pro["id"],
            "successUrl": "https://app.example.test/a",
            "cancelUrl": "https://app.example.test/b",
        },
    )
    assert refused.status_code == 409, refused.text

    # An update Stripe made before the state we hold, delivered late: ignored.
    late = f"evt_{uuid.uuid4().hex}"
    send(
        "customer.subscription.updated",
        {**found, "status": "canceled"},
        event_id=late,
        created=int(time.time()) - 3600,
    )
    assert settled(billing_stack, late) == "ignored"
    assert billing.ok("billing.getSubscription")["status"] == "active"

    # A newer one applies: past_due keeps the plan (grants paused).
    due = f"evt_{uuid.uuid4().hex}"
    send("customer.subscription.updated", {**found, "status": "past_due"}, event_id=due,
         created=int(time.time()) + 5)  # fmt: skip
    assert settled(billing_stack, due) == "processed"
    shown = billing.ok("billing.getSubscription")
    assert shown["status"] == "past_due" and shown["plan_key"] == "pro"
    assert shown["next_grant_at"] is None

    # Deleted: back on the free plan.
    gone = f"evt_{uuid.uuid4().hex}"
    send("customer.subscription.deleted", {**found, "status": "canceled"}, event_id=gone,
         created=int(time.time()) + 10)  # fmt: skip
    assert settled(billing_stack, gone) == "processed"
    shown = billing.ok("billing.getSubscription")
    assert shown["status"] == "canceled" and shown["plan_key"] == "free"
    assert billing.plans()["free"]["is_current"] is True


def test_a_paid_invoice_is_kept_and_grants_its_period_once(
    send, billing: Billing, other_billing: Billing, stripe_standin, billing_stack: Stack
):
    found = subscribe(send, billing, stripe_standin, billing_stack)
    paid = invoice(found["customer"], found["id"], _price_id(stripe_standin, "pro"))
    event_id = f"evt_{uuid.uuid4().hex}"
    send("invoice.paid", paid, event_id=event_id)
    assert settled(billing_stack, event_id) == "processed"
    page = billing.ok("billing.listInvoices")
    assert page["total"] == 1
    listed = page["data"][0]
    assert listed["provider_invoice_id"] == paid["id"] and listed["status"] == "paid"
    assert listed["amount_paid"] == 2900 and listed["hosted_invoice_url"].startswith("https://")
    assert listed["period_end"]
    assert billing.ok("billing.listInvoices", {"status": "open"})["total"] == 0
    assert grants(billing_stack, billing.tenant_id)[paid["id"]] == (5000, False)

    # The same invoice reported again under another event id: no second grant.
    again = f"evt_{uuid.uuid4().hex}"
    send("invoice.paid", paid, event_id=again)
    assert settled(billing_stack, again) == "processed"
    assert granted(billing_stack, billing.tenant_id)[paid["id"]] == 5000
    assert other_billing.ok("billing.listInvoices")["total"] == 0


def test_a_refunded_pack_has_its_credits_revoked_once(
    send, billing: Billing, stripe_standin, billing_stack: Stack
):
    done = bought_pack(billing, stripe_standin, quantity=1)
    bought = f"evt_{uuid.uuid4().hex}"
    send("checkout.session.completed", done, event_id=bought)
    assert settled(billing_stack, bought) == "processed"
    refund = charge(done["payment_intent"])
    for _ in range(2):
        event_id = f"evt_{uuid.uuid4().hex}"
        send("charge.refunded", refund, event_id=event_id)
        assert settled(billing_stack, event_id) == "processed"
    assert grants(billing_stack, billing.tenant_id) == {done["id"]: (1000, True)}
    remaining = billing_stack.rows(
        text("SELECT remaining FROM credit_buckets WHERE reference = :r").bindparams(r=done["id"])
    )
    assert remaining == [(0,)]


def test_an_event_about_no_tenant_of_ours_is_ignored(send, billing_stack: Stack):
    stranger = {"id": f"cs_test_{uuid.uuid4().hex}", "mode": "payment", "payment_status": "paid",
                "client_reference_id": str(uuid.uuid4()), "metadata": {}}  # fmt: skip
    event_id = f"evt_{uuid.uuid4().hex}"
    assert send("checkout.session.completed", stranger, event_id=event_id).status_code == 200
    assert settled(billing_stack, event_id) == "ignored"
    other = f"evt_{uuid.uuid4().hex}"
    send("customer.created", {"id": "cus_x"}, event_id=other)
    assert settled(billing_stack, other) == "ignored"


def test_a_product_event_mirrors_the_catalogue_again(
    send, billing: Billing, stripe_standin: StripeStandIn, billing_stack: Stack
):
    key = f"pack-{uuid.uuid4().hex[:6]}"
    price = stripe_standin.add_product("More credits", {**PACK_METADATA, "plan_key": key},
                                       amount=1900)  # fmt: skip
    event_id = f"evt_{uuid.uuid4().hex}"
    send("price.created", price, event_id=event_id)
    assert settled(billing_stack, event_id) == "processed"
    assert key in billing.plans()


def test_stripe_failing_while_an_event_is_applied_is_tried_again(
    send, billing: Billing, stripe_standin: StripeStandIn, billing_stack: Stack
):
    """A passing failure does not lose the event: it is applied once Stripe answers again."""
    key = f"pack-{uuid.uuid4().hex[:6]}"
    price = stripe_standin.add_product("Even more credits", {**PACK_METADATA, "plan_key": key},
                                       amount=2900)  # fmt: skip
    stripe_standin.fail_with(500)
    stripe_standin.fail_with(503)
    event_id = f"evt_{uuid.uuid4().hex}"
    send("price.created", price, event_id=event_id)
    assert settled(billing_stack, event_id) == "processed"
    assert key in billing.plans()


def test_of_two_subscription_events_in_one_second_the_earlier_in_its_life_never_wins(
    send, billing: Billing, stripe_standin: StripeStandIn, billing_stack: Stack
):
    """Stripe's `created` is in seconds: `created` (incomplete) and `updated` (active) often
    share one, and may arrive the other way round."""
    done = stripe_standin.completed(billing.checkout("pro")["id"])
    opened = f"evt_{uuid.uuid4().hex}"
    send("checkout.session.completed", done, event_id=opened)
    assert settled(billing_stack, opened) == "processed"
    second = int(time.time())
    found = subscription(done["customer"], _price_id(stripe_standin, "pro"), "active",
                         subscription_id=done["subscription"],
                         tenant_id=str(billing.tenant_id))  # fmt: skip

    def deliver(type: str, status: str) -> str:
        event_id = f"evt_{uuid.uuid4().hex}"
        send(type, {**found, "status": status}, event_id=event_id, created=second)
        return settled(billing_stack, event_id)

    assert deliver("customer.subscription.updated", "active") == "processed"
    assert deliver("customer.subscription.created", "incomplete") == "ignored"
    assert billing.ok("billing.getSubscription")["status"] == "active"
    assert billing.plan("pro")["is_current"] is True
    # Later in its life, in the same second: applied.
    assert deliver("customer.subscription.updated", "past_due") == "processed"
    assert billing.ok("billing.getSubscription")["status"] == "past_due"


def test_an_invoice_finalized_after_it_was_paid_in_the_same_second_stays_paid(
    send, billing: Billing, stripe_standin: StripeStandIn, billing_stack: Stack
):
    found = subscribe(send, billing, stripe_standin, billing_stack)
    paid = invoice(found["customer"], found["id"], _price_id(stripe_standin, "pro"))
    second = int(time.time())
    for type, status in (("invoice.paid", "paid"), ("invoice.finalized", "open")):
        event_id = f"evt_{uuid.uuid4().hex}"
        send(type, {**paid, "status": status}, event_id=event_id, created=second)
        assert settled(billing_stack, event_id) == "processed"
    listed = billing.ok("billing.listInvoices")["data"]
    assert [(i["provider_invoice_id"], i["status"]) for i in listed] == [(paid["id"], "paid")]
    assert grants(billing_stack, billing.tenant_id)[paid["id"]] == (5000, False)


def test_a_subscription_on_a_price_not_mirrored_yet_reads_the_catalogue_first(
    send, billing: Billing, stripe_standin: StripeStandIn, billing_stack: Stack
):
    """A price made and sold before its price.created arrived: the subscription is on it."""
    key = f"team-{uuid.uuid4().hex[:6]}"
    price = stripe_standin.add_product("Team", {**PLAN_METADATA, "plan_key": key}, amount=9900,
                                       interval="month")  # fmt: skip
    assert key not in billing.plans()
    found = subscription(f"cus_{uuid.uuid4().hex[:14]}", price["id"], "active",
                         tenant_id=str(billing.tenant_id))  # fmt: skip
    event_id = f"evt_{uuid.uuid4().hex}"
    send("customer.subscription.created", found, event_id=event_id)
    assert settled(billing_stack, event_id) == "processed"
    shown = billing.ok("billing.getSubscription")
    assert shown["status"] == "active" and shown["plan_key"] == key
    assert billing.plans()[key]["is_current"] is True
