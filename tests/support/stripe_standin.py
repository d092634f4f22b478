"""A Stripe-shaped payment provider's API, for tests (and by hand: `python -m
tests.support.stripe_standin` serves one on a free port, with a plan and a credit pack, and
prints its URL and a webhook secret).

Not named `stripe.py`: tests/support/zygote.py runs as a script from this folder, where a
`stripe.py` would shadow the `stripe` library the service imports.

It speaks the paths and object shapes the `stripe` library calls for billing (form-encoded
requests, JSON answers, errors `{error: {type, message}}`):

    GET  /v1/products                    {object: list, data, has_more}
    GET  /v1/prices                      {object: list, data, has_more}
    POST /v1/customers                   name, metadata[...]
    GET  /v1/customers/{id}
    POST /v1/checkout/sessions           mode, customer, client_reference_id, metadata[...],
                                         line_items[0][price|quantity], success_url, cancel_url
    POST /v1/billing_portal/sessions     customer, return_url, flow_data[...]

Every write is recorded in `writes` (method, path, form fields as a flat dict), so a test
asserts the provider saw exactly the writes it expects and none on a refused request;
`fail_with(status)` makes the next request fail. `signed_event(...)` builds an event and signs
it as Stripe does (`Stripe-Signature: t=<ts>,v1=<hex HMAC-SHA256 of "<t>.<body>">`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.support.servers import LoopbackServer, send

SECRET_KEY = "sk_test_standin"


def new_webhook_secret() -> str:
    return "whsec_" + secrets.token_hex(16)


def signature(secret: str, body: bytes, timestamp: int) -> str:
    payload = f"{timestamp}.".encode() + body
    return hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()


def signed_event(
    secret: str,
    type: str,
    data_object: dict[str, Any],
    *,
    event_id: str | None = None,
    created: int | None = None,
    timestamp: float | None = None,
    livemode: bool = False,
) -> tuple[bytes, dict[str, str]]:
    """The body and headers Stripe sends for event `type` about `data_object`."""
    event = {
        "id": event_id or f"evt_{uuid.uuid4().hex[:24]}",
        "object": "event",
        "api_version": "2025-03-31.basil",
        "created": created if created is not None else int(time.time()),
        "livemode": livemode,
        "pending_webhooks": 1,
        "type": type,
        "data": {"object": data_object},
    }
    body = json.dumps(event).encode()
    sent_at = int(timestamp if timestamp is not None else time.time())
    headers = {
        "Stripe-Signature": f"t={sent_at},v1={signature(secret, body, sent_at)}",
        "content-type": "application/json",
    }
    return body, headers


def _form(raw: bytes) -> dict[str, str]:
    """A form body as Stripe's library sends it, flat: {"metadata[tenant_id]": "...", ...}."""
    return dict(parse_qsl(raw.decode(), keep_blank_values=True))


def _list(items: list[dict[str, Any]], path: str) -> dict[str, Any]:
    return {"object": "list", "data": items, "has_more": False, "url": path}


def _error(status: int, message: str, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"type": type, "message": message}}


class StripeStandIn(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.products: dict[str, dict[str, Any]] = {}
        self.prices: dict[str, dict[str, Any]] = {}
        self.customers: dict[str, dict[str, Any]] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str, dict[str, str]]] = []
        self.auth: list[str | None] = []
        self._fail: list[int] = []

    # --- what a test sets up and reads ----------------------------------------------------

    def add_product(
        self,
        name: str,
        metadata: dict[str, str],
        *,
        amount: int,
        interval: str | None = None,
        currency: str = "usd",
    ) -> dict[str, Any]:
        """A product with one price; the price (its `product` the product's id)."""
        product_id = f"prod_{uuid.uuid4().hex[:14]}"
        price_id = f"price_{uuid.uuid4().hex[:14]}"
        product = {
            "id": product_id,
            "object": "product",
            "active": True,
            "name": name,
            "metadata": metadata,
            "created": int(time.time()),
        }
        price = {
            "id": price_id,
            "object": "price",
            "active": True,
            "currency": currency,
            "unit_amount": amount,
            "product": product_id,
            "type": "recurring" if interval else "one_time",
            "recurring": {"interval": interval, "interval_count": 1} if interval else None,
            "lookup_key": None,
            "metadata": {},
        }
        with self.lock:
            self.products[product_id] = product
            self.prices[price_id] = price
        return price

    def fail_with(self, status: int) -> None:
        self._fail.append(status)

    def writes_for(self, tenant_id: str) -> list[tuple[str, str, dict[str, str]]]:
        return [w for w in self.writes if tenant_id in json.dumps(w[2])]

    def session(self, session_id: str) -> dict[str, Any]:
        return self.sessions[session_id]

    def completed(self, session_id: str, **changes: Any) -> dict[str, Any]:
        """The checkout session as Stripe reports it once the customer paid."""
        made = self.sessions[session_id]
        done = {**made, "status": "complete", "payment_status": "paid", **changes}
        if made["mode"] == "payment" and not done.get("payment_intent"):
            done["payment_intent"] = f"pi_{uuid.uuid4().hex[:20]}"
        if made["mode"] == "subscription" and not done.get("subscription"):
            done["subscription"] = f"sub_{uuid.uuid4().hex[:20]}"
        return done

    # --- serving ----------------------------------------------------------------------------

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("content-length") or 0)
        raw = request.rfile.read(length) if length else b""
        url = urlsplit(request.path)
        method = request.command
        body = _form(raw) if method == "POST" else dict(parse_qsl(url.query))
        with self.lock:
            self.auth.append(request.headers.get("authorization"))
            if method != "GET":
                self.writes.append((method, url.path, body))
            if self._fail:
                status = self._fail.pop(0)
                return send(request, status, {}, _error(status, f"failed {status}", "api_error"))
            status, payload = self._answer(method, url.path, body)
        send(request, status, {"request-id": f"req_{uuid.uuid4().hex[:14]}"}, payload)

    def _answer(self, method: str, path: str, body: dict[str, str]) -> tuple[int, Any]:
        now = int(time.time())
        if method == "GET" and path == "/v1/products":
            wanted = body.get("active")
            found = [
                p
                for p in self.products.values()
                if wanted is None or str(p["active"]).lower() == wanted
            ]
            return 200, _list(found, path)
        if method == "GET" and path == "/v1/prices":
            wanted = body.get("active")
            found = [
                p
                for p in self.prices.values()
                if wanted is None or str(p["active"]).lower() == wanted
            ]
            return 200, _list(found, path)
        if method == "POST" and path == "/v1/customers":
            customer = {
                "id": f"cus_{uuid.uuid4().hex[:14]}",
                "object": "customer",
                "name": body.get("name"),
                "metadata": _nested(body, "metadata"),
                "created": now,
                "livemode": False,
            }
            self.customers[customer["id"]] = customer
            return 200, customer
        if method == "GET" and path.startswith("/v1/customers/"):
            found = self.customers.get(path.rsplit("/", 1)[1])
            return (200, found) if found else (404, _error(404, "No such customer"))
        if method == "POST" and path == "/v1/checkout/sessions":
            return self._checkout(body, now)
        if method == "POST" and path == "/v1/billing_portal/sessions":
            if body.get("customer") not in self.customers:
                return 400, _error(400, "No such customer")
            session_id = f"bps_{uuid.uuid4().hex[:20]}"
            return 200, {
                "id": session_id,
                "object": "billing_portal.session",
                "customer": body["customer"],
                "return_url": body.get("return_url"),
                "url": f"https://billing.stripe.test/p/session/{session_id}",
                "created": now,
                "livemode": False,
            }
        return 404, _error(404, f"Unrecognized request URL ({method}: {path})")

    def _checkout(self, body: dict[str, str], now: int) -> tuple[int, Any]:
        price = self.prices.get(body.get("line_items[0][price]", ""))
        if price is None:
            return 400, _error(400, "No such price")
        if body.get("customer") not in self.customers:
            return 400, _error(400, "No such customer")
        quantity = int(body.get("line_items[0][quantity]", "1"))
        session_id = f"cs_test_{uuid.uuid4().hex[:24]}"
        made = {
            "id": session_id,
            "object": "checkout.session",
            "mode": body.get("mode"),
            "status": "open",
            "payment_status": "unpaid",
            "customer": body.get("customer"),
            "client_reference_id": body.get("client_reference_id"),
            "metadata": _nested(body, "metadata"),
            "amount_total": (price["unit_amount"] or 0) * quantity,
            "currency": price["currency"],
            "success_url": body.get("success_url"),
            "cancel_url": body.get("cancel_url"),
            "url": f"https://checkout.stripe.test/c/pay/{session_id}",
            "expires_at": now + 24 * 3600,
            "created": now,
            "livemode": False,
            "payment_intent": None,
            "subscription": None,
        }
        self.sessions[session_id] = made
        return 200, made


def _nested(body: dict[str, str], name: str) -> dict[str, str]:
    """`name[key]=value` form fields as {key: value}."""
    prefix = f"{name}["
    return {
        key[len(prefix) : -1]: value
        for key, value in body.items()
        if key.startswith(prefix) and key.endswith("]") and "][" not in key
    }


def subscription(
    customer: str,
    price_id: str,
    status: str = "active",
    *,
    subscription_id: str | None = None,
    tenant_id: str | None = None,
    period_days: int = 30,
    **changes: Any,
) -> dict[str, Any]:
    """A Stripe Subscription object on one price."""
    start = int(time.time())
    end = start + period_days * 86_400
    return {
        "id": subscription_id or f"sub_{uuid.uuid4().hex[:20]}",
        "object": "subscription",
        "customer": customer,
        "status": status,
        "cancel_at_period_end": False,
        "trial_end": None,
        "metadata": {"tenant_id": tenant_id} if tenant_id else {},
        "items": {
            "object": "list",
            "data": [
                {
                    "id": f"si_{uuid.uuid4().hex[:14]}",
                    "price": {"id": price_id, "object": "price"},
                    "quantity": 1,
                    "current_period_start": start,
                    "current_period_end": end,
                }
            ],
        },
        **changes,
    }


def invoice(
    customer: str,
    subscription_id: str | None,
    price_id: str | None,
    status: str = "paid",
    *,
    invoice_id: str | None = None,
    amount: int = 2900,
    period_days: int = 30,
) -> dict[str, Any]:
    """A Stripe Invoice object (the API's current shape: the subscription under `parent`)."""
    start = int(time.time())
    end = start + period_days * 86_400
    made = invoice_id or f"in_{uuid.uuid4().hex[:20]}"
    return {
        "id": made,
        "object": "invoice",
        "customer": customer,
        "number": f"CP-{made[-6:].upper()}",
        "status": status,
        "amount_due": amount,
        "amount_paid": amount if status == "paid" else 0,
        "currency": "usd",
        "created": start,
        "period_start": start,
        "period_end": start,
        "hosted_invoice_url": f"https://invoice.stripe.test/i/{made}",
        "invoice_pdf": f"https://invoice.stripe.test/i/{made}/pdf",
        "parent": (
            {
                "type": "subscription_details",
                "subscription_details": {"subscription": subscription_id},
            }
            if subscription_id
            else None
        ),
        "lines": {
            "object": "list",
            "data": [
                {
                    "id": f"il_{uuid.uuid4().hex[:14]}",
                    "amount": amount,
                    "period": {"start": start, "end": end},
                    "pricing": {"price_details": {"price": price_id}} if price_id else None,
                }
            ],
        },
    }


def charge(payment_intent: str, *, amount: int = 900, refunded: bool = True) -> dict[str, Any]:
    return {
        "id": f"ch_{uuid.uuid4().hex[:20]}",
        "object": "charge",
        "amount": amount,
        "amount_refunded": amount if refunded else amount // 2,
        "refunded": refunded,
        "payment_intent": payment_intent,
        "currency": "usd",
    }


PLAN_METADATA = {
    "kind": "subscription",
    "plan_key": "pro",
    "monthly_credits": "5000",
    "rollover_cap": "1000",
    "limit_members": "3",
    "limit_active_jobs": "2",
    "limit_documents": "100",
    "features": "priority support,custom voice",
}
PACK_METADATA = {"kind": "credit_pack", "plan_key": "pack-1000", "pack_credits": "1000"}


if __name__ == "__main__":
    with StripeStandIn() as standin:
        standin.add_product("Pro", PLAN_METADATA, amount=2900, interval="month")
        standin.add_product("1,000 credits", PACK_METADATA, amount=900)
        secret = new_webhook_secret()
        print(f"CONTENTPLATFORM_STRIPE_API_BASE={standin.url}", flush=True)
        print(f"CONTENTPLATFORM_STRIPE_SECRET_KEY={SECRET_KEY}", flush=True)
        print(f"CONTENTPLATFORM_STRIPE_WEBHOOK_SECRET={secret}", flush=True)
        threading.Event().wait()
