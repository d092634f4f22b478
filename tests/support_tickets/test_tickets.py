"""support.* and staff's admin.*SupportTicket* operations over REST and RPC: tickets numbered per
organization, a member's own and an admin's all, staff answers told in the app and by mail,
internal notes that no customer read shows, reopening, 409 once closed, the roles (member and
tenant admin refused on the admin paths, a superadmin's token refused on the tenant paths), and
a second organization that sees none of it."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest

from tests.media.support import Media, jpeg
from tests.support.mailbox import Mailbox
from tests.support.orgs import Org
from tests.support.problems import problem

TICKET = {"subject": "Publishing fails", "body": "It <b>fails</b> with a 502.", "category": "bug"}
SETTLE_SECONDS = 15.0


def root(org: Org) -> str:
    return org.token(None, "root", superadmin=True, name="Sam Staff")


def staff(org: Org, operation: str, data: dict[str, Any] | None = None) -> httpx.Response:
    response: httpx.Response = org.call(operation, data, token=root(org))
    return response


def staff_ok(org: Org, operation: str, data: dict[str, Any] | None = None) -> Any:
    response = staff(org, operation, data)
    assert response.status_code == 200, (operation, response.text)
    return response.json()


def open_ticket(org: Org, role: str = "member", **extra: Any) -> dict[str, Any]:
    return org.ok("support.createTicket", {**TICKET, **extra}, role=role)  # type: ignore[no-any-return]


def test_a_member_opens_tickets_numbered_per_organization(tenant: Org, other_tenant: Org) -> None:
    first = open_ticket(tenant, requestIds=["req-1", "req-1", "req-2"])
    assert first["number"] == 1
    assert first["status"] == "open"
    assert first["priority"] == "normal"
    assert first["created_by"] == tenant.users["member"]
    assert first["closed_at"] is None
    (message,) = first["messages"]
    assert message["author_type"] == "customer"
    assert message["body"] == TICKET["body"]  # kept as written: text, never HTML
    assert open_ticket(tenant, role="editor")["number"] == 2
    assert open_ticket(other_tenant)["number"] == 1

    got = tenant.ok("support.getTicket", {"id": first["id"]}, role="member")
    assert got == first
    seen = staff_ok(tenant, "admin.getSupportTicket", {"id": first["id"]})
    assert seen["request_ids"] == ["req-1", "req-2"]
    # The organization as admin.listTenants summarizes it: its plan, members and credits too.
    assert seen["tenant"]["id"] == str(tenant.tenant_id)
    assert seen["tenant"]["members"] >= 1 and seen["tenant"]["subscription_status"] == "none"
    assert "credits_available" in seen["tenant"] and "plan_id" in seen["tenant"]
    assert seen["source"] == "app"
    assert seen["requester"]["email"] == f"{tenant.users['member']}@example.test"


def test_a_member_sees_their_own_tickets_and_an_admin_every_one(tenant: Org) -> None:
    mine = open_ticket(tenant, role="member")
    theirs = open_ticket(tenant, role="editor")

    listed = tenant.ok("support.listTickets", {}, role="member")
    assert [row["id"] for row in listed["data"]] == [mine["id"]]
    assert listed["total"] == 1
    assert {row["id"] for row in tenant.ok("support.listTickets", {}, role="admin")["data"]} == {
        mine["id"],
        theirs["id"],
    }
    for operation, data in (
        ("support.getTicket", {"id": theirs["id"]}),
        ("support.replyTicket", {"id": theirs["id"], "body": "me too"}),
        ("support.closeTicket", {"id": theirs["id"]}),
    ):
        problem(tenant.request(operation, data, role="member"), 404, "NOT_FOUND")
    # The admin reads and closes anyone's.
    assert tenant.ok("support.getTicket", {"id": theirs["id"]}, role="admin")["id"] == theirs["id"]
    closed = tenant.ok("support.closeTicket", {"id": theirs["id"]}, role="admin")
    assert closed["status"] == "closed"


def test_another_organization_sees_none_of_it(tenant: Org, other_tenant: Org) -> None:
    ticket = open_ticket(tenant)
    for operation, data in (
        ("support.getTicket", {"id": ticket["id"]}),
        ("support.replyTicket", {"id": ticket["id"], "body": "hello"}),
        ("support.closeTicket", {"id": ticket["id"]}),
    ):
        problem(other_tenant.request(operation, data, role="admin"), 404, "NOT_FOUND")
    assert other_tenant.ok("support.listTickets", {}, role="admin")["total"] == 0
    assert tenant.ok("support.getTicket", {"id": ticket["id"]})["status"] == "open"


def test_staff_answers_notes_and_the_customer_sees_only_the_answer(
    tenant: Org, mailbox: Mailbox
) -> None:
    ticket = open_ticket(tenant)
    note = staff_ok(
        tenant,
        "admin.replySupportTicket",
        {"id": ticket["id"], "body": "SECRET: their key leaked", "internal": True},
    )
    assert note["internal"] is True
    answer = staff_ok(
        tenant,
        "admin.replySupportTicket",
        {"id": ticket["id"], "body": "Fixed on our side.", "status": "pending", "priority": "high"},
    )
    assert answer["ticket_status"] == "pending"
    assert answer["author_type"] == "staff"
    assert answer["author_name"] == "Sam Staff"

    for role in ("member", "admin"):
        thread = tenant.ok("support.getTicket", {"id": ticket["id"]}, role=role)
        assert [m["body"] for m in thread["messages"]] == [TICKET["body"], "Fixed on our side."]
        assert "SECRET" not in str(thread)
        assert "internal" not in thread["messages"][1]
        assert thread["priority"] == "high"
        listed = tenant.ok("support.listTickets", {}, role=role)
        assert "SECRET" not in str(listed)

    seen = staff_ok(tenant, "admin.getSupportTicket", {"id": ticket["id"]})
    assert [m["internal"] for m in seen["messages"]] == [False, True, False]
    assert seen["first_response_at"] is not None

    # The creator hears of the answer by mail (never of the note) and in the app.
    mail = mailbox.wait_for(
        to=f"{tenant.users['member']}@example.test", subject_contains=f"{ticket['number']}]"
    )
    assert "Fixed on our side." in mail.get_content()
    assert "SECRET" not in mail.get_content()
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        told = tenant.ok("notifications.list", {}, role="member")["data"]
        if any(item["type"] == "support_ticket.replied" for item in told):
            break
        assert time.monotonic() < deadline, told
        time.sleep(0.1)
    assert not any(
        item["type"] == "support_ticket.replied"
        for item in tenant.ok("notifications.list", {}, role="editor")["data"]
    )


def test_a_reply_reopens_a_resolved_ticket_and_a_closed_one_is_409(tenant: Org) -> None:
    ticket = open_ticket(tenant)
    resolved = staff_ok(
        tenant,
        "admin.replySupportTicket",
        {"id": ticket["id"], "body": "Done.", "status": "resolved"},
    )
    assert resolved["ticket_status"] == "resolved"
    assert staff_ok(tenant, "admin.getSupportTicket", {"id": ticket["id"]})["resolved_at"]

    reply = tenant.ok("support.replyTicket", {"id": ticket["id"], "body": "Still broken"})
    assert reply["author_type"] == "customer"
    assert tenant.ok("support.getTicket", {"id": ticket["id"]})["status"] == "open"

    closed = tenant.ok("support.closeTicket", {"id": ticket["id"], "reason": "Works now"})
    assert closed["status"] == "closed"
    again = tenant.ok("support.closeTicket", {"id": ticket["id"]})
    assert again["closed_at"] == closed["closed_at"]  # idempotent
    problem(
        tenant.request("support.replyTicket", {"id": ticket["id"], "body": "One more"}),
        409,
        "CONFLICT",
    )
    problem(
        staff(tenant, "admin.replySupportTicket", {"id": ticket["id"], "body": "Hello?"}),
        409,
        "CONFLICT",
    )
    # Staff may still note what happened on a closed ticket.
    staff_ok(
        tenant, "admin.replySupportTicket", {"id": ticket["id"], "body": "ok", "internal": True}
    )


def test_a_ticket_cites_a_resource_of_its_own_organization(tenant: Org, other_tenant: Org) -> None:
    draft = tenant.ok("drafts.createDraft", {"title": "Spring"}, role="editor")["id"]
    opened = open_ticket(tenant, resource={"type": "draft", "id": draft})
    assert opened["resource"] == {"type": "draft", "id": draft}
    problem(
        other_tenant.request(
            "support.createTicket", {**TICKET, "resource": {"type": "draft", "id": draft}}
        ),
        404,
        "NOT_FOUND",
    )
    for kind in ("generation_run", "job_instance", "publish_attempt", "document"):
        data = {**TICKET, "resource": {"type": kind, "id": str(uuid.uuid4())}}
        problem(tenant.request("support.createTicket", data), 404, "NOT_FOUND")
    body = problem(
        tenant.request(
            "support.createTicket", {**TICKET, "resource": {"type": "tenant", "id": draft}}
        ),
        400,
        "BAD_REQUEST",
    )
    assert any("resource" in error["path"] for error in body["errors"])
    assert other_tenant.ok("support.listTickets", {}, role="admin")["total"] == 0


def test_a_ticket_opened_from_a_run_or_a_publish_attempt_carries_it(
    tenant: Org, other_tenant: Org
) -> None:
    paused = {"name": "Weekly notes", "topics": ["Notes"], "status": "paused"}
    job = tenant.ok("jobs.create", paused, role="editor")["id"]
    planned = {"jobId": job, "scheduledDate": "2099-03-01T09:00:00Z"}
    instance = tenant.ok("jobInstances.create", planned, role="editor")["id"]
    draft = tenant.ok("drafts.createDraft", {"title": "Spring"}, role="editor")["id"]
    tenant.ok("drafts.approve", {"id": draft}, role="editor")
    hook = {"name": "Hook", "type": "webhook", "config": {"url": "http://127.0.0.1:9/hook"}}
    connection = tenant.ok("publishers.create", hook, role="admin")["id"]
    publish = {
        "id": draft,
        "publisherConnectionId": connection,
        "mode": "schedule",
        "scheduledAt": "2099-03-01T09:00:00Z",
    }
    attempt = tenant.ok("drafts.publish", publish, role="editor")["attempt"]["id"]

    for resource in (
        {"type": "job_instance", "id": instance},
        {"type": "publish_attempt", "id": attempt},
    ):
        opened = open_ticket(tenant, resource=resource)
        assert opened["resource"] == resource
        got = tenant.ok("support.getTicket", {"id": opened["id"]}, role="member")
        assert got["resource"] == resource
        assert staff_ok(tenant, "admin.getSupportTicket", {"id": opened["id"]})["resource"] == (
            resource
        )
        # Another organization's run or attempt is none of its own: 404, and nothing opened.
        body = problem(
            other_tenant.request("support.createTicket", {**TICKET, "resource": resource}),
            404,
            "NOT_FOUND",
        )
        assert resource["id"] in body["detail"]
    assert other_tenant.ok("support.listTickets", {}, role="admin")["total"] == 0


def test_a_file_uploaded_through_media_is_attached_to_the_ticket_and_staff_see_it(
    tenant: Org, other_tenant: Org
) -> None:
    """A screenshot goes up as every file does (media.createUploadUrl, the PUT, confirmUpload)
    and is attached by its asset id; another organization cannot attach it."""
    shot = Media.of(tenant).add(jpeg(640, 400), filename="error-screen.jpg")
    ticket = open_ticket(tenant, attachmentIds=[shot["id"], shot["id"]])
    (message,) = ticket["messages"]
    assert message["attachment_ids"] == [shot["id"]]  # once, however often it was named
    seen = staff_ok(tenant, "admin.getSupportTicket", {"id": ticket["id"]})
    assert seen["messages"][0]["attachment_ids"] == [shot["id"]]
    assert Media.of(tenant).get(shot["id"])["filename"] == "error-screen.jpg"
    stolen = {**TICKET, "attachmentIds": [shot["id"]]}
    problem(other_tenant.request("support.createTicket", stolen), 404, "NOT_FOUND")


def test_an_attachment_must_be_a_media_asset_of_the_organization(tenant: Org) -> None:
    data = {**TICKET, "attachmentIds": [str(uuid.uuid4())]}
    problem(tenant.request("support.createTicket", data), 404, "NOT_FOUND")
    assert tenant.ok("support.listTickets", {}, role="admin")["total"] == 0


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({**TICKET, "subject": "ab"}, "subject"),
        ({**TICKET, "body": "a\x00b"}, "body"),
        ({**TICKET, "body": ""}, "body"),
        ({**TICKET, "category": "rant"}, "category"),
        ({**TICKET, "requestIds": [f"r{i}" for i in range(11)]}, "requestIds"),
        ({**TICKET, "requestIds": ["has space"]}, "requestIds"),
        ({**TICKET, "priority": "asap"}, "priority"),
    ],
)
def test_a_bad_ticket_is_400_naming_the_field(tenant: Org, data: dict, field: str) -> None:
    body = problem(tenant.request("support.createTicket", data), 400, "BAD_REQUEST")
    assert any(field in error["path"] for error in body["errors"]), body


def test_markup_in_a_subject_is_stripped(tenant: Org) -> None:
    opened = open_ticket(tenant, subject="<script>x</script>Broken <b>feed</b>")
    assert opened["subject"] == "Broken feed"


# --- staff's paths, and who is refused there --------------------------------------------------


def test_staff_list_every_tenants_tickets_filtered(tenant: Org, other_tenant: Org) -> None:
    mine = open_ticket(tenant, priority="urgent")
    other = open_ticket(other_tenant)
    page = staff_ok(
        tenant, "admin.listSupportTickets", {"tenantId": str(tenant.tenant_id), "limit": 100}
    )
    assert [row["id"] for row in page["data"]] == [mine["id"]]
    assert page["data"][0]["tenant_id"] == str(tenant.tenant_id)
    assert page["data"][0]["source"] == "app"
    other_page = staff_ok(
        tenant, "admin.listSupportTickets", {"tenantId": str(other_tenant.tenant_id)}
    )
    assert [row["id"] for row in other_page["data"]] == [other["id"]]
    urgent = staff_ok(
        tenant,
        "admin.listSupportTickets",
        {"tenantId": str(tenant.tenant_id), "priority": "urgent", "status": "open"},
    )
    assert urgent["total"] == 1
    problem(staff(tenant, "admin.getSupportTicket", {"id": str(uuid.uuid4())}), 404, "NOT_FOUND")


@pytest.mark.parametrize("role", ["member", "admin"])
def test_a_tenant_token_is_refused_on_the_admin_paths(tenant: Org, role: str) -> None:
    ticket = open_ticket(tenant)
    for operation, data in (
        ("admin.listSupportTickets", {}),
        ("admin.getSupportTicket", {"id": ticket["id"]}),
        ("admin.replySupportTicket", {"id": ticket["id"], "body": "hi", "internal": True}),
    ):
        problem(tenant.request(operation, data, role=role), 403, "FORBIDDEN")
    # Without a token at all: 401.
    problem(tenant.call("admin.listSupportTickets", {}), 401, "UNAUTHORIZED")
    assert (
        tenant.ok("support.getTicket", {"id": ticket["id"]})["messages"][-1]["body"]
        == (TICKET["body"])
    )


def test_a_superadmin_token_is_refused_on_the_tenant_paths(tenant: Org) -> None:
    ticket = open_ticket(tenant)
    token = root(tenant)
    for operation, data in (
        ("support.listTickets", {}),
        ("support.getTicket", {"id": ticket["id"]}),
        ("support.createTicket", TICKET),
    ):
        # No organization: the header is required (400); the organization named: not a member.
        response = tenant.call(operation, data, token=token)
        assert response.status_code in (400, 403), response.text
        named = tenant.call(operation, data, token=token, org=tenant.org)
        problem(named, 403, "FORBIDDEN")
    assert tenant.ok("support.listTickets", {}, role="admin")["total"] == 1
