"""POST /api/webhooks/identity: Svix-signed events, applied once, in order, by a workflow."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from tests.support.clerk import invitation, membership, now_ms, signed
from tests.team.conftest import Team

PATH = "/api/webhooks/identity"
# A bound, not a wait: an event is applied in well under a second, but by a DBOS workflow of the
# service process, which a loaded CI machine (load 15) once kept from it for over 10 s.
DEADLINE = 30.0


@pytest.fixture
def send(client: httpx.Client, webhook_secret: str):
    def post(type: str, data: dict[str, Any], **options: Any) -> httpx.Response:
        body, headers = signed(options.pop("secret", webhook_secret), type, data, **options)
        return client.post(PATH, content=body, headers=headers)

    return post


def eventually(check: Any) -> Any:
    deadline = time.monotonic() + DEADLINE
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def members(team: Team) -> dict[str, dict[str, Any]]:
    return {m["idp_user_id"]: m for m in team.ok("team.listMembers", {"limit": 100})["data"]}


def test_a_signed_event_is_applied_once_and_its_replay_is_a_duplicate(send, team: Team):
    data = membership(team.org, f"joiner-{team.org}", "editor", email="joiner@example.test")
    first = send("organizationMembership.created", data, event_id=f"msg_{team.org}")
    assert first.status_code == 200, first.text
    assert first.json() == {"received": True, "duplicate": False}
    joined = eventually(lambda: members(team).get(f"joiner-{team.org}"))
    assert joined and joined["role"] == "editor" and joined["email"] == "joiner@example.test"

    # The same event again (Svix retries with the same id): acknowledged, nothing changes.
    changed = {**data, "role": "org:admin", "updated_at": now_ms() + 1000}
    again = send("organizationMembership.created", changed, event_id=f"msg_{team.org}")
    assert again.json() == {"received": True, "duplicate": True}
    time.sleep(0.5)
    assert members(team)[f"joiner-{team.org}"]["role"] == "editor"


def test_webhook_headers_are_accepted_too(send, team: Team):
    data = membership(team.org, f"hooked-{team.org}", "member")
    assert send("organizationMembership.created", data, prefix="webhook").status_code == 200
    assert eventually(lambda: f"hooked-{team.org}" in members(team))


@pytest.mark.parametrize(
    "how",
    ["forged", "stale", "future", "unsigned"],
)
def test_a_bad_signature_or_stale_timestamp_is_400_and_nothing_is_stored(
    send, client: httpx.Client, team: Team, how: str
):
    data = membership(team.org, f"forger-{team.org}", "admin")
    if how == "forged":
        answer = send("organizationMembership.created", data, secret="whsec_" + "A" * 32)
    elif how == "stale":
        answer = send("organizationMembership.created", data, timestamp=time.time() - 600)
    elif how == "future":
        answer = send("organizationMembership.created", data, timestamp=time.time() + 600)
    else:
        answer = client.post(PATH, json={"type": "organizationMembership.created", "data": data})
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "BAD_REQUEST"
    time.sleep(0.3)
    assert f"forger-{team.org}" not in members(team)


def test_a_tampered_body_is_400(client: httpx.Client, webhook_secret: str, team: Team):
    body, headers = signed(webhook_secret, "user.updated", {"id": "u"})
    answer = client.post(PATH, content=body.replace(b'"u"', b'"v"'), headers=headers)
    assert answer.status_code == 400


def test_a_membership_update_is_enforced_at_once_and_a_stale_one_ignored(send, team: Team):
    editor = team.user_id("editor")
    assert team.request("team.listInvitations", role="editor").status_code == 403  # cached
    promoted = {**membership(team.org, team.users["editor"], "admin")}
    assert send("organizationMembership.updated", promoted).status_code == 200
    assert eventually(
        lambda: team.request("team.listInvitations", role="editor").status_code == 200
    )
    stale = {**promoted, "role": "org:member", "updated_at": promoted["updated_at"] - 60_000}
    assert send("organizationMembership.updated", stale).status_code == 200
    time.sleep(0.5)
    assert team.member(editor)["role"] == "admin"


def test_a_deleted_membership_is_refused_at_once(send, team: Team):
    assert team.request("team.listMembers", role="member").status_code == 200  # cached
    gone = membership(team.org, team.users["member"], "member")
    assert send("organizationMembership.deleted", gone).status_code == 200
    assert eventually(lambda: team.request("team.listMembers", role="member").status_code == 403)


def test_an_accepted_invitation_brings_the_member_in_with_its_role(send, team: Team):
    made = team.ok("team.invite", {"emailAddress": "invitee@example.test", "role": "editor"})
    accepted = invitation(team.org, "invitee@example.test", "editor", status="accepted")
    accepted["id"] = made["idp_invitation_id"]
    assert send("organizationInvitation.accepted", accepted).status_code == 200
    joined = membership(team.org, f"invitee-{team.org}", "editor", email="invitee@example.test")
    assert send("organizationMembership.created", joined).status_code == 200

    assert eventually(lambda: team.ok("team.listInvitations", {"status": "accepted"})["total"] == 1)
    member = eventually(lambda: members(team).get(f"invitee-{team.org}"))
    assert member and member["role"] == "editor"


def test_user_events_update_and_remove(send, team: Team):
    subject = team.users["member"]
    profile = {
        "id": subject,
        "first_name": "Grace",
        "last_name": "Hopper",
        "image_url": "https://img.example.test/g.png",
        "primary_email_address_id": "idn_1",
        "email_addresses": [{"id": "idn_1", "email_address": "grace@example.test"}],
        "updated_at": now_ms(),
    }
    assert send("user.updated", profile).status_code == 200
    assert eventually(lambda: members(team)[subject]["name"] == "Grace Hopper")
    assert members(team)[subject]["email"] == "grace@example.test"
    assert (
        send("user.deleted", {"id": subject, "object": "user", "deleted": True}).status_code == 200
    )
    assert eventually(lambda: members(team)[subject]["status"] == "removed")
    assert team.request("team.listMembers", role="member").status_code == 403


def test_an_unknown_type_is_acknowledged_and_ignored(send, team: Team):
    answer = send("session.created", {"id": "sess_1"})
    assert answer.status_code == 200 and answer.json() == {"received": True, "duplicate": False}


def test_a_verified_body_that_is_not_an_event_is_400(client: httpx.Client, webhook_secret: str):
    body = b"[1, 2, 3]"
    stamp = time.time()
    signature = Webhook(webhook_secret).sign(
        "msg_x", datetime.fromtimestamp(stamp, UTC), body.decode()
    )
    headers = {"svix-id": "msg_x", "svix-timestamp": str(int(stamp)), "svix-signature": signature}
    assert client.post(PATH, content=body, headers=headers).status_code == 400
