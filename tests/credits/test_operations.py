"""The credits.* operations over REST and RPC: each one's answer, its errors (400 bounds, 402
short, 403 role, 404 another organization's hold, 409 replays and adopted holds), who may call
it, and a second organization that sees none of the first's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.credits import pricing
from contentplatform.credits import service as credits
from contentplatform.credits.errors import ReservationSettled
from contentplatform.kit.db import Database
from tests.documents.support import hold_all_but
from tests.support.database import run_on
from tests.support.orgs import Org

CHAT_HOLD = 10  # chat_credit_hold, the default
BLOG_HOLD = 40  # generation_credit_hold, the default


def problem(org: Org, operation: str, data: dict[str, Any], status: int, role: str = "admin"):
    response = org.request(operation, data, role=role)
    assert response.status_code == status, (operation, response.text)
    assert response.headers["content-type"].startswith("application/problem+json")
    return response.json()


def hold(org: Org, key: str | None = None, role: str = "member", **fields: Any) -> dict[str, Any]:
    data = {"kind": "chat.message", "idempotencyKey": key or f"k-{uuid.uuid4().hex}"} | fields
    return org.ok("credits.reserve", data, role=role)


def adopt(settings: Settings, org: Org, kind: str, key: str, amount: int) -> None:
    """What a metered operation does with the key a client pre-reserved under."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await credits.reserve(
                session, org.tenant_id, kind=kind, idempotency_key=key, amount=amount
            )

    run_on(settings, scenario)


# --- balance and estimate -----------------------------------------------------------------------


def test_a_member_sees_the_balance_by_bucket(tenant: Org, settings: Settings) -> None:
    balance = tenant.ok("credits.getBalance", role="member")
    grant = settings.monthly_credit_grant
    assert (balance["available"], balance["reserved"], balance["total"]) == (grant, 0, grant)
    assert balance["period"]["granted"] == grant and balance["period"]["used"] == 0
    [bucket] = balance["buckets"]
    assert (bucket["source"], bucket["granted"], bucket["remaining"]) == (
        "monthly_grant",
        grant,
        grant,
    )
    assert bucket["expires_at"] is not None
    assert balance["low_balance_threshold"] == -(-grant // 10)

    hold(tenant)
    after = tenant.ok("credits.getBalance", role="member")
    assert (after["available"], after["reserved"], after["total"]) == (
        grant - CHAT_HOLD,
        CHAT_HOLD,
        grant,
    )


def test_the_estimate_is_the_price_table(tenant: Org, settings: Settings) -> None:
    ingest = tenant.ok(
        "credits.estimate",
        {"kind": "documents.ingest", "contentLength": 2_500_000},
        role="member",
    )
    assert (ingest["kind"], ingest["amount"], ingest["sufficient"]) == (
        "documents.ingest",
        3,
        True,
    )
    assert ingest["available"] == settings.monthly_credit_grant
    assert "megabyte" in ingest["price_basis"]
    blog = tenant.ok("credits.estimate", {"kind": "generation.blog", "targetWords": 800})
    assert blog["amount"] == BLOG_HOLD
    hold_all_but(settings, tenant.tenant_id, left=CHAT_HOLD - 1)
    chat = tenant.ok("credits.estimate", {"kind": "chat.message", "queryChars": 40})
    assert (chat["amount"], chat["available"], chat["sufficient"]) == (
        CHAT_HOLD,
        CHAT_HOLD - 1,
        False,
    )
    assert problem(tenant, "credits.estimate", {"kind": "nope"}, 400)["code"] == "BAD_REQUEST"
    bad_words = {"kind": "generation.blog", "targetWords": 10}
    assert problem(tenant, "credits.estimate", bad_words, 400)["code"] == "BAD_REQUEST"


# --- reserve ------------------------------------------------------------------------------------


def test_reserve_holds_the_estimate_and_a_replay_returns_it(tenant: Org) -> None:
    first = hold(tenant, "chat:1")
    assert (first["status"], first["amount_held"], first["owner"]) == ("held", CHAT_HOLD, "client")
    assert (first["amount_committed"], first["settled_at"]) == (None, None)
    assert first["created_by"] is not None
    again = hold(tenant, "chat:1")
    assert again["id"] == first["id"]
    other = problem(
        tenant,
        "credits.reserve",
        {"kind": "chat.message", "idempotencyKey": "chat:1", "amount": 3},
        409,
        role="member",
    )
    assert other["code"] == "CONFLICT"
    assert tenant.ok("credits.getBalance")["reserved"] == CHAT_HOLD


def test_reserving_any_kind_but_chat_needs_an_editor_and_may_name_its_resource(
    tenant: Org,
) -> None:
    for kind in pricing.KINDS:
        data = {
            "kind": kind,
            "idempotencyKey": f"{kind}:1",
            "amount": 2,
            "resourceId": str(uuid.uuid4()),
        }
        if kind != "chat.message":
            body = problem(tenant, "credits.reserve", data, 403, role="member")
            assert body["code"] == "FORBIDDEN", kind
        assert tenant.ok("credits.reserve", data, role="editor")["amount_held"] == 2, kind
    assert hold(tenant, role="member")["kind"] == "chat.message"


def test_too_few_credits_is_402_with_what_is_needed(tenant: Org, settings: Settings) -> None:
    hold_all_but(settings, tenant.tenant_id, left=4)
    data = {"kind": "chat.message", "idempotencyKey": "short", "amount": 5}
    body = problem(tenant, "credits.reserve", data, 402, role="member")
    assert body["code"] == "PAYMENT_REQUIRED"
    assert body["detail"] == "This needs 5 credits; 4 are available."
    assert hold(tenant, amount=4)["amount_held"] == 4


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"idempotencyKey": "has space"}, "idempotencyKey"),
        ({"idempotencyKey": "nul\x00"}, "idempotencyKey"),
        ({"idempotencyKey": "k" * 256}, "idempotencyKey"),
        ({"idempotencyKey": ""}, "idempotencyKey"),
        ({"amount": 0}, "amount"),
        ({"ttlSeconds": 59}, "ttlSeconds"),
        ({"ttlSeconds": 86_401}, "ttlSeconds"),
        ({"kind": "documents.delete"}, "kind"),
        ({"extra": 1}, "extra"),
    ],
)
def test_a_bad_reserve_is_400_naming_the_field(tenant: Org, changes: dict, field: str) -> None:
    data = {"kind": "chat.message", "idempotencyKey": "fine"} | changes
    body = problem(tenant, "credits.reserve", data, 400)
    assert field in str(body), body
    assert tenant.ok("credits.listReservations")["total"] == 0


# --- commit -------------------------------------------------------------------------------------


def test_an_admin_commits_a_client_hold_once(tenant: Org, settings: Settings) -> None:
    held = hold(tenant, "chat:c")
    path = {"id": held["id"], "amount": 3}
    for role in ("member", "editor"):
        assert problem(tenant, "credits.commit", path, 403, role=role)["code"] == "FORBIDDEN"
    done = tenant.ok("credits.commit", path | {"description": "Three calls"})
    assert done["reservation"]["status"] == "committed"
    assert done["reservation"]["amount_committed"] == 3
    entry = done["ledger_entry"]
    assert (entry["type"], entry["amount"], entry["kind"]) == ("debit", -3, "chat.message")
    assert entry["reservation_id"] == held["id"] and entry["description"] == "Three calls"
    assert entry["balance_after"] == settings.monthly_credit_grant - 3
    assert entry["actor"]["type"] == "user" and entry["actor"]["id"] is not None
    assert entry["bucket_id"] is not None
    # The same amount again answers the same; another amount is 409.
    again = tenant.ok("credits.commit", path)
    assert again["ledger_entry"]["id"] == entry["id"]
    assert problem(tenant, "credits.commit", {"id": held["id"], "amount": 2}, 409)
    balance = tenant.ok("credits.getBalance")
    assert (balance["available"], balance["reserved"]) == (settings.monthly_credit_grant - 3, 0)
    assert balance["period"]["used"] == 3


def test_commit_refuses_what_it_cannot_settle(tenant: Org) -> None:
    held = hold(tenant)
    too_much = {"id": held["id"], "amount": CHAT_HOLD + 1}
    assert problem(tenant, "credits.commit", too_much, 400)["code"] == "BAD_REQUEST"
    missing = {"id": str(uuid.uuid4()), "amount": 1}
    assert problem(tenant, "credits.commit", missing, 404)["code"] == "NOT_FOUND"
    tenant.ok("credits.release", {"id": held["id"]}, role="member")
    released = {"id": held["id"], "amount": 1}
    assert problem(tenant, "credits.commit", released, 409)["code"] == "CONFLICT"


# --- release ------------------------------------------------------------------------------------


def test_the_creator_or_an_admin_releases_a_hold(tenant: Org) -> None:
    mine = hold(tenant, role="member")
    body = problem(tenant, "credits.release", {"id": mine["id"]}, 403, role="editor")
    assert body["code"] == "FORBIDDEN"
    released = tenant.ok(
        "credits.release", {"id": mine["id"], "reason": "Not needed"}, role="member"
    )
    assert released["status"] == "released" and released["settled_at"] is not None
    # Idempotent.
    assert tenant.ok("credits.release", {"id": mine["id"]}, role="member")["status"] == "released"
    theirs = hold(tenant, role="editor")
    assert tenant.ok("credits.release", {"id": theirs["id"]}, role="admin")["status"] == "released"
    assert tenant.ok("credits.getBalance")["reserved"] == 0


def test_a_committed_hold_cannot_be_released(tenant: Org) -> None:
    held = hold(tenant, role="admin")
    tenant.ok("credits.commit", {"id": held["id"], "amount": 1})
    assert problem(tenant, "credits.release", {"id": held["id"]}, 409)["code"] == "CONFLICT"
    missing = {"id": str(uuid.uuid4())}
    assert problem(tenant, "credits.release", missing, 404)["code"] == "NOT_FOUND"


def test_an_operation_adopts_a_client_hold_which_then_settles_itself(
    tenant: Org, settings: Settings
) -> None:
    held = hold(tenant, "chat:adopted", role="member")
    adopt(settings, tenant, "chat.message", "chat:adopted", CHAT_HOLD)
    [row] = tenant.ok("credits.listReservations")["data"]
    assert (row["id"], row["owner"], row["status"]) == (held["id"], "operation", "held")
    commit = {"id": held["id"], "amount": 1}
    assert problem(tenant, "credits.commit", commit, 409)["code"] == "CONFLICT"
    assert problem(tenant, "credits.release", {"id": held["id"]}, 409)["code"] == "CONFLICT"
    # Adopted, not doubled: one hold.
    assert tenant.ok("credits.getBalance")["reserved"] == CHAT_HOLD


def test_an_operation_asking_another_amount_leaves_the_client_hold_alone(
    tenant: Org, settings: Settings
) -> None:
    held = hold(tenant, "chat:other", role="member", amount=3)
    with pytest.raises(ReservationSettled, match="already holds 3 credits"):
        adopt(settings, tenant, "chat.message", "chat:other", CHAT_HOLD)
    [row] = tenant.ok("credits.listReservations")["data"]
    assert (row["id"], row["owner"]) == (held["id"], "client")
    assert tenant.ok("credits.release", {"id": held["id"]}, role="member")["status"] == "released"


# --- lists --------------------------------------------------------------------------------------


def test_the_ledger_lists_grants_and_debits_newest_first(tenant: Org, settings: Settings) -> None:
    held = hold(tenant, role="admin")
    tenant.ok("credits.commit", {"id": held["id"], "amount": 2})
    page = tenant.ok("credits.listLedger", role="member")
    assert (page["total"], page["page"], page["limit"]) == (2, 1, 50)
    debit, grant = page["data"]
    assert (grant["type"], grant["amount"], grant["actor"]) == (
        "grant",
        settings.monthly_credit_grant,
        {"type": "system", "id": None},
    )
    assert grant["balance_after"] == settings.monthly_credit_grant
    assert (debit["type"], debit["amount"]) == ("debit", -2)
    debits = tenant.ok("credits.listLedger", {"type": "debit", "kind": "chat.message"})
    assert [e["id"] for e in debits["data"]] == [debit["id"]]
    assert tenant.ok("credits.listLedger", {"kind": "generation.blog"})["total"] == 0
    second = tenant.ok("credits.listLedger", {"page": 2, "limit": 1})
    assert [e["id"] for e in second["data"]] == [grant["id"]]
    later = tenant.ok("credits.listLedger", {"startDate": "2099-01-01T00:00:00Z"})
    assert later["total"] == 0
    assert problem(tenant, "credits.listLedger", {"limit": 101}, 400)["code"] == "BAD_REQUEST"
    assert problem(tenant, "credits.listLedger", {"type": "bonus"}, 400)["code"] == "BAD_REQUEST"


def test_reservations_list_by_status_and_kind(tenant: Org) -> None:
    kept = hold(tenant, role="admin")
    dropped = hold(tenant, role="admin")
    tenant.ok("credits.release", {"id": dropped["id"]})
    blog = hold(tenant, role="editor", kind="generation.blog", amount=5)
    listed = tenant.ok("credits.listReservations", role="member")
    assert (listed["total"], listed["limit"]) == (3, 20)
    assert listed["data"][0]["id"] == blog["id"]
    held = tenant.ok("credits.listReservations", {"status": "held"})
    assert {r["id"] for r in held["data"]} == {kept["id"], blog["id"]}
    released = tenant.ok("credits.listReservations", {"status": "released"})
    assert [r["id"] for r in released["data"]] == [dropped["id"]]
    chats = tenant.ok("credits.listReservations", {"kind": "chat.message"})
    assert chats["total"] == 2


# --- another organization -----------------------------------------------------------------------


def test_another_organization_sees_and_touches_nothing(tenant: Org, other_tenant: Org) -> None:
    held = hold(tenant, "shared", role="admin")
    tenant.ok("credits.commit", {"id": held["id"], "amount": 1})
    mine = hold(tenant, "open", role="admin")
    for operation, data in (
        ("credits.commit", {"id": mine["id"], "amount": 1}),
        ("credits.release", {"id": mine["id"]}),
    ):
        assert problem(other_tenant, operation, data, 404)["code"] == "NOT_FOUND"
    assert other_tenant.ok("credits.listReservations")["total"] == 0
    ledger = other_tenant.ok("credits.listLedger")
    assert [e["type"] for e in ledger["data"]] == ["grant"]
    assert other_tenant.ok("credits.getBalance")["reserved"] == 0
    # The same key is a hold of its own there.
    theirs = hold(other_tenant, "shared", role="admin")
    assert theirs["id"] != held["id"] and theirs["status"] == "held"
    assert tenant.ok("credits.listReservations", {"status": "held"})["total"] == 1
