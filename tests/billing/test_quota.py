"""billing.getQuota and the writes its limits guard, over REST and RPC, on the billing process,
whose free plan allows 5 members, 1 active job, 2 documents and 1 API key
(tests/billing/conftest.py)."""

from __future__ import annotations

import uuid

from tests.billing.conftest import Billing
from tests.support.orgs import Org

KEYS = [
    "credits",
    "members",
    "documents",
    "storage_bytes",
    "active_jobs",
    "publishers",
    "webhook_endpoints",
    "api_keys",
]


def items(org: Org, role: str = "member") -> dict[str, dict]:
    found = org.ok("billing.getQuota", role=role)
    assert [item["key"] for item in found["items"]] == KEYS
    return {item["key"]: item for item in found["items"]}


def job(name: str, status: str = "active") -> dict:
    return {"name": name, "topics": ["Watering"], "status": status}


def refused(response, key: str, limit: int) -> None:
    assert response.status_code == 403, response.text
    problem = response.json()
    assert problem["code"] == "FORBIDDEN"
    assert problem["limit_key"] == key and problem["limit"] == limit
    assert f"Your plan allows {limit} " in problem["detail"]


def test_a_new_tenant_sees_the_free_plan_s_limits_and_nothing_used(billing: Billing):
    found = billing.ok("billing.getQuota", role="member")
    assert found["plan_key"] == "free"
    assert found["period_start"] < found["period_end"]
    quota = items(billing)
    assert quota["active_jobs"] == {
        "key": "active_jobs", "limit": 1, "used": 0, "remaining": 1, "resets_at": None,
    }  # fmt: skip
    assert quota["members"]["limit"] == 5 and quota["members"]["used"] >= 1  # the caller
    assert quota["documents"]["limit"] == 2 and quota["documents"]["remaining"] == 2
    assert quota["storage_bytes"]["limit"] is None and quota["storage_bytes"]["remaining"] is None
    assert quota["credits"]["limit"] > 0 and quota["credits"]["used"] == 0
    assert quota["credits"]["resets_at"] == found["period_end"]
    assert quota["webhook_endpoints"]["used"] == 0


def test_an_active_job_past_the_plan_is_refused_and_a_paused_one_is_not(billing: Billing):
    billing.ok("jobs.create", job("First"))
    refused(billing.request("jobs.create", job("Second")), "active_jobs", 1)
    paused = billing.ok("jobs.create", job("Paused", status="paused"))
    refused(billing.request("jobs.resume", {"id": paused["id"]}), "active_jobs", 1)
    quota = items(billing)
    assert quota["active_jobs"]["used"] == 1 and quota["active_jobs"]["remaining"] == 0
    assert billing.ok("jobs.getById", {"id": paused["id"]})["status"] == "paused"


def test_pending_invitations_count_as_members(billing: Billing):
    used = items(billing, role="admin")["members"]["used"]
    for n in range(5 - used):
        billing.ok(
            "team.invite", {"emailAddress": f"person{n}-{uuid.uuid4().hex[:6]}@example.test"}
        )
    # As the admin: a member's first request would make them a member (just in time).
    assert items(billing, role="admin")["members"] == {
        "key": "members", "limit": 5, "used": 5, "remaining": 0, "resets_at": None,
    }  # fmt: skip
    refused(billing.request("team.invite", {"emailAddress": "one-more@example.test"}), "members", 5)
    assert billing.ok("team.listInvitations")["total"] == 5 - used


def registered(org: Org, name: str):
    target = org.ok(
        "documents.createUploadUrl", {"filename": name, "fileType": "md", "contentLength": 10}
    )
    data = {"filename": name, "fileType": "md", "storagePath": target["storage_path"]}
    return org.request("documents.create", data)


def test_a_document_past_the_plan_is_refused(billing: Billing):
    assert registered(billing, "one.md").status_code == 200
    assert registered(billing, "two.md").status_code == 200
    refused(registered(billing, "three.md"), "documents", 2)
    assert billing.ok("documents.list")["total"] == 2
    assert items(billing)["documents"]["used"] == 2


def test_an_api_key_past_the_plan_is_refused_and_a_revoked_one_frees_its_place(billing: Billing):
    first = billing.ok("settings.createApiKey", {"name": "CI"})
    refused(billing.request("settings.createApiKey", {"name": "Second"}), "api_keys", 1)
    billing.ok("settings.revokeApiKey", {"id": first["id"]})
    billing.ok("settings.createApiKey", {"name": "Second"})
    assert items(billing)["api_keys"]["used"] == 1


def test_another_tenant_s_usage_is_its_own(billing: Billing, other_billing: Billing):
    billing.ok("jobs.create", job("Mine"))
    assert items(other_billing)["active_jobs"]["used"] == 0
    other_billing.ok("jobs.create", job("Theirs"))  # its own one place, not taken by the first


def test_every_member_may_read_the_quota(billing: Billing):
    for role in ("member", "editor", "admin"):
        assert items(billing, role=role)["active_jobs"]["limit"] == 1


def test_without_billing_every_limit_but_credits_is_unlimited(unconfigured: Org):
    quota = items(unconfigured)
    assert {key for key, item in quota.items() if item["limit"] is not None} == {"credits"}
    unconfigured.ok("jobs.create", job("One"))
    unconfigured.ok("jobs.create", job("Two"))
    assert items(unconfigured)["active_jobs"]["used"] == 2
