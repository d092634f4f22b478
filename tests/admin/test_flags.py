"""admin.listFeatureFlags and admin.updateFeatureFlag over REST and RPC, and the acceptance of
the rollout: 30 % of 10,000 synthetic tenant ids (+/- 3 %), the same in another process (a
restart), and the same through the operator's stored setting. A change shows at once in the
tenants' cached evaluations; tenant overrides win and are removed by null, one tenant's never
seen by another; a setting's plans turn the flag on for the tenants on them (source `plan`, at
once when a tenant's plan changes; an override still wins); unknown flag 404, unknown tenant
404, bounds 400 (an unknown plan is 400 where billing is configured: tests/billing)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import delete

from contentplatform.billing.models import Plan
from contentplatform.features import flags
from contentplatform.features import repository as flag_settings
from contentplatform.features.models import FeatureFlagSetting
from contentplatform.kit.db import Database
from tests.admin.support import NOBODY, Operator
from tests.conftest import Run
from tests.events.support import Trail
from tests.support.orgs import Org
from tests.support.problems import problem

KEY = "topic_suggestions"
DECLARED = flags.FLAGS[KEY]
SYNTHETIC = 10_000


def share_in(ids: list[uuid.UUID], percent: int) -> float:
    return sum(flags.in_rollout(KEY, tenant_id, percent) for tenant_id in ids) / len(ids)


def test_a_30_percent_rollout_hits_30_percent_of_10000_tenants_stably() -> None:
    ids = [uuid.uuid4() for _ in range(SYNTHETIC)]
    assert 0.27 <= share_in(ids, 30) <= 0.33
    # Monotone: a tenant in at 30 % stays in at 40 %.
    assert all(flags.in_rollout(KEY, t, 40) for t in ids if flags.in_rollout(KEY, t, 30))
    # Another process (another hash seed) places every tenant where this one does.
    sample = [str(t) for t in ids[:500]]
    script = (
        "import json, sys, uuid\n"
        "from contentplatform.features import flags\n"
        "ids = json.load(sys.stdin)\n"
        f"print(json.dumps([flags.bucket({KEY!r}, uuid.UUID(i)) for i in ids]))\n"
    )
    elsewhere = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(sample),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert json.loads(elsewhere.stdout) == [flags.bucket(KEY, uuid.UUID(i)) for i in sample]


@pytest.fixture
def restored(run: Run, operator: Operator) -> Iterator[None]:
    """The flag as declared in code again after the test (its stored setting removed: the
    settings are the platform's, and other tests read the global config's rollout)."""
    yield

    async def forget(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(delete(FeatureFlagSetting).where(FeatureFlagSetting.key == KEY))

    run(forget)
    # Every process's cached evaluations are retired by the next change: make one.
    operator.ok("admin.updateFeatureFlag", {"key": KEY, "tenantOverrides": {}})


def flag_of(org: Org) -> dict[str, Any]:
    [found] = [f for f in org.ok("features.list", role="member")["data"] if f["key"] == KEY]
    return found


def test_the_list_shows_every_declared_flag(operator: Operator) -> None:
    listed = operator.ok("admin.listFeatureFlags")
    assert listed["total"] == len(listed["data"]) == len(flags.FLAGS)
    assert [f["key"] for f in listed["data"]] == list(flags.FLAGS)
    chat = listed["data"][0]
    assert set(chat) == {
        "key", "description", "stage", "default_enabled", "rollout_percent", "plans",
        "opt_in_allowed", "tenant_overrides", "updated_at",
    }  # fmt: skip
    assert chat["description"] == flags.FLAGS["chat"].description


def test_a_stored_30_percent_rollout_decides_at_once_by_the_same_hash(
    operator: Operator, tenant: Org, run: Run, restored: None
) -> None:
    assert flag_of(tenant)["enabled"] is True  # cached now
    changed = operator.ok(
        "admin.updateFeatureFlag",
        {"key": KEY, "defaultEnabled": False, "rolloutPercent": 30, "plans": ["pro"]},
    )
    assert changed["rollout_percent"] == 30 and changed["default_enabled"] is False
    assert changed["plans"] == ["pro"] and changed["stage"] == DECLARED.stage
    assert changed["updated_at"] is not None
    seen = flag_of(tenant)
    assert seen["source"] == "rollout"
    assert seen["enabled"] is flags.in_rollout(KEY, tenant.tenant_id, 30)

    async def stored_share(db: Database) -> float:
        async with db.unit_of_work() as session:
            setting, _ = (await flag_settings.settings(session))[KEY]
        ids = [uuid.uuid4() for _ in range(SYNTHETIC)]
        on = [flags.evaluate(DECLARED, t, {}, None, setting).enabled for t in ids]
        return sum(on) / SYNTHETIC

    assert 0.27 <= run(stored_share) <= 0.33


def test_tenant_overrides_win_and_are_removed_by_null(
    operator: Operator, tenant: Org, other_tenant: Org, restored: None
) -> None:
    theirs = flag_of(other_tenant)
    off = operator.ok(
        "admin.updateFeatureFlag", {"key": KEY, "tenantOverrides": {str(tenant.tenant_id): False}}
    )
    assert off["tenant_overrides"] >= 1
    assert flag_of(tenant) == {**flag_of(tenant), "enabled": False, "source": "override"}
    assert flag_of(other_tenant) == theirs
    # An opt-in cannot change the operator's word.
    refused = tenant.request("features.setOptIn", {"key": KEY, "enabled": True}, role="admin")
    problem(refused, 409, "CONFLICT")
    detail = operator.ok("admin.getTenant", {"id": str(tenant.tenant_id)})
    assert detail["feature_overrides"] == [{"key": KEY, "enabled": False, "source": "override"}]
    row = Trail.of(tenant).one("feature.overridden", scope="audit")
    assert row["actor"]["id"] == operator.subject

    operator.ok(
        "admin.updateFeatureFlag", {"key": KEY, "tenantOverrides": {str(tenant.tenant_id): None}}
    )
    assert flag_of(tenant)["source"] != "override"
    assert operator.ok("admin.getTenant", {"id": str(tenant.tenant_id)})["feature_overrides"] == []


def test_an_update_is_refused_for_an_unknown_flag_tenant_or_bound(operator: Operator) -> None:
    before = operator.ok("admin.listFeatureFlags")
    problem(
        operator.request("admin.updateFeatureFlag", {"key": "teleport", "rolloutPercent": 5}),
        404,
        "NOT_FOUND",
    )
    problem(
        operator.request(
            "admin.updateFeatureFlag", {"key": KEY, "tenantOverrides": {NOBODY: True}}
        ),
        404,
        "NOT_FOUND",
    )
    for bad in (
        {"rolloutPercent": 101},
        {"rolloutPercent": -1},
        {"stage": "gamma"},
        {"plans": ["x"] * 51},
        {"tenantOverrides": {"not-a-uuid": True}},
        {"defaultEnabled": "maybe"},
    ):
        problem(
            operator.request("admin.updateFeatureFlag", {"key": KEY, **bad}), 400, "BAD_REQUEST"
        )
    assert operator.ok("admin.listFeatureFlags") == before


# --- plans --------------------------------------------------------------------------------------


def pro_plan(run: Run) -> str:
    """A plan of the catalogue whose key is `pro` (billing is not configured here: a tenant is
    on it through the operator's plan override)."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            plan = Plan(
                key="pro",
                name="Pro",
                kind="subscription",
                interval="month",
                price_amount=2900,
                currency="usd",
                monthly_credits=5000,
                pack_credits=0,
                rollover_cap=0,
                limits={},
                features=[],
                provider_product_id=f"prod_{uuid.uuid4().hex[:8]}",
                provider_price_id=f"price_{uuid.uuid4().hex[:8]}",
                active=True,
            )
            session.add(plan)
        return str(plan.id)

    made: str = run(scenario)
    return made


def on_plan(operator: Operator, org: Org, plan_id: str | None) -> None:
    override = {"planId": plan_id} if plan_id else None
    operator.ok(
        "admin.updateTenant",
        {"id": str(org.tenant_id), "planOverride": override, "note": "Feature flag plans test"},
    )


def test_a_flags_plans_turn_it_on_for_the_tenants_on_them(
    operator: Operator, tenant: Org, other_tenant: Org, run: Run, restored: None
) -> None:
    pro = pro_plan(run)
    assert flag_of(tenant)["source"] == "default"  # cached now
    changed = operator.ok(
        "admin.updateFeatureFlag",
        {"key": KEY, "defaultEnabled": False, "rolloutPercent": None, "plans": ["pro"]},
    )
    assert changed["plans"] == ["pro"] and changed["rollout_percent"] is None
    # Both on the free plan: off.
    assert flag_of(tenant) == {**flag_of(tenant), "enabled": False, "source": "default"}

    # On pro (the operator's plan override): on at once, its cached evaluation retired.
    on_plan(operator, tenant, pro)
    assert flag_of(tenant) == {**flag_of(tenant), "enabled": True, "source": "plan"}
    tenant.ok("generation.suggestTopics", {"count": 5}, role="editor")
    # The other tenant, on the free plan, stays off, and its operation behind the flag is 403.
    assert flag_of(other_tenant) == {**flag_of(other_tenant), "enabled": False, "source": "default"}
    refused = other_tenant.request("generation.suggestTopics", {"count": 5}, role="editor")
    assert problem(refused, 403, "FORBIDDEN")["feature"] == KEY

    # The operator's override of the tenant still wins over its plan.
    operator.ok(
        "admin.updateFeatureFlag", {"key": KEY, "tenantOverrides": {str(tenant.tenant_id): False}}
    )
    assert flag_of(tenant) == {**flag_of(tenant), "enabled": False, "source": "override"}
    operator.ok(
        "admin.updateFeatureFlag", {"key": KEY, "tenantOverrides": {str(tenant.tenant_id): None}}
    )
    assert flag_of(tenant)["source"] == "plan"

    # Back on the free plan: off again at once.
    on_plan(operator, tenant, None)
    assert flag_of(tenant) == {**flag_of(tenant), "enabled": False, "source": "default"}


def test_the_free_plan_may_be_listed_and_a_rollout_reaches_the_other_tenants(
    operator: Operator, tenant: Org, run: Run, restored: None
) -> None:
    operator.ok(
        "admin.updateFeatureFlag",
        {"key": KEY, "defaultEnabled": False, "rolloutPercent": 100, "plans": ["free"]},
    )
    assert flag_of(tenant) == {**flag_of(tenant), "enabled": True, "source": "plan"}
    on_plan(operator, tenant, pro_plan(run))
    assert flag_of(tenant) == {**flag_of(tenant), "enabled": True, "source": "rollout"}
    listed = operator.ok("admin.listFeatureFlags")
    [shown] = [flag for flag in listed["data"] if flag["key"] == KEY]
    assert shown["plans"] == ["free"] and shown["rollout_percent"] == 100
