"""admin.startImpersonation and admin.endImpersonation over REST and RPC: the session and its
token, each guardrail (reason, mode, ticket, duration, one session per superadmin, never a
superadmin), who may call them, and a second organization the session never reaches."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from sqlalchemy import select

from contentplatform.admin.models import ImpersonationSession
from contentplatform.events.models import Event
from contentplatform.kit.db import Database
from tests.admin_impersonation.support import REASON, Operator, acting
from tests.conftest import Run
from tests.support.orgs import Org
from tests.support.problems import problem


def test_a_read_only_session_reads_as_a_synthetic_member(tenant: Org, run: Run) -> None:
    operator = Operator(tenant)
    before = datetime.now(UTC)
    started = operator.started()
    assert set(started) == {"id", "token", "mode", "expires_at"}
    assert started["mode"] == "read_only"
    expires = datetime.fromisoformat(started["expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=29) < expires - before <= timedelta(minutes=30, seconds=5)

    claims = jwt.decode(started["token"], options={"verify_signature": False})
    assert claims["act"] == {"sub": operator.subject}
    assert claims["org_id"] == tenant.org
    assert claims["jti"] == started["id"]
    assert claims["exp"] - claims["iat"] == 30 * 60
    assert "superadmin" not in claims

    # A GET works, over RPC too (a POST on the wire, declared GET).
    listed = acting(tenant, started["token"], "features.list")
    assert listed.status_code == 200, listed.text
    who = acting(tenant, started["token"], "system.whoami")
    assert who.status_code == 200, who.text
    assert who.json()["user"]["idp_user_id"].startswith("impersonation_")
    assert who.json()["auth"] == "impersonation"
    assert who.json()["impersonated_by"] == operator.subject
    assert who.json()["superadmin"] is False

    async def stored(db: Database) -> tuple[ImpersonationSession, list[Event]]:
        async with db.unit_of_work() as session:
            row = await session.get(ImpersonationSession, uuid.UUID(started["id"]))
            found = await session.execute(
                select(Event).where(
                    Event.tenant_id == tenant.tenant_id, Event.type == "impersonation.started"
                )
            )
            assert row is not None
            return row, list(found.scalars())

    row, started_events = run(stored)
    assert (row.actor, row.mode, row.synthetic, row.reason) == (
        operator.subject,
        "read_only",
        True,
        REASON,
    )
    (event,) = started_events
    assert event.actor_id == operator.subject
    assert event.payload["reason"] == REASON
    assert event.payload["mode"] == "read_only"


def test_a_read_write_session_acts_as_the_member_and_every_event_names_the_superadmin(
    tenant: Org, run: Run
) -> None:
    operator = Operator(tenant)
    editor = operator.member_id("editor")
    started = operator.started(mode="read_write", userId=editor, ticketId=operator.ticket())
    assert started["mode"] == "read_write"
    who = acting(tenant, started["token"], "system.whoami").json()
    assert who["user"]["id"] == editor
    assert who["role"] == "editor"

    made = acting(tenant, started["token"], "drafts.createDraft", {"title": "Fixed for you"})
    assert made.status_code == 200, made.text

    async def events_of(db: Database) -> list[Event]:
        async with db.unit_of_work() as session:
            found = await session.execute(
                select(Event).where(
                    Event.tenant_id == tenant.tenant_id,
                    Event.resource_id == uuid.UUID(made.json()["id"]),
                )
            )
            return list(found.scalars())

    written = run(events_of)
    assert written, "creating a draft writes its event"
    for event in written:
        assert event.actor_id == tenant.users["editor"]
        assert event.impersonated_by == operator.subject


def test_the_tenants_admins_are_notified(tenant: Org) -> None:
    for role in ("member", "admin"):
        tenant.whoami(role)
    operator = Operator(tenant)
    started = operator.started()
    deadline = datetime.now(UTC) + timedelta(seconds=20)
    while True:
        page = tenant.ok("notifications.list", {}, role="admin")
        kinds = [item["type"] for item in page["data"]]
        if "impersonation.started" in kinds:
            break
        assert datetime.now(UTC) < deadline, kinds
    # A plain member is not told.
    member_kinds = [n["type"] for n in tenant.ok("notifications.list", {}, role="member")["data"]]
    assert "impersonation.started" not in member_kinds
    assert operator.end(started["id"]).status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reason": "too short"}, "reason"),
        ({"reason": "<b><i>" + "</i></b>" * 3 + "short"}, "reason"),
        ({"reason": "x" * 501}, "reason"),
        ({"durationMinutes": 4}, "durationMinutes"),
        ({"durationMinutes": 61}, "durationMinutes"),
        ({"mode": "read_write"}, "ticketId"),
        ({"mode": "god"}, "mode"),
        ({"reason": "A reason with a NUL \u0000 in it, long enough"}, "reason"),
    ],
)
def test_each_guardrail_of_the_input_is_a_400(tenant: Org, body: dict, field: str) -> None:
    found = problem(Operator(tenant).start(**body), 400, "BAD_REQUEST")
    assert any(field in error["path"] for error in found["errors"]), found


def test_read_write_needs_a_member_and_a_ticket_of_that_tenant(
    tenant: Org, other_tenant: Org
) -> None:
    operator = Operator(tenant)
    ticket = operator.ticket()
    found = problem(operator.start(mode="read_write", ticketId=ticket), 400, "BAD_REQUEST")
    assert found["errors"][0]["path"] == "userId"
    editor = operator.member_id("editor")
    theirs = Operator(other_tenant).ticket()
    problem(operator.start(mode="read_write", userId=editor, ticketId=theirs), 404, "NOT_FOUND")
    problem(
        operator.start(mode="read_write", userId=editor, ticketId=str(uuid.uuid4())),
        404,
        "NOT_FOUND",
    )


def test_unknown_tenants_and_other_tenants_members_are_404(tenant: Org, other_tenant: Org) -> None:
    operator = Operator(tenant)
    problem(operator.start(tenantId=str(uuid.uuid4())), 404, "NOT_FOUND")
    stranger = Operator(other_tenant).member_id("editor")
    problem(operator.start(userId=stranger), 404, "NOT_FOUND")


def test_one_open_session_per_superadmin(tenant: Org, other_tenant: Org) -> None:
    operator = Operator(tenant)
    first = operator.started()
    problem(operator.start(), 409, "CONFLICT")
    # Not in another tenant either.
    elsewhere = Operator(other_tenant)
    elsewhere.subject, elsewhere.token = operator.subject, operator.token
    problem(elsewhere.start(), 409, "CONFLICT")
    assert operator.end(first["id"]).status_code == 200
    second = operator.started()
    assert second["id"] != first["id"]
    assert operator.end(second["id"]).status_code == 200


def test_a_superadmin_is_never_impersonated(tenant: Org, token) -> None:
    operator = Operator(tenant)
    # Another superadmin, a member of the organization, seen on an admin.* call.
    other = f"root-{uuid.uuid4().hex[:10]}"
    theirs = token(tenant.org, other, "admin", superadmin=True)
    seen = tenant.call("admin.endImpersonation", {"id": str(uuid.uuid4())}, token=theirs)
    problem(seen, 404, "NOT_FOUND")
    who = tenant.client.get(
        "/v1/system/whoami",
        headers={"Authorization": f"Bearer {theirs}", "x-idp-org-id": tenant.org},
    )
    assert who.status_code == 200, who.text
    problem(operator.start(userId=who.json()["user"]["id"]), 403, "FORBIDDEN")
    # Nor oneself.
    mine = token(tenant.org, operator.subject, "admin", superadmin=True)
    me = tenant.client.get(
        "/v1/system/whoami", headers={"Authorization": f"Bearer {mine}", "x-idp-org-id": tenant.org}
    )
    problem(operator.start(userId=me.json()["user"]["id"]), 403, "FORBIDDEN")


@pytest.mark.parametrize("role", ["member", "editor", "admin"])
def test_only_a_superadmin_starts_or_ends_a_session(tenant: Org, role: str) -> None:
    data = {"tenantId": str(tenant.tenant_id), "reason": REASON}
    own = tenant.tokens[role]
    problem(tenant.call("admin.startImpersonation", data, token=own), 403, "FORBIDDEN")
    problem(
        tenant.call("admin.startImpersonation", data, token=own, org=tenant.org),
        403,
        "FORBIDDEN",
    )
    operator = Operator(tenant)
    started = operator.started()
    problem(operator.end(started["id"], token=own), 403, "FORBIDDEN")
    # The session's own token is no superadmin's.
    problem(operator.end(started["id"], token=started["token"]), 403, "FORBIDDEN")
    problem(tenant.call("admin.startImpersonation", data, token=started["token"]), 403, "FORBIDDEN")
    problem(tenant.call("admin.startImpersonation", data), 401, "UNAUTHORIZED")
    assert operator.end(started["id"]).status_code == 200


def test_ending_is_at_once_and_idempotent(tenant: Org, run: Run) -> None:
    operator = Operator(tenant)
    started = operator.started()
    assert acting(tenant, started["token"], "features.list").status_code == 200  # cached now
    ended = operator.end(started["id"])
    assert ended.status_code == 200, ended.text
    assert ended.json()["id"] == started["id"]
    problem(acting(tenant, started["token"], "features.list"), 401, "UNAUTHORIZED")
    again = operator.end(started["id"])
    assert again.json() == ended.json()

    async def ends(db: Database) -> list[Event]:
        async with db.unit_of_work() as session:
            found = await session.execute(
                select(Event).where(
                    Event.tenant_id == tenant.tenant_id, Event.type == "impersonation.ended"
                )
            )
            return list(found.scalars())

    (event,) = run(ends)  # once, however often it is ended
    assert event.scope == "audit"
    assert event.payload["superadmin"] == operator.subject
    problem(operator.end(str(uuid.uuid4())), 404, "NOT_FOUND")


def test_an_expired_session_is_refused(tenant: Org, run: Run) -> None:
    """The sixty minutes are the session's row, not a clock in the test: moved into the past,
    the token is refused though its own `exp` is still ahead."""
    operator = Operator(tenant)
    started = operator.started(durationMinutes=60)

    async def expire(db: Database) -> None:
        async with db.unit_of_work() as session:
            row = await session.get(ImpersonationSession, uuid.UUID(started["id"]))
            assert row is not None
            row.expires_at = datetime.now(UTC) - timedelta(seconds=1)

    run(expire)
    found = problem(acting(tenant, started["token"], "features.list"), 401, "UNAUTHORIZED")
    assert "expired" in found["detail"]
    # Expired, the superadmin may open another; ending the old one says when it ended.
    fresh = operator.started()
    ended = operator.end(started["id"]).json()
    assert datetime.fromisoformat(ended["ended_at"].replace("Z", "+00:00")) < datetime.now(UTC)
    assert operator.end(fresh["id"]).status_code == 200


def test_a_session_never_reaches_another_organization(tenant: Org, other_tenant: Org) -> None:
    operator = Operator(tenant)
    started = operator.started()
    other_tenant.whoami("admin")
    refused = other_tenant.call("features.list", {}, token=started["token"], org=other_tenant.org)
    problem(refused, 403, "FORBIDDEN")
    assert operator.end(started["id"]).status_code == 200
