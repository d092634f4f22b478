"""activity.list over REST and RPC: the tenant's trail newest first, each filter (resource,
actor, action, time), paging, the audit scope (admins only, with addresses and diffs), its bounds,
and a second organization that sees none of the first's rows.

The rows are real: each role's first request adds them as members (`member.added`, acted by
themselves), an admin's settings change is an audit row."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.events.support import Trail, by_user
from tests.support.orgs import org_fixture
from tests.support.problems import problem

trail = org_fixture(Trail)
other = org_fixture(Trail, second=True)


def joined(trail: Trail) -> dict[str, str]:
    """Each role's user joins (member, then editor, then admin): role -> our user id."""
    return {role: str(trail.whoami(role)["user"]["id"]) for role in ("member", "editor", "admin")}


def test_the_trail_says_who_did_what_to_which_resource_newest_first(trail: Trail) -> None:
    users = joined(trail)

    page = trail.activity()

    assert page["total"] == 3 and page["page"] == 1 and page["limit"] == 50
    assert [row["action"] for row in page["data"]] == ["member.added"] * 3
    assert [row["resource_id"] for row in page["data"]] == [
        users["admin"],
        users["editor"],
        users["member"],
    ]
    for row, role in zip(page["data"], ("admin", "editor", "member"), strict=True):
        assert row["resource_type"] == "member"
        assert row["actor"] == by_user(trail, role)  # a first login: they added themselves
        assert row["changes"] is None and row["impersonated_by"] is None
        # Addresses are for the audit view only.
        assert row["ip"] is None and row["user_agent"] is None
    stamps = [datetime.fromisoformat(row["created_at"]) for row in page["data"]]
    assert stamps == sorted(stamps, reverse=True)
    # A member reads the same trail.
    assert trail.activity("member")["data"] == page["data"]


def test_each_filter_narrows_the_trail(trail: Trail) -> None:
    users = joined(trail)
    rows = trail.activity()["data"]
    editor_at = rows[1]["created_at"]

    def ids(**query: Any) -> list[str]:
        return [row["resource_id"] for row in trail.activity(**query)["data"]]

    assert ids(resourceType="member") == [users["admin"], users["editor"], users["member"]]
    assert ids(resourceType="document") == []
    assert ids(resourceId=users["editor"]) == [users["editor"]]
    assert ids(resourceType="member", resourceId=users["member"]) == [users["member"]]
    assert ids(actorId=trail.subject("editor")) == [users["editor"]]
    assert ids(actorId="someone-else") == []
    assert ids(action="member.added") == [users["admin"], users["editor"], users["member"]]
    assert ids(action="draft.created") == []
    # From the start (inclusive) to the end (exclusive).
    assert ids(startDate=editor_at) == [users["admin"], users["editor"]]
    assert ids(endDate=editor_at) == [users["member"]]
    later = (datetime.fromisoformat(editor_at) + timedelta(microseconds=1)).isoformat()
    assert ids(startDate=editor_at, endDate=later) == [users["editor"]]
    assert ids(startDate=later, endDate=editor_at) == []


def test_pages_of_the_trail(trail: Trail) -> None:
    users = joined(trail)
    seen = []
    for number in (1, 2, 3):
        page = trail.activity(limit=1, page=number)
        assert page["total"] == 3 and page["page"] == number and page["limit"] == 1
        seen += [row["resource_id"] for row in page["data"]]
    assert seen == [users["admin"], users["editor"], users["member"]]
    beyond = trail.activity(limit=1, page=4)
    assert beyond["data"] == [] and beyond["total"] == 3


def test_the_audit_scope_adds_security_events_with_their_diff_and_addresses(trail: Trail) -> None:
    joined(trail)
    trail.ok("settings.update", {"blog": {"title": "Garden notes"}})

    assert "settings.updated" not in trail.actions()  # not an activity row
    audit = trail.audit()
    assert audit["total"] == 4
    row = audit["data"][0]
    assert row["action"] == "settings.updated"
    assert row["actor"] == by_user(trail, "admin")
    assert row["resource_type"] == "settings"
    assert row["resource_id"] == str(trail.tenant_id)
    assert row["changes"] == {"blog.title": {"from": "", "to": "Garden notes"}}
    assert row["ip"] == "127.0.0.1"
    assert row["user_agent"].startswith("python-httpx/")
    assert row["request_id"]


@pytest.mark.parametrize("role", ["member", "editor"])
def test_only_an_admin_reads_the_audit_scope(trail: Trail, role: str) -> None:
    body = problem(trail.request("activity.list", {"scope": "audit"}, role=role), 403, "FORBIDDEN")
    assert "admin" in body["detail"]
    assert trail.activity(role)["total"] >= 1  # their own activity view stays open


def test_a_second_organization_sees_none_of_the_first_organizations_rows(
    trail: Trail, other: Trail
) -> None:
    users = joined(trail)
    trail.ok("settings.update", {"blog": {"title": "Garden notes"}})

    theirs = other.audit(limit=100)
    # Only its own admin, added by their own first request.
    assert [row["action"] for row in theirs["data"]] == ["member.added"]
    assert theirs["data"][0]["actor"] == by_user(other, "admin")
    assert not {row["resource_id"] for row in theirs["data"]} & set(users.values())
    for user_id in users.values():
        assert other.audit(resourceId=user_id)["total"] == 0
    assert other.audit(actorId=trail.subject("admin"))["total"] == 0
    assert other.audit(action="settings.updated")["total"] == 0


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"page": 0}, "page"),
        ({"scope": "everything"}, "scope"),
        ({"resourceId": "not-a-uuid"}, "resourceId"),
        ({"startDate": "yesterday"}, "startDate"),
        ({"action": "x" * 61}, "action"),
    ],
)
def test_bad_queries_are_400_naming_the_field(
    trail: Trail, query: dict[str, Any], field: str
) -> None:
    body = problem(trail.request("activity.list", query), 400, "BAD_REQUEST")
    assert any(field in error["path"] for error in body["errors"]), body
