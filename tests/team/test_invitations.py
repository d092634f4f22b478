"""team.invite, listInvitations and revokeInvitation, over REST and RPC."""

from __future__ import annotations

import uuid

from tests.team.conftest import Team


def test_an_invitation_is_made_through_the_provider(team: Team):
    made = team.ok(
        "team.invite",
        {
            "emailAddress": "Writer@Example.test",
            "role": "editor",
            "redirectUrl": "https://app.example.test/join",
        },
    )

    assert made["email"] == "writer@example.test"
    assert (made["role"], made["status"]) == ("editor", "pending")
    assert made["idp_invitation_id"].startswith("orginv_")
    assert made["invited_by"] == team.user_id("admin") and made["expires_at"]
    assert team.clerk.writes_to(team.org) == [
        (
            "POST",
            f"/v1/organizations/{team.org}/invitations",
            {
                "email_address": "writer@example.test",
                "role": "org:editor",
                "inviter_user_id": team.users["admin"],
                "redirect_url": "https://app.example.test/join",
            },
        )
    ]
    listed = team.ok("team.listInvitations")
    assert [i["id"] for i in listed["data"]] == [made["id"]] and listed["limit"] == 20
    assert team.ok("team.listInvitations", {"status": "revoked"})["total"] == 0


def test_a_second_invitation_or_a_members_email_is_409(team: Team):
    team.ok("team.invite", {"emailAddress": "twice@example.test"})
    writes = len(team.clerk.writes)
    again = team.request("team.invite", {"emailAddress": "TWICE@example.test"})
    assert again.status_code == 409
    member_email = team.member(team.user_id("member"))["email"]
    assert member_email
    assert team.request("team.invite", {"emailAddress": member_email}).status_code == 409
    assert len(team.clerk.writes) == writes


def test_invitation_input_is_checked(team: Team):
    for bad in (
        {"emailAddress": "not-an-email"},
        {"emailAddress": "a@example.test", "role": "owner"},
        {"emailAddress": "a@example.test", "redirectUrl": "http://app.example.test/"},
        {},
    ):
        assert team.request("team.invite", bad).status_code == 400, bad
    assert team.request("team.listInvitations", {"limit": 101}).status_code == 400
    assert team.request("team.listInvitations", {"status": "gone"}).status_code == 400
    assert team.clerk.writes_to(team.org) == []


def test_invitations_need_an_admin(team: Team):
    for role in ("member", "editor"):
        assert (
            team.request("team.invite", {"emailAddress": "x@example.test"}, role=role).status_code
            == 403
        )
        assert team.request("team.listInvitations", role=role).status_code == 403
    assert team.clerk.writes_to(team.org) == []


def test_a_pending_invitation_is_revoked_once(team: Team):
    made = team.ok("team.invite", {"emailAddress": "revoke@example.test"})
    revoked = team.ok("team.revokeInvitation", {"id": made["id"]})
    assert revoked["status"] == "revoked"
    assert team.clerk.writes_to(team.org)[-1] == (
        "POST",
        f"/v1/organizations/{team.org}/invitations/{made['idp_invitation_id']}/revoke",
        {"requesting_user_id": team.users["admin"]},
    )
    again = team.request("team.revokeInvitation", {"id": made["id"]})
    assert again.status_code == 409
    assert len(team.clerk.writes_to(team.org)) == 2
    assert team.ok("team.listInvitations", {"status": "revoked"})["total"] == 1


def test_another_tenants_invitation_is_404(team: Team, other_team: Team):
    theirs = other_team.ok("team.invite", {"emailAddress": "theirs@example.test"})
    for invitation_id in (theirs["id"], str(uuid.uuid4())):
        assert team.request("team.revokeInvitation", {"id": invitation_id}).status_code == 404
    assert team.ok("team.listInvitations")["total"] == 0
    assert team.clerk.writes_to(team.org) == []
