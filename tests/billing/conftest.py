"""A service process of its own for the billing tests (`contentplatform serve` on backends of
its own, tests/support/processes.py), with the Stripe stand-in as its payment provider and a
webhook signing secret; and a second process on the same databases with billing not configured.
`call`, `tenant` and `other_tenant` reach the configured one over its socket.

A process rather than a second app in the suite's process: payment events are applied by DBOS
workflows, and DBOS (one per process) belongs to the suite's own service there.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from contentplatform.auth import devkeys
from contentplatform.auth.context import Role
from tests.conftest import Caller
from tests.support.backends import clear_redis
from tests.support.orgs import Org, new_org
from tests.support.processes import Service, Services, Stack, _databases
from tests.support.stripe_standin import (
    PACK_METADATA,
    PLAN_METADATA,
    SECRET_KEY,
    StripeStandIn,
    new_webhook_secret,
    signed_event,
)

ALLOWED_ORIGIN = "https://app.example.test"
PATH = "/api/webhooks/payments"
DEADLINE = 15.0


@pytest.fixture(scope="package")
def stripe_standin() -> Iterator[StripeStandIn]:
    with StripeStandIn() as standin:
        standin.add_product("Pro", PLAN_METADATA, amount=2900, interval="month")
        standin.add_product("1,000 credits", PACK_METADATA, amount=900)
        standin.add_product("Not ours", {}, amount=100)  # no `kind`: never mirrored
        yield standin


@pytest.fixture(scope="package")
def webhook_secret() -> str:
    return new_webhook_secret()


@pytest.fixture(scope="package")
def billing_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    redis_url = os.environ.get("CONTENTPLATFORM_TEST_REDIS_URL")
    run = uuid.uuid4().hex[:10]
    prefix = f"cptest:billing:{run}:"
    tmp_path: Path = tmp_path_factory.mktemp("billing")
    with _databases(tmp_path, run) as (database_url, dbos_database_url):
        found = Stack(tmp_path, database_url, dbos_database_url, redis_url, prefix)
        try:
            yield found
        finally:
            found.engine.dispose()
            clear_redis(redis_url, prefix)


def billing_settings(standin: StripeStandIn, secret: str) -> dict[str, str]:
    return {
        "stripe_secret_key": SECRET_KEY,
        "stripe_api_base": standin.url,
        "stripe_webhook_secret": secret,
        "billing_redirect_origins": f'["{ALLOWED_ORIGIN}"]',
        "free_plan_limits": '{"members": 5, "active_jobs": 1, "documents": 2, "api_keys": 1}',
        "reconcile_interval_seconds": "1",
    }


@pytest.fixture(scope="package")
def billing_services(billing_stack: Stack) -> Iterator[Services]:
    services = Services(billing_stack)
    try:
        yield services
    finally:
        services.close()


@pytest.fixture(scope="package")
def billing_service(
    billing_services: Services, stripe_standin: StripeStandIn, webhook_secret: str
) -> Service:
    return billing_services.start(**billing_settings(stripe_standin, webhook_secret))


@pytest.fixture(scope="package")
def unconfigured_service(billing_services: Services, billing_service: Service) -> Service:
    """Billing not configured: no Stripe key, no webhook secret (started after the configured
    one, which migrated the databases)."""
    return billing_services.start(reconcile_interval_seconds="1", executor_id="unconfigured")


@pytest.fixture(scope="package")
def client(billing_service: Service) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=billing_service.url, timeout=30) as http:
        yield http


@pytest.fixture(scope="package")
def in_process_client(client: httpx.Client) -> httpx.Client:
    return client


@pytest.fixture(scope="package")
def openapi_document(client: httpx.Client) -> dict[str, Any]:
    return client.get("/openapi.json").json()


@pytest.fixture(scope="package")
def token(billing_stack: Stack, billing_service: Service) -> Callable[..., str]:
    def mint(org: str | None = None, user: str | None = None, role: str = "member") -> str:
        subject = user or f"user_{uuid.uuid4().hex[:8]}"
        return devkeys.mint_token(billing_stack.data_dir, org=org, user=subject, role=Role(role))

    return mint


@pytest.fixture
def unconfigured(
    request: pytest.FixtureRequest,
    unconfigured_service: Service,
    openapi_document: dict[str, Any],
    token: Callable[..., str],
) -> Iterator[Org]:
    """An organization on the process where billing is not configured, over REST."""
    with httpx.Client(base_url=unconfigured_service.url, timeout=30) as http:
        yield Org(Caller(http, openapi_document, "rest"), http, token, new_org())


@pytest.fixture
def send(client: httpx.Client, webhook_secret: str) -> Callable[..., httpx.Response]:
    """Deliver a signed event: send(type, object, event_id=..., created=..., secret=...)."""

    def post(type: str, obj: dict[str, Any], **options: Any) -> httpx.Response:
        secret = options.pop("secret", webhook_secret)
        body, headers = signed_event(secret, type, obj, **options)
        return client.post(PATH, content=body, headers=headers)

    return post


def eventually(check: Callable[[], Any], deadline: float = DEADLINE) -> Any:
    end = time.monotonic() + deadline
    while True:
        found = check()
        if found or time.monotonic() > end:
            return found
        time.sleep(0.05)


def event_status(stack: Stack, event_id: str) -> str | None:
    rows = stack.rows(
        text("SELECT status FROM payment_events WHERE event_id = :id").bindparams(id=event_id)
    )
    return rows[0][0] if rows else None


def settled(stack: Stack, event_id: str) -> str:
    """The event's status once its workflow applied it (processed, ignored or failed)."""
    found = eventually(lambda: event_status(stack, event_id) not in (None, "received"))
    assert found, f"event {event_id} was not applied"
    status = event_status(stack, event_id)
    assert status is not None
    return status


def key_of(stack: Stack, tenant_id: uuid.UUID) -> Any:
    """A uuid as the database holds it (SQLite: 32 hex digits)."""
    return tenant_id.hex if stack.engine.dialect.name == "sqlite" else tenant_id


def granted(stack: Stack, tenant_id: uuid.UUID) -> dict[str, int]:
    """The credits granted to the tenant, by reference (the credits domain's buckets)."""
    rows = stack.rows(
        text(
            "SELECT reference, granted, remaining FROM credit_buckets "
            "WHERE tenant_id = :tenant AND reference IS NOT NULL"
        ).bindparams(tenant=key_of(stack, tenant_id))
    )
    return {row[0]: row[1] for row in rows}


class Billing(Org):
    """An organization whose admin buys things through the stand-in."""

    def plans(self) -> dict[str, dict[str, Any]]:
        return {p["key"]: p for p in self.ok("billing.listPlans", role="member")["data"]}

    def plan(self, key: str) -> dict[str, Any]:
        found = eventually(lambda: self.plans().get(key))
        assert found, f"plan {key} was never mirrored"
        return found  # type: ignore[no-any-return]

    def checkout(self, key: str, quantity: int = 1) -> dict[str, Any]:
        return self.ok(  # type: ignore[no-any-return]
            "billing.createCheckoutSession",
            {
                "planId": self.plan(key)["id"],
                "quantity": quantity,
                "successUrl": f"{ALLOWED_ORIGIN}/billing/done",
                "cancelUrl": f"{ALLOWED_ORIGIN}/billing",
            },
        )


@pytest.fixture
def billing(tenant: Org) -> Billing:
    return Billing.of(tenant)


@pytest.fixture
def other_billing(other_tenant: Org) -> Billing:
    return Billing.of(other_tenant)
