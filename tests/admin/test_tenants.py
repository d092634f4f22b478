"""admin.listTenants, getTenant, updateTenant and setTenantStatus over REST and RPC: the
operator's list (search, filters, sorting, paging), one tenant's detail with its own numbers
only, plan and limit overrides that billing's quota then reads, suspension (the tenant's
operations 403 at once, its public feed 404, its admins told) and reactivation, each refusal
(404 unknown tenant, 400 bad note/reason/plan), every change in the tenant's trail with the
superadmin as actor."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from contentplatform.billing.models import Plan
from contentplatform.config import Settings
from contentplatform.kit.db import Database
from tests.admin.support import NOBODY, Operator
from tests.conftest import Run
from tests.events.support import Trail, payloads
from tests.support.orgs import Org
from tests.support.problems import problem


def detail(operator: Operator, org: Org) -> dict[str, Any]:
    return operator.ok("admin.getTenant", {"id": str(org.tenant_id)})


def make_plan(run: Run, **limits: int | None) -> Plan:
    async def scenario(db: Database) -> Plan:
        async with db.unit_of_work() as session:
            plan = Plan(
                key=f"pro_{uuid.uuid4().hex[:6]}",
                name="Pro",
                kind="subscription",
                interval="month",
                price_amount=4900,
                currency="usd",
                monthly_credits=5000,
                pack_credits=0,
                rollover_cap=0,
                limits=limits,
                features=[],
                provider_product_id=f"prod_{uuid.uuid4().hex[:8]}",
                provider_price_id=f"price_{uuid.uuid4().hex[:8]}",
                active=True,
            )
            session.add(plan)
        return plan

    made: Plan = run(scenario)
    return made


# --- listTenants --------------------------------------------------------------------------------


def test_the_list_finds_a_tenant_by_org_id_or_name_with_its_summary(
    operator: Operator, tenant: Org, other_tenant: Org
) -> None:
    tenant.whoami("admin")
    tenant_id = tenant.tenant_id  # the member joins too
    other_tenant.whoami()
    found = operator.ok("admin.listTenants", {"search": tenant.org})
    assert found["total"] == 1 and found["page"] == 1 and found["limit"] == 50
    [row] = found["data"]
    assert row["id"] == str(tenant_id)
    assert row["idp_org_id"] == tenant.org and row["name"] == tenant.org
    assert row["status"] == "active" and row["plan_id"] is None
    assert row["subscription_status"] == "none"
    assert row["members"] == 2  # the member and the admin who called
    assert row["credits_used_30d"] == 0 and row["credits_available"] >= 0
    assert row["created_at"] and row["last_active_at"]
    # By name, case-insensitively; a LIKE wildcard is a plain character.
    assert operator.ok("admin.listTenants", {"search": tenant.org.upper()})["total"] == 1
    assert operator.ok("admin.listTenants", {"search": "%"})["total"] == 0


def test_the_list_filters_sorts_and_pages(operator: Operator, tenant: Org, other_tenant: Org):
    tenant.whoami()
    other_tenant.whoami()
    shared = "org_"  # every test organization's id starts so
    by_name = operator.ok("admin.listTenants", {"search": shared, "sortBy": "name", "limit": 100})
    names = [row["name"].lower() for row in by_name["data"]]
    assert names == sorted(names)
    newest = operator.ok("admin.listTenants", {"search": shared, "limit": 1, "page": 2})
    assert len(newest["data"]) == 1 and newest["total"] >= 2 and newest["page"] == 2
    operator.ok(
        "admin.setTenantStatus",
        {"id": str(other_tenant.tenant_id), "status": "suspended", "reason": "Unpaid for months"},
    )
    suspended = operator.ok("admin.listTenants", {"status": "suspended", "limit": 100})
    assert str(other_tenant.tenant_id) in [row["id"] for row in suspended["data"]]
    assert str(tenant.tenant_id) not in [row["id"] for row in suspended["data"]]
    assert all(row["status"] == "suspended" for row in suspended["data"])
    used = operator.ok("admin.listTenants", {"sortBy": "credits_used_30d", "limit": 100})
    counts = [row["credits_used_30d"] for row in used["data"]]
    assert counts == sorted(counts, reverse=True)


def test_the_list_refuses_bad_input(operator: Operator) -> None:
    for bad in ({"limit": 101}, {"page": 0}, {"sortBy": "credits"}, {"status": "deleted"}):
        problem(operator.request("admin.listTenants", bad), 400, "BAD_REQUEST")
    problem(operator.request("admin.listTenants", {"search": "a\x00b"}), 400, "BAD_REQUEST")


# --- getTenant ----------------------------------------------------------------------------------


def test_the_detail_shows_the_tenants_own_numbers_only(
    operator: Operator, tenant: Org, other_tenant: Org
) -> None:
    mine_before, theirs_before = detail(operator, tenant), detail(operator, other_tenant)
    operator.ok(
        "admin.grantCredits",
        {
            "id": str(tenant.tenant_id),
            "amount": 700,
            "reason": "Goodwill",
            "idempotencyKey": str(uuid.uuid4()),
        },
    )
    mine, theirs = detail(operator, tenant), detail(operator, other_tenant)
    assert mine["credits_available"] == mine_before["credits_available"] + 700
    assert theirs == theirs_before
    assert mine["id"] == str(tenant.tenant_id) and theirs["id"] == str(other_tenant.tenant_id)
    assert mine["plan_override"] is None and mine["limits_override"] is None
    assert mine["feature_overrides"] == [] and mine["suspension"] is None
    assert mine["subscription"]["plan_key"] == "free"
    assert mine["usage_30d_by_kind"] == [] and mine["open_tickets"] == 0
    assert mine["active_impersonations"] == 0


def test_an_unknown_tenant_is_404(operator: Operator) -> None:
    problem(operator.request("admin.getTenant", {"id": NOBODY}), 404, "NOT_FOUND")
    problem(operator.request("admin.getTenant", {"id": "not-a-uuid"}), 400, "BAD_REQUEST")


# --- updateTenant -------------------------------------------------------------------------------


def test_a_limits_override_wins_over_the_plan_and_is_audited(
    operator: Operator, tenant: Org, other_tenant: Org, settings: Settings
) -> None:
    trail = Trail.of(tenant)
    before = {i["key"]: i["limit"] for i in tenant.ok("billing.getQuota")["items"]}
    changed = operator.ok(
        "admin.updateTenant",
        {
            "id": str(tenant.tenant_id),
            "limitsOverride": {"documents": 50, "activeJobs": None},
            "note": "Pilot customer, agreed by sales",
        },
    )
    assert changed["limits_override"] == {"documents": 50, "active_jobs": None}
    limits = {i["key"]: i["limit"] for i in tenant.ok("billing.getQuota")["items"]}
    assert limits["documents"] == 50 and limits["active_jobs"] is None
    # The other organization keeps the free plan's.
    theirs = {i["key"]: i["limit"] for i in other_tenant.ok("billing.getQuota")["items"]}
    assert theirs == before

    row = trail.one("tenant.overridden", scope="audit")
    assert row["actor"]["id"] == operator.subject
    notes = [p["note"] for p in payloads(settings, tenant.tenant_id, "tenant.overridden")]
    assert notes == ["Pilot customer, agreed by sales"]
    assert row["changes"]["limits_override"]["to"] == {"documents": 50, "active_jobs": None}

    removed = operator.ok(
        "admin.updateTenant",
        {"id": str(tenant.tenant_id), "limitsOverride": None, "note": "Pilot is over now"},
    )
    assert removed["limits_override"] is None
    assert {i["key"]: i["limit"] for i in tenant.ok("billing.getQuota")["items"]} == before


def test_a_plan_override_applies_until_its_end(operator: Operator, tenant: Org, run: Run) -> None:
    plan = make_plan(run, documents=9)
    until = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    changed = operator.ok(
        "admin.updateTenant",
        {
            "id": str(tenant.tenant_id),
            "planOverride": {"planId": str(plan.id), "until": until.isoformat()},
            "note": "Trial of the Pro plan",
        },
    )
    assert changed["plan_override"]["plan_id"] == str(plan.id)
    assert changed["plan_id"] == str(plan.id)
    quota = tenant.ok("billing.getQuota")
    assert quota["plan_key"] == plan.key
    assert {i["key"]: i["limit"] for i in quota["items"]}["documents"] == 9
    listed = operator.ok("admin.listTenants", {"planId": str(plan.id)})
    assert [row["id"] for row in listed["data"]] == [str(tenant.tenant_id)]
    # Ended: the subscription (none: the free plan) applies again.
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    ended = operator.ok(
        "admin.updateTenant",
        {
            "id": str(tenant.tenant_id),
            "planOverride": {"planId": str(plan.id), "until": past},
            "note": "Trial of the Pro plan ended",
        },
    )
    assert ended["plan_override"] is None and ended["plan_id"] is None
    assert tenant.ok("billing.getQuota")["plan_key"] == "free"


def test_an_update_is_refused_without_a_note_or_with_an_unknown_plan(
    operator: Operator, tenant: Org
) -> None:
    target = str(tenant.tenant_id)
    for note in (None, "too short", "x" * 501, "a note with a NUL \x00"):
        data: dict[str, Any] = {"id": target, "limitsOverride": {"members": 3}}
        if note is not None:
            data["note"] = note
        problem(operator.request("admin.updateTenant", data), 400, "BAD_REQUEST")
    problem(
        operator.request(
            "admin.updateTenant",
            {"id": target, "planOverride": {"planId": NOBODY}, "note": "A plan nobody has"},
        ),
        400,
        "BAD_REQUEST",
    )
    problem(
        operator.request(
            "admin.updateTenant",
            {"id": target, "limitsOverride": {"members": -1}, "note": "Negative members"},
        ),
        400,
        "BAD_REQUEST",
    )
    problem(
        operator.request("admin.updateTenant", {"id": NOBODY, "note": "Nobody has this tenant"}),
        404,
        "NOT_FOUND",
    )
    assert detail(operator, tenant)["limits_override"] is None


# --- setTenantStatus ----------------------------------------------------------------------------


def suspend(operator: Operator, org: Org, status: str = "suspended") -> dict[str, Any]:
    return operator.ok(
        "admin.setTenantStatus",
        {"id": str(org.tenant_id), "status": status, "reason": f"Operator set {status}"},
    )


def test_a_suspended_tenant_is_refused_at_once_and_admitted_again_when_reactivated(
    operator: Operator, tenant: Org, other_tenant: Org
) -> None:
    trail = Trail.of(tenant)
    secret = tenant.ok("settings.createApiKey", {"name": "Feed key", "role": "editor"})["secret"]
    # Cached access first: the suspension must retire it.
    assert tenant.request("drafts.list", role="member").status_code == 200
    assert tenant.call("drafts.list", {}, token=secret).status_code == 200
    feed = {"x-tenant-id": str(tenant.tenant_id)}
    assert tenant.call("public.listBlogs", {}, headers=feed).status_code == 200

    suspended = suspend(operator, tenant)
    assert suspended["status"] == "suspended"
    assert suspended["suspension"]["reason"] == "Operator set suspended"
    assert suspended["suspension"]["by"] == operator.subject
    for role in ("member", "admin"):
        body = problem(tenant.request("drafts.list", role=role), 403, "FORBIDDEN")
        assert "suspended" in body["detail"]
    problem(tenant.call("drafts.list", {}, token=secret), 403, "FORBIDDEN")
    problem(tenant.call("public.listBlogs", {}, headers=feed), 404, "NOT_FOUND")
    # The other organization goes on.
    assert other_tenant.request("drafts.list").status_code == 200
    # Suspending it again changes nothing.
    assert suspend(operator, tenant)["suspension"] == suspended["suspension"]

    back = suspend(operator, tenant, "active")
    assert back["status"] == "active" and back["suspension"] is None
    assert tenant.request("drafts.list", role="member").status_code == 200
    assert tenant.call("public.listBlogs", {}, headers=feed).status_code == 200
    for action in ("tenant.suspended", "tenant.reactivated"):
        row = trail.one(action)
        assert row["actor"]["id"] == operator.subject
        assert row["resource_id"] == str(tenant.tenant_id)


def test_the_tenants_admins_are_notified_of_a_suspension(operator: Operator, tenant: Org) -> None:
    tenant.whoami("admin")
    tenant.whoami("member")
    suspend(operator, tenant)
    suspend(operator, tenant, "active")
    titles = wait_for_titles(
        tenant, "admin", {"Organization suspended", "Organization reactivated"}
    )
    assert {"Organization suspended", "Organization reactivated"} <= titles
    member = {n["title"] for n in tenant.ok("notifications.list", role="member")["data"]}
    assert "Organization suspended" not in member


def wait_for_titles(org: Org, role: str, wanted: set[str]) -> set[str]:
    """The titles of the role's notifications once they include `wanted` (bounded)."""
    deadline = time.monotonic() + 20
    while True:
        titles = {n["title"] for n in org.ok("notifications.list", role=role)["data"]}
        if wanted <= titles or time.monotonic() > deadline:
            return titles
        time.sleep(0.05)


def test_a_status_change_is_refused_without_a_reason_or_for_nobody(
    operator: Operator, tenant: Org
) -> None:
    target = str(tenant.tenant_id)
    for bad in (
        {"id": target, "status": "suspended"},
        {"id": target, "status": "suspended", "reason": "short"},
        {"id": target, "status": "deleted", "reason": "A long enough reason"},
        {"id": target, "status": "suspended", "reason": "x\x00" * 10},
    ):
        problem(operator.request("admin.setTenantStatus", bad), 400, "BAD_REQUEST")
    problem(
        operator.request(
            "admin.setTenantStatus",
            {"id": NOBODY, "status": "suspended", "reason": "A long enough reason"},
        ),
        404,
        "NOT_FOUND",
    )
    assert tenant.request("drafts.list").status_code == 200
