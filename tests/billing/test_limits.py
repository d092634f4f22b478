"""billing.service.plan_limits and check_limit, what quota and the guarded writes read: the free
plan's limits (unlimited unless configured), a paid plan's once subscribed, and the 403 naming
the limit. Below the API, on the suite's database."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic import SecretStr

from contentplatform.billing import repository, service
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.config import Settings
from contentplatform.kit.db import Database
from tests.support.orgs import new_tenant


def test_the_error_names_the_limit():
    error = PlanLimitReached("active_jobs", 3)
    assert error.status == 403 and error.code == "FORBIDDEN"
    assert error.detail == "Your plan allows 3 active jobs; upgrade to add more."
    assert error.extensions == {"limit_key": "active_jobs", "limit": 3}


def test_unconfigured_every_tenant_is_free_and_unlimited(run: Any):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        async with db.unit_of_work() as session:
            limits = await service.plan_limits(session, tenant_id)
            assert limits.plan_key == "free" and limits.members is None
            assert limits.active_jobs is None and limits.monthly_credits
            await service.check_limit(session, tenant_id, "active_jobs", used=10_000)

    run(scenario)


def test_a_subscribed_plan_sets_the_limits(
    run: Any, settings: Settings, monkeypatch: pytest.MonkeyPatch
):
    configured = settings.model_copy(
        update={"stripe_secret_key": SecretStr("sk_test_x"), "free_plan_limits": {"members": 2}}
    )
    monkeypatch.setattr(service, "_settings", lambda: configured)

    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        async with db.unit_of_work() as session:
            free = await service.plan_limits(session, tenant_id)
            assert free.plan_key == "free" and free.members == 2 and free.documents is None
            await service.check_limit(session, tenant_id, "members", used=1)
            with pytest.raises(PlanLimitReached) as refused:
                await service.check_limit(session, tenant_id, "members", used=1, adding=2)
            assert refused.value.limit_key == "members" and refused.value.limit == 2

            price = f"price_{uuid.uuid4().hex}"
            plan = await repository.upsert_plan(session, price, _pro(price))
            row = await repository.subscription_for_update(session, tenant_id)
            row.plan_id, row.status = plan.id, "active"
        async with db.unit_of_work() as session:
            paid = await service.plan_limits(session, tenant_id)
            assert (paid.plan_key, paid.active_jobs, paid.members) == (plan.key, 3, None)
            assert paid.monthly_credits == 5000
            with pytest.raises(PlanLimitReached, match="allows 3 active jobs"):
                await service.check_limit(session, tenant_id, "active_jobs", used=3)
            row = await repository.subscription_for_update(session, tenant_id)
            row.status = "unpaid"  # back on the free plan's limits
        async with db.unit_of_work() as session:
            assert (await service.plan_limits(session, tenant_id)).plan_key == "free"

    run(scenario)


def _pro(price: str) -> dict[str, Any]:
    return {
        "key": f"pro-{price[-6:]}",
        "name": "Pro",
        "kind": "subscription",
        "interval": "month",
        "price_amount": 2900,
        "currency": "usd",
        "monthly_credits": 5000,
        "pack_credits": 0,
        "rollover_cap": 0,
        "limits": {"active_jobs": 3, "members": None},
        "features": [],
        "active": True,
        "provider_product_id": f"prod_{price[-6:]}",
    }
