"""admin.grantCredits over REST and RPC: a grant (an admin_grant bucket, expiring when asked),
a clawback (one adjustment row, never below zero: 409), replay by idempotency key (the same
answer, no second grant; another body or tenant: 409), each refusal (400 bounds, 404 tenant),
the tenant's ledger and trail with the superadmin as actor, the other tenant untouched."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.admin.support import NOBODY, Operator
from tests.events.support import Trail
from tests.support.orgs import Org
from tests.support.problems import problem


def grant(operator: Operator, org: Org, amount: int, key: str | None = None, **more: Any):
    data = {
        "id": str(org.tenant_id),
        "amount": amount,
        "reason": "Goodwill for the outage",
        "idempotencyKey": key or str(uuid.uuid4()),
        **more,
    }
    return operator.request("admin.grantCredits", data)


def available(org: Org) -> int:
    return int(org.ok("credits.getBalance", role="member")["available"])


def test_a_grant_adds_an_admin_bucket_once_per_key(
    operator: Operator, tenant: Org, other_tenant: Org
) -> None:
    before, theirs = available(tenant), available(other_tenant)
    expires = (datetime.now(UTC) + timedelta(days=90)).replace(microsecond=0)
    key = f"goodwill-{uuid.uuid4()}"
    first = grant(operator, tenant, 2500, key, expiresAt=expires.isoformat())
    assert first.status_code == 200, first.text
    body = first.json()
    entry = body["ledger_entry"]
    assert entry["type"] == "grant" and entry["amount"] == 2500
    assert entry["actor"] == {"type": "admin", "id": operator.subject}
    assert entry["description"] == "Operator: Goodwill for the outage"
    assert body["balance"]["available"] == before + 2500
    [bucket] = [b for b in body["balance"]["buckets"] if b["id"] == entry["bucket_id"]]
    assert bucket["source"] == "admin_grant"
    assert datetime.fromisoformat(bucket["expires_at"]) == expires

    again = grant(operator, tenant, 2500, key, expiresAt=expires.isoformat())
    assert again.status_code == 200, again.text
    assert again.json()["ledger_entry"] == entry
    assert available(tenant) == before + 2500  # granted once
    assert available(other_tenant) == theirs

    ledger = tenant.ok("credits.listLedger", {"limit": 100}, role="admin")["data"]
    assert [row["id"] for row in ledger if row["type"] == "grant" and row["amount"] == 2500] == [
        entry["id"]
    ]
    row = Trail.of(tenant).one("credits.adjusted", scope="audit")
    assert row["actor"]["id"] == operator.subject and row["resource_id"] == entry["id"]


def test_a_key_reused_with_another_body_or_tenant_is_409(
    operator: Operator, tenant: Org, other_tenant: Org
) -> None:
    key = f"key-{uuid.uuid4()}"
    assert grant(operator, tenant, 10, key).status_code == 200
    problem(grant(operator, tenant, 11, key), 409, "CONFLICT")
    problem(grant(operator, other_tenant, 10, key), 409, "CONFLICT")
    body = {"id": str(tenant.tenant_id), "amount": 10, "idempotencyKey": key}
    problem(operator.request("admin.grantCredits", {**body, "reason": "Another"}), 409, "CONFLICT")


def test_a_clawback_takes_credits_but_never_below_zero(operator: Operator, tenant: Org) -> None:
    start = available(tenant)
    taken = grant(operator, tenant, -start)
    assert taken.status_code == 200, taken.text
    entry = taken.json()["ledger_entry"]
    assert entry["type"] == "adjustment" and entry["amount"] == -start
    assert entry["balance_after"] == 0 and entry["bucket_id"] is None
    assert taken.json()["balance"]["available"] == 0
    key = str(uuid.uuid4())
    body = problem(grant(operator, tenant, -1, key), 409, "CONFLICT")
    assert "below zero" in body["detail"]
    assert available(tenant) == 0
    # A refused clawback records nothing: its key can be used again.
    assert grant(operator, tenant, 5, key).status_code == 200
    assert available(tenant) == 5


def test_a_grant_is_refused_out_of_bounds_or_for_nobody(operator: Operator, tenant: Org) -> None:
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    for amount, more in (
        (0, {}),
        (1_000_001, {}),
        (-1_000_001, {}),
        (5, {"expiresAt": past}),
        (-5, {"expiresAt": future}),
        (5, {"reason": "shrt"}),
        (5, {"reason": "x" * 501}),
        (5, {"idempotencyKey": ""}),
        (5, {"idempotencyKey": "k" * 256}),
        (5, {"idempotencyKey": "a\x00b"}),
    ):
        problem(grant(operator, tenant, amount, **more), 400, "BAD_REQUEST")
    missing = {"id": str(tenant.tenant_id), "amount": 5, "reason": "No key given"}
    problem(operator.request("admin.grantCredits", missing), 400, "BAD_REQUEST")
    nobody = {"id": NOBODY, "amount": 5, "reason": "Nobody", "idempotencyKey": str(uuid.uuid4())}
    problem(operator.request("admin.grantCredits", nobody), 404, "NOT_FOUND")
