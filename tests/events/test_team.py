"""The team's events over REST and RPC: a member added (a first login, an identity provider's
event), removed, their role changed (audit, with the diff), an invitation made and revoked
(audit); each with its resource and who acted. The suite's service has no identity provider
configured, so its team writes stand alone (team/idp.py); the provider's events are applied
as its webhook's workflow applies them (team.service)."""

from __future__ import annotations

import uuid
from typing import Any

from contentplatform.kit.db import Database
from contentplatform.team import service as team
from tests.conftest import Run
from tests.events.support import SYSTEM, Trail, by_user
from tests.support.clerk import invitation, membership
from tests.support.orgs import org_fixture

trail = org_fixture(Trail)
other = org_fixture(Trail, second=True)


class Bus:
    """The invalidations a provider's event publishes, kept here (nothing caches in this loop)."""

    def __init__(self) -> None:
        self.published: list[str] = []

    async def publish(self, scope: str) -> None:
        self.published.append(scope)


def apply_identity_event(run: Run, type: str, data: dict[str, Any]) -> str:
    """Store and apply one of the provider's events, as its webhook and workflow do: its
    status."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            stored = await team.receive_event(
                session, f"msg_{uuid.uuid4().hex}", type, {"type": type, "data": data}
            )
        assert stored is not None
        async with db.unit_of_work() as session:
            return await team.process_event(session, Bus(), stored)  # type: ignore[arg-type]

    status: str = run(scenario)
    return status


def test_a_first_login_adds_the_member_who_logged_in(trail: Trail) -> None:
    user_id = trail.whoami("editor")["user"]["id"]

    row = trail.one("member.added", user_id)
    assert row["resource_type"] == "member"
    assert row["actor"] == by_user(trail, "editor")
    # Only the first: a later request adds no one.
    trail.whoami("editor")
    assert trail.activity(action="member.added", resourceId=user_id)["total"] == 1


def test_the_identity_providers_events_add_and_remove_members(trail: Trail, run: Run) -> None:
    trail.whoami("admin")
    joiner = f"joiner-{trail.org}"

    added = membership(trail.org, joiner, "editor", email="joiner@example.test")
    assert apply_identity_event(run, "organizationMembership.created", added) == "processed"

    member = next(
        m
        for m in trail.ok("team.listMembers", {"limit": 100})["data"]
        if m["idp_user_id"] == joiner
    )
    row = trail.one("member.added", member["user_id"])
    assert row["actor"] == SYSTEM  # background work: the provider's word

    assert apply_identity_event(run, "organizationMembership.deleted", added) == "processed"
    gone = trail.one("member.removed", member["user_id"])
    assert gone["actor"] == SYSTEM and gone["resource_type"] == "member"


def test_an_admin_changes_a_role_audited_with_the_diff(trail: Trail, other: Trail) -> None:
    user_id = trail.whoami("member")["user"]["id"]

    trail.ok("team.updateMemberRole", {"userId": user_id, "role": "editor"})

    assert "member.role_changed" not in trail.actions()  # audit only
    row = trail.one("member.role_changed", user_id, scope="audit")
    assert row["actor"] == by_user(trail, "admin")
    assert row["resource_type"] == "member"
    assert row["changes"] == {"role": {"from": "member", "to": "editor"}}
    assert other.audit(resourceId=user_id)["total"] == 0


def test_an_admin_removes_a_member(trail: Trail) -> None:
    user_id = trail.whoami("editor")["user"]["id"]

    assert trail.ok("team.removeMember", {"userId": user_id}) == {"success": True}

    row = trail.one("member.removed", user_id)
    assert row["actor"] == by_user(trail, "admin")
    # Added once (their first login), removed once.
    assert trail.actions(resourceId=user_id) == ["member.removed", "member.added"]


def test_invitations_made_and_revoked_are_audited(trail: Trail, run: Run) -> None:
    made = trail.ok("team.invite", {"emailAddress": "grace@example.test", "role": "editor"})

    created = trail.one("invitation.created", made["id"], scope="audit")
    assert created["actor"] == by_user(trail, "admin")
    assert created["resource_type"] == "invitation"
    assert "invitation.created" not in trail.actions()

    trail.ok("team.revokeInvitation", {"id": made["id"]})
    revoked = trail.one("invitation.revoked", made["id"], scope="audit")
    assert revoked["actor"] == by_user(trail, "admin")

    # One made at the provider (its dashboard) is told when its event comes.
    elsewhere = invitation(trail.org, "ada@example.test", "member")
    assert apply_identity_event(run, "organizationInvitation.created", elsewhere) == "processed"
    listed = trail.ok("team.listInvitations", {"limit": 100})["data"]
    theirs = next(i for i in listed if i["idp_invitation_id"] == elsewhere["id"])
    assert trail.one("invitation.created", theirs["id"], scope="audit")["actor"] == SYSTEM
