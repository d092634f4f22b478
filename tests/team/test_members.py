"""team.listMembers, updateMemberRole, removeMember and sync, over REST and RPC."""

from __future__ import annotations

import uuid

from tests.support.clerk import membership
from tests.team.conftest import Team


def test_members_are_listed_with_their_roles(team: Team):
    page = team.ok("team.listMembers", role="member")
    assert page["total"] == 3 and page["page"] == 1 and page["limit"] == 50
    roles = {m["idp_user_id"]: m["role"] for m in page["data"]}
    assert roles == {team.users[r]: r for r in ("admin", "editor", "member")}
    first = page["data"][0]
    assert set(first) == {
        "user_id", "idp_user_id", "email", "name", "avatar_url", "role", "status",
        "joined_at", "last_active_at",
    }  # fmt: skip
    assert first["status"] == "active" and first["joined_at"] and first["last_active_at"]
    admins = team.ok("team.listMembers", {"role": "admin"})
    assert [m["idp_user_id"] for m in admins["data"]] == [team.users["admin"]]


def test_list_bounds_are_400(team: Team):
    for bad in (
        {"limit": 0},
        {"limit": 101},
        {"page": 0},
        {"role": "owner"},
        {"search": "x" * 256},
    ):
        assert team.request("team.listMembers", bad).status_code == 400, bad


def test_a_role_change_goes_to_the_provider_first_and_is_enforced_at_once(team: Team):
    editor = team.user_id("editor")
    # Cached as editor (ACCESS_CACHE_SECONDS is an hour here).
    assert team.request("team.listInvitations", role="editor").status_code == 403
    assert team.request("team.listMembers", role="editor").status_code == 200
    writes = len(team.clerk.writes)

    changed = team.ok("team.updateMemberRole", {"userId": editor, "role": "admin"})

    assert changed["role"] == "admin"
    assert team.clerk.writes[writes:] == [
        (
            "PATCH",
            f"/v1/organizations/{team.org}/memberships/{team.users['editor']}",
            {"role": "org:admin"},
        )
    ]
    # The editor's token still says org:editor; the stored, newer role wins at once.
    assert team.request("team.listInvitations", role="editor").status_code == 200
    team.ok("team.updateMemberRole", {"userId": editor, "role": "member"})
    assert team.request("team.listInvitations", role="editor").status_code == 403
    assert team.member(editor)["role"] == "member"


def test_role_changes_need_an_admin(team: Team):
    member = team.user_id("member")
    for role in ("member", "editor"):
        refused = team.request(
            "team.updateMemberRole", {"userId": member, "role": "admin"}, role=role
        )
        assert refused.status_code == 403
    assert team.clerk.writes_to(team.org) == []


def test_the_last_admin_cannot_be_demoted_or_removed(team: Team):
    admin = team.user_id("admin")
    demoted = team.request("team.updateMemberRole", {"userId": admin, "role": "editor"})
    assert demoted.status_code == 409 and demoted.json()["code"] == "CONFLICT"
    removed = team.request("team.removeMember", {"userId": admin})
    assert removed.status_code == 409
    assert team.clerk.writes_to(team.org) == []


def test_an_unknown_or_other_tenants_member_is_404(team: Team, other_team: Team):
    stranger = other_team.user_id("member")
    for user_id in (stranger, str(uuid.uuid4())):
        assert (
            team.request("team.updateMemberRole", {"userId": user_id, "role": "admin"}).status_code
            == 404
        )
        assert team.request("team.removeMember", {"userId": user_id}).status_code == 404
    assert team.clerk.writes_to(team.org) == []
    assert team.clerk.writes_to(other_team.org) == []
    seen = {m["idp_user_id"] for m in team.ok("team.listMembers")["data"]}
    assert not seen & set(other_team.users.values())


def test_bad_input_is_400(team: Team):
    member = team.user_id("member")
    assert (
        team.request("team.updateMemberRole", {"userId": member, "role": "owner"}).status_code
        == 400
    )
    assert (
        team.request("team.updateMemberRole", {"userId": "nope", "role": "admin"}).status_code
        == 400
    )


def test_a_removed_member_is_refused_at_once_and_their_drafts_unassigned(team: Team):
    member = team.user_id("member")
    assert team.request("team.listMembers", role="member").status_code == 200

    assert team.ok("team.removeMember", {"userId": member}) == {"success": True}

    assert team.clerk.writes_to(team.org) == [
        ("DELETE", f"/v1/organizations/{team.org}/memberships/{team.users['member']}", None)
    ]
    refused = team.request("team.listMembers", role="member")
    assert refused.status_code == 403
    assert team.member(member)["status"] == "removed"
    # Removed already: 404, and the provider sees nothing more.
    assert team.request("team.removeMember", {"userId": member}).status_code == 404
    assert len(team.clerk.writes_to(team.org)) == 1


def test_removing_a_member_revokes_the_api_keys_they_made_at_once(team: Team):
    editor = team.user_id("editor")
    team.ok("team.updateMemberRole", {"userId": editor, "role": "admin"})
    theirs = team.ok("settings.createApiKey", {"name": "Their script"}, role="editor")
    mine = team.ok("settings.createApiKey", {"name": "My script"})
    for key in (theirs, mine):
        used = team.call("drafts.list", token=key["secret"])
        assert used.status_code == 200, used.text  # cached by the service now

    team.ok("team.removeMember", {"userId": editor})

    refused = team.call("drafts.list", token=theirs["secret"])
    assert refused.status_code == 401
    assert refused.json()["detail"] == "This API key has been revoked."
    assert team.call("drafts.list", token=mine["secret"]).status_code == 200
    revoked = {k["name"]: k["revoked_at"] for k in team.ok("settings.listApiKeys")["data"]}
    assert revoked["Their script"] is not None and revoked["My script"] is None


def test_a_provider_failure_changes_nothing(team: Team):
    editor = team.user_id("editor")
    team.clerk.fail_with(503)
    failed = team.request("team.updateMemberRole", {"userId": editor, "role": "admin"})
    assert failed.status_code == 503
    assert failed.json()["retryable"] is True
    assert team.member(editor)["role"] == "editor"
    team.clerk.fail_with(422)
    refused = team.request("team.removeMember", {"userId": editor})
    assert refused.status_code == 400
    assert team.member(editor)["status"] == "active"


def test_sync_pulls_members_and_is_limited_to_once_a_minute(team: Team):
    # The provider learned of a new member and of a demotion we never heard about, and lost one.
    team.clerk.add_member(team.org, f"newcomer-{team.org}", "editor", email="new@example.test")
    team.clerk.memberships[team.org][team.users["editor"]] = membership(
        team.org, team.users["editor"], "member"
    )
    del team.clerk.memberships[team.org][team.users["member"]]

    result = team.ok("team.sync")

    assert (result["members_added"], result["members_updated"], result["members_removed"]) == (
        1,
        1,
        1,
    )
    members = {m["idp_user_id"]: m for m in team.ok("team.listMembers")["data"]}
    assert members[f"newcomer-{team.org}"]["email"] == "new@example.test"
    assert members[team.users["editor"]]["role"] == "member"
    assert members[team.users["member"]]["status"] == "removed"
    assert team.request("team.listMembers", role="member").status_code == 403
    again = team.request("team.sync")
    assert again.status_code == 429 and again.headers["retry-after"]


def test_sync_needs_an_admin(team: Team):
    assert team.request("team.sync", role="editor").status_code == 403
