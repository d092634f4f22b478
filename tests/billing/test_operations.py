"""billing.listPlans, getSubscription, listInvoices, createCheckoutSession, createPortalSession
and getUsage, over REST and RPC, against the Stripe stand-in."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from tests.billing.conftest import ALLOWED_ORIGIN, Billing
from tests.support.orgs import Org
from tests.support.stripe_standin import StripeStandIn

URLS = {"successUrl": f"{ALLOWED_ORIGIN}/done", "cancelUrl": f"{ALLOWED_ORIGIN}/back"}


def test_plans_are_mirrored_from_stripe_with_the_free_plan_first(billing: Billing):
    pro = billing.plan("pro")
    assert pro["kind"] == "subscription" and pro["interval"] == "month"
    assert pro["price_amount"] == 2900 and pro["currency"] == "usd"
    assert pro["monthly_credits"] == 5000 and pro["rollover_cap"] == 1000
    assert pro["limits"] == {
        "members": 3, "documents": 100, "storage_bytes": None, "active_jobs": 2,
        "publishers": None, "webhook_endpoints": None, "api_keys": None, "crawl_pages": None,
    }  # fmt: skip
    assert pro["features"] == ["priority support", "custom voice"]
    assert pro["is_current"] is False
    pack = billing.plan("pack-1000")
    assert pack["kind"] == "credit_pack" and pack["interval"] is None
    assert pack["pack_credits"] == 1000
    listed = billing.ok("billing.listPlans", role="member")
    keys = [p["key"] for p in listed["data"]]
    assert keys[0] == "free" and listed["total"] == len(keys)
    assert {"pro", "pack-1000"} <= set(keys)
    assert "Not ours" not in {p["name"] for p in listed["data"]}  # no `kind`: not mirrored
    free = listed["data"][0]
    assert free["id"] is None and free["is_current"] is True and free["price_amount"] == 0
    assert free["limits"]["members"] == 5 and free["limits"]["active_jobs"] == 1


def test_a_new_tenant_is_on_the_free_plan(billing: Billing):
    found = billing.ok("billing.getSubscription", role="member")
    assert found["status"] == "none" and found["plan_id"] is None and found["plan_key"] == "free"
    assert found["provider"] == "none" and found["payment_method"] is None
    assert found["next_grant_at"] is not None


def test_buying_a_pack_starts_a_payment_checkout_the_stand_in_sees_exactly(
    billing: Billing, stripe_standin: StripeStandIn
):
    pack = billing.plan("pack-1000")
    before = len(stripe_standin.writes)
    made = billing.checkout("pack-1000", quantity=3)
    assert made["id"].startswith("cs_test_") and made["url"].startswith("https://")
    assert made["expires_at"]
    tenant = str(billing.tenant_id)
    writes = stripe_standin.writes[before:]
    assert [(m, p) for m, p, _ in writes] == [
        ("POST", "/v1/customers"),
        ("POST", "/v1/checkout/sessions"),
    ]
    assert writes[0][2]["metadata[tenant_id]"] == tenant
    customer = stripe_standin.session(made["id"])["customer"]
    sent = writes[1][2]
    assert sent["mode"] == "payment" and sent["customer"] == customer
    assert sent["client_reference_id"] == tenant and sent["metadata[tenant_id]"] == tenant
    assert sent["metadata[plan_id]"] == pack["id"] and sent["metadata[quantity]"] == "3"
    assert sent["line_items[0][quantity]"] == "3"
    assert sent["success_url"] == URLS["successUrl"].replace("/done", "/billing/done")

    # A second checkout reuses the customer: one write, the session.
    again = len(stripe_standin.writes)
    billing.checkout("pack-1000")
    assert [(m, p) for m, p, _ in stripe_standin.writes[again:]] == [
        ("POST", "/v1/checkout/sessions")
    ]


def test_subscribing_starts_a_subscription_checkout(billing: Billing, stripe_standin):
    made = billing.checkout("pro")
    sent = stripe_standin.writes[-1][2]
    assert sent["mode"] == "subscription" and sent["line_items[0][quantity]"] == "1"
    assert sent["subscription_data[metadata][tenant_id]"] == str(billing.tenant_id)
    assert stripe_standin.session(made["id"])["mode"] == "subscription"


def test_checkout_refusals_write_nothing_at_stripe(billing: Billing, stripe_standin):
    pack = billing.plan("pack-1000")["id"]
    pro = billing.plan("pro")["id"]
    before = len(stripe_standin.writes)
    cases = [
        ({"planId": pack, **URLS, "successUrl": "http://app.example.test/x"}, 400),
        ({"planId": pack, **URLS, "cancelUrl": "https://evil.example.test/x"}, 400),
        ({"planId": pack, **URLS, "successUrl": "javascript:alert(1)"}, 400),
        ({"planId": pack, **URLS, "successUrl": "https://app.example.test/\x00"}, 400),
        ({"planId": pack, **URLS, "quantity": 11}, 400),
        ({"planId": pack, **URLS, "quantity": 0}, 400),
        ({"planId": pro, **URLS, "quantity": 2}, 400),
        ({"planId": str(uuid.uuid4()), **URLS}, 404),
    ]
    for data, status in cases:
        answer = billing.request("billing.createCheckoutSession", data)
        assert answer.status_code == status, (data, answer.text)
    for role in ("member", "editor"):
        refused = billing.request(
            "billing.createCheckoutSession", {"planId": pack, **URLS}, role=role
        )
        assert refused.status_code == 403
    assert stripe_standin.writes[before:] == []


def test_a_return_url_may_be_on_an_origin_the_organization_allows(billing: Billing):
    pack = billing.plan("pack-1000")["id"]
    shop = {"planId": pack, **URLS, "successUrl": "https://shop.example.test/thanks"}
    assert billing.request("billing.createCheckoutSession", shop).status_code == 400
    billing.ok(
        "settings.update", {"security": {"allowedRedirectOrigins": ["https://shop.example.test"]}}
    )
    assert billing.ok("billing.createCheckoutSession", shop)["id"].startswith("cs_test_")
    other = billing.request("billing.createPortalSession", {"returnUrl": "https://x.example.test"})
    assert other.status_code == 400 and other.json()["errors"][0]["path"] == "returnUrl"


def test_stripe_failing_is_503_retryable(billing: Billing, stripe_standin):
    billing.plan("pack-1000")
    stripe_standin.fail_with(500)
    answer = billing.request(
        "billing.createCheckoutSession", {"planId": billing.plan("pack-1000")["id"], **URLS}
    )
    assert answer.status_code == 503, answer.text
    assert answer.json()["retryable"] is True


def test_the_portal_needs_a_customer_first(billing: Billing, stripe_standin):
    data = {"returnUrl": f"{ALLOWED_ORIGIN}/billing"}
    before = len(stripe_standin.writes)
    refused = billing.request("billing.createPortalSession", data)
    assert refused.status_code == 409 and refused.json()["code"] == "CONFLICT"
    assert stripe_standin.writes[before:] == []
    assert billing.request("billing.createPortalSession", data, role="editor").status_code == 403
    bad = billing.request("billing.createPortalSession", {"returnUrl": "https://elsewhere.test/"})
    assert bad.status_code == 400

    billing.checkout("pack-1000")
    opened = billing.ok("billing.createPortalSession", {**data, "flow": "payment_method_update"})
    assert opened["url"].startswith("https://billing.stripe.test/")
    method, path, sent = stripe_standin.writes[-1]
    assert (method, path) == ("POST", "/v1/billing_portal/sessions")
    assert sent["return_url"] == data["returnUrl"]
    assert sent["flow_data[type]"] == "payment_method_update"


def test_invoices_are_for_admins_and_start_empty(billing: Billing):
    page = billing.ok("billing.listInvoices")
    assert page == {"data": [], "total": 0, "page": 1, "limit": 20}
    for role in ("member", "editor"):
        assert billing.request("billing.listInvoices", role=role).status_code == 403
    for bad in ({"limit": 0}, {"limit": 101}, {"page": 0}, {"status": "lost"}):
        assert billing.request("billing.listInvoices", bad).status_code == 400, bad


def test_usage_bounds_are_400(billing: Billing):
    now = datetime.now(UTC)
    for bad in (
        {"startDate": (now - timedelta(days=400)).isoformat()},
        {"startDate": (now - timedelta(days=8)).isoformat(), "bucketWidth": "1h"},
        {"startDate": now.isoformat(), "endDate": (now - timedelta(days=1)).isoformat()},
        {"startDate": (now - timedelta(days=1)).isoformat(), "bucketWidth": "1w"},
        {"startDate": (now - timedelta(days=1)).isoformat(), "groupBy": "planet"},
        {},
    ):
        answer = billing.request("billing.getUsage", bad, role="member")
        assert answer.status_code == 400, (bad, answer.text)


def test_usage_is_read_in_buckets(billing: Billing):
    start = (datetime.now(UTC) - timedelta(days=3)).isoformat()
    found = billing.ok("billing.getUsage", {"startDate": start, "groupBy": "kind"}, role="member")
    assert set(found) == {"data", "total"}


def test_a_second_tenant_sees_none_of_the_first_ones_billing(
    billing: Billing, other_billing: Billing
):
    billing.checkout("pack-1000")
    assert other_billing.ok("billing.getSubscription")["provider"] == "none"
    assert other_billing.ok("billing.listInvoices")["total"] == 0
    refused = other_billing.request(
        "billing.createPortalSession", {"returnUrl": f"{ALLOWED_ORIGIN}/x"}
    )
    assert refused.status_code == 409  # the first tenant's customer is not theirs


def test_billing_unconfigured_is_the_free_plan_and_buys_nothing(
    unconfigured: Org, billing: Billing
):
    # The catalogue the configured process mirrored is in the same database, unlisted here.
    pack = billing.plan("pack-1000")["id"]
    plans = unconfigured.ok("billing.listPlans", role="member")
    assert [p["key"] for p in plans["data"]] == ["free"]
    assert plans["data"][0]["is_current"] is True
    assert plans["data"][0]["limits"]["members"] is None  # unlimited unless configured
    assert unconfigured.ok("billing.getSubscription")["status"] == "none"
    assert unconfigured.ok("billing.listInvoices")["total"] == 0
    bought = unconfigured.request("billing.createCheckoutSession", {"planId": pack, **URLS})
    assert bought.status_code == 503, bought.text
    assert bought.json()["retryable"] is False
    unknown = {"planId": str(uuid.uuid4()), **URLS}
    assert unconfigured.request("billing.createCheckoutSession", unknown).status_code == 404
    portal = unconfigured.request("billing.createPortalSession", {"returnUrl": URLS["cancelUrl"]})
    assert portal.status_code == 409  # no customer: as configured
    event = unconfigured.client.post(
        "/api/webhooks/payments", content=b"{}", headers={"Stripe-Signature": "t=1,v1=00"}
    )
    assert event.status_code == 400
