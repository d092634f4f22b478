"""A feature flag's `plans` where billing is configured, over REST and RPC: admin.updateFeatureFlag
checks each key against the plan catalogue mirrored from Stripe (`free` and a subscription
plan's key pass; an unknown key or a credit pack's is 400 naming `plans.<n>`, nothing stored),
and a tenant whose subscription puts it on a listed plan has the flag (source `plan`) at once,
while a tenant on the free plan does not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from contentplatform.auth import devkeys
from tests.admin.support import Operator
from tests.billing.conftest import Billing
from tests.billing.test_events import subscribe
from tests.conftest import Caller
from tests.support.orgs import Org
from tests.support.problems import problem
from tests.support.processes import Stack
from tests.support.stripe_standin import StripeStandIn

KEY = "topic_suggestions"


@pytest.fixture
def operator(call: Caller, billing_stack: Stack) -> Operator:
    """A superadmin of the billing tests' service."""

    def mint(org: str | None, user: str, **extra: Any) -> str:
        return devkeys.mint_token(billing_stack.data_dir, org=org, user=user, **extra)

    return Operator(call, mint)


@pytest.fixture
def restored(operator: Operator, billing_stack: Stack) -> Iterator[None]:
    """The flag as declared again after the test (its stored setting removed), every cached
    evaluation retired by a change."""
    yield
    with billing_stack.engine.begin() as connection:
        connection.execute(
            text("DELETE FROM feature_flag_settings WHERE key = :key").bindparams(key=KEY)
        )
    operator.ok("admin.updateFeatureFlag", {"key": KEY, "tenantOverrides": {}})


def flag_of(org: Org) -> dict[str, Any]:
    [found] = [f for f in org.ok("features.list", role="member")["data"] if f["key"] == KEY]
    return found


def test_plans_are_checked_against_the_catalogue(
    operator: Operator, billing: Billing, restored: None
) -> None:
    billing.plan("pro")  # mirrored from the stand-in
    before = operator.ok("admin.listFeatureFlags")
    for bad, at in ((["enterprise"], 0), (["free", "pack-1000"], 1), (["pro", "Pro"], 1)):
        body = problem(
            operator.request("admin.updateFeatureFlag", {"key": KEY, "plans": bad}),
            400,
            "BAD_REQUEST",
        )
        assert [error["path"] for error in body["errors"]] == [f"plans.{at}"], body
        assert bad[at] in body["detail"]
    assert operator.ok("admin.listFeatureFlags") == before

    changed = operator.ok("admin.updateFeatureFlag", {"key": KEY, "plans": ["free", "pro"]})
    assert changed["plans"] == ["free", "pro"]


def test_a_subscription_to_a_listed_plan_turns_the_flag_on_at_once(
    send,
    operator: Operator,
    billing: Billing,
    other_billing: Billing,
    stripe_standin: StripeStandIn,
    billing_stack: Stack,
    restored: None,
) -> None:
    billing.plan("pro")
    operator.ok(
        "admin.updateFeatureFlag",
        {"key": KEY, "defaultEnabled": False, "rolloutPercent": None, "plans": ["pro"]},
    )
    assert (flag_of(billing)["enabled"], flag_of(billing)["source"]) == (False, "default")

    subscribe(send, billing, stripe_standin, billing_stack)  # its cached evaluation retired
    assert (flag_of(billing)["enabled"], flag_of(billing)["source"]) == (True, "plan")
    assert (flag_of(other_billing)["enabled"], flag_of(other_billing)["source"]) == (
        False,
        "default",
    )
    # The operator's override of the tenant still wins over its plan.
    tenant = str(billing.tenant_id)
    operator.ok("admin.updateFeatureFlag", {"key": KEY, "tenantOverrides": {tenant: False}})
    assert (flag_of(billing)["enabled"], flag_of(billing)["source"]) == (False, "override")
    operator.ok("admin.updateFeatureFlag", {"key": KEY, "tenantOverrides": {tenant: None}})
    assert flag_of(billing)["source"] == "plan"
