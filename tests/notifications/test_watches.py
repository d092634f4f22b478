"""watches.list, watches.upsert and watches.delete over REST and RPC: the tenant watch every
membership starts with (its defaults by role), one watch per (user, resource), what a watch may
choose, the 404 of a resource the caller cannot see, deleting (and muting the tenant watch),
the limit, bounds and roles, and a second organization that sees none of it."""

from __future__ import annotations

import uuid

import pytest

from contentplatform.notifications import routing, service
from tests.notifications.support import Members
from tests.support.bounds import MALFORMED_IDS
from tests.support.problems import problem

MEMBER_DEFAULTS = [
    "draft.created",
    "draft.status_changed",
    "draft.assigned",
    "draft.commented",
    "comment.mentioned",
    "draft.published",
    "draft.unpublished",
    "publish_attempt.failed",
    "job.run_failed",
    "generation.run_failed",
    # A new SEO error on a page of a draft published lately (seo/audits, issue 41).
    "seo.audit_issue_on_published_page",
    # Support's answers reach the member who opened the ticket (support/, issue 40).
    "support_ticket.replied",
]
ADMIN_DEFAULTS = [
    "document.failed",
    *MEMBER_DEFAULTS,
    "crawl.failed",
    "credits.low_balance",
    "subscription.updated",
    "media.license_expiring",
    "media.license_expired",
    "webhook_endpoint.disabled",
    "seo.connection_needs_reauth",
    # The platform's operators suspended or reactivated the organization (admin/, issue 40).
    "tenant.suspended",
    "tenant.reactivated",
    # A platform operator opened a support session inside the organization (issue 40).
    "impersonation.started",
]
DRAFT_EVENTS = [*MEMBER_DEFAULTS[:8], "seo.audit_issue_on_published_page", "generation.run_failed"]


def test_every_member_starts_with_a_tenant_watch_of_their_roles_defaults(
    members: Members,
) -> None:
    (watch,) = members.watches("member")
    assert watch == {
        "id": watch["id"],
        "resource_type": "tenant",
        "resource_id": None,
        "events": MEMBER_DEFAULTS,
        "channels": ["in_app"],
        "created_at": watch["created_at"],
        "updated_at": watch["updated_at"],
    }
    assert members.watches("member") == [watch]  # made once
    admin = members.tenant_watch("admin")
    assert admin["events"] == sorted(ADMIN_DEFAULTS, key=routing.NOTIFYING.index)
    assert admin["id"] != watch["id"]


def test_one_watch_per_resource_replaced_by_a_second_upsert(members: Members) -> None:
    draft_id = members.draft()
    first = members.watch(resourceType="draft", resourceId=draft_id)
    assert first == {
        "id": first["id"],
        "resource_type": "draft",
        "resource_id": draft_id,
        "events": DRAFT_EVENTS,
        "channels": ["in_app"],
        "created_at": first["created_at"],
        "updated_at": first["updated_at"],
    }
    second = members.watch(
        resourceType="draft",
        resourceId=draft_id,
        events=["draft.published", "comment.mentioned", "draft.published"],
        channels=["email", "email"],
    )
    assert second["id"] == first["id"]
    assert second["created_at"] == first["created_at"]
    assert (second["events"], second["channels"]) == (
        ["draft.published", "comment.mentioned"],
        ["email"],
    )
    assert [w["id"] for w in members.watches()] == [members.tenant_watch()["id"], first["id"]]
    # Empty events: the defaults again.
    assert members.watch(resourceType="draft", resourceId=draft_id, events=[])["events"] == (
        DRAFT_EVENTS
    )
    # Each member has their own.
    assert members.watch("editor", resourceType="draft", resourceId=draft_id)["id"] != first["id"]


def test_every_kind_of_resource_can_be_watched_and_listed_by_kind(members: Members) -> None:
    made = {
        "job": members.job(),
        "publisher": members.publisher(),
        "document": members.document(),
        "draft": members.draft(),
    }
    for kind, resource_id in made.items():
        watch = members.watch(resourceType=kind, resourceId=resource_id)
        assert (watch["resource_type"], watch["resource_id"]) == (kind, resource_id)
        assert watch["events"] == list(routing.FITTING[kind])
    assert [w["resource_type"] for w in members.watches()] == [
        "tenant",
        "job",
        "publisher",
        "document",
        "draft",
    ]
    (job,) = members.watches(resourceType="job")
    assert job["resource_id"] == made["job"]
    (document,) = members.watches(resourceId=made["document"])
    assert document["resource_type"] == "document"
    assert members.watches(resourceType="tenant")[0]["resource_id"] is None
    assert members.watches(resourceId=str(uuid.uuid4())) == []


def test_a_watch_on_a_job_chooses_among_its_own_and_its_drafts_events(members: Members) -> None:
    job_id = members.job()
    watch = members.watch(
        resourceType="job", resourceId=job_id, events=["job.run_completed", "draft.created"]
    )
    assert watch["events"] == ["job.run_completed", "draft.created"]


@pytest.mark.parametrize("kind", ["draft", "job", "publisher", "document"])
def test_a_resource_that_is_not_there_is_404(members: Members, kind: str) -> None:
    missing = str(uuid.uuid4())
    body = problem(
        members.request("watches.upsert", {"resourceType": kind, "resourceId": missing}),
        404,
        "NOT_FOUND",
    )
    assert missing in body["detail"]


def test_another_organizations_resources_and_watches_are_404(
    members: Members, others: Members
) -> None:
    theirs = {
        "draft": others.draft(),
        "job": others.job(),
        "publisher": others.publisher(),
        "document": others.document(),
    }
    for kind, resource_id in theirs.items():
        refused = members.request(
            "watches.upsert", {"resourceType": kind, "resourceId": resource_id}
        )
        problem(refused, 404, "NOT_FOUND")
    their_watch = others.watch(resourceType="draft", resourceId=theirs["draft"])
    problem(members.request("watches.delete", {"id": their_watch["id"]}), 404, "NOT_FOUND")
    problem(
        members.request("watches.delete", {"id": others.tenant_watch()["id"]}), 404, "NOT_FOUND"
    )
    assert [w["resource_type"] for w in members.watches()] == ["tenant"]
    assert [w["resource_type"] for w in others.watches()] == ["tenant", "draft"]


def test_a_deleted_draft_is_404(members: Members) -> None:
    draft_id = members.draft()
    assert members.request("drafts.delete", {"id": draft_id}, role="admin").status_code == 200
    refused = members.request("watches.upsert", {"resourceType": "draft", "resourceId": draft_id})
    problem(refused, 404, "NOT_FOUND")


def test_deleting_a_watch(members: Members) -> None:
    draft_id = members.draft()
    watch = members.watch(resourceType="draft", resourceId=draft_id)
    # Another member's watch is not theirs to delete.
    problem(members.request("watches.delete", {"id": watch["id"]}, role="admin"), 404, "NOT_FOUND")

    assert members.ok("watches.delete", {"id": watch["id"]}) == {"success": True}
    assert [w["resource_type"] for w in members.watches()] == ["tenant"]
    body = problem(members.request("watches.delete", {"id": watch["id"]}), 404, "NOT_FOUND")
    assert watch["id"] in body["detail"]
    again = members.watch(resourceType="draft", resourceId=draft_id)
    assert again["id"] != watch["id"]


def test_a_deleted_tenant_watch_stays_deleted_until_upserted(members: Members) -> None:
    tenant_watch = members.tenant_watch()
    assert members.ok("watches.delete", {"id": tenant_watch["id"]}) == {"success": True}
    assert members.watches() == []  # not made again by itself
    assert members.watches() == []
    problem(members.request("watches.delete", {"id": tenant_watch["id"]}), 404, "NOT_FOUND")

    back = members.watch(resourceType="tenant")
    assert (back["resource_id"], back["events"], back["channels"]) == (
        None,
        MEMBER_DEFAULTS,
        ["in_app"],
    )
    assert back["created_at"] > tenant_watch["created_at"]
    assert members.watches() == [back]
    chosen = members.watch(resourceType="tenant", events=["member.added"], channels=["email"])
    assert (chosen["id"], chosen["events"], chosen["channels"]) == (
        back["id"],
        ["member.added"],
        ["email"],
    )


def test_the_most_watches_a_member_keeps(members: Members, monkeypatch) -> None:
    monkeypatch.setattr(service, "MAX_WATCHES", 2)
    first, second, third = members.draft(), members.draft(), members.draft()
    members.watch(resourceType="draft", resourceId=first)
    members.watch(resourceType="draft", resourceId=second)
    body = problem(
        members.request("watches.upsert", {"resourceType": "draft", "resourceId": third}),
        409,
        "CONFLICT",
    )
    assert "2 resources" in body["detail"]
    # Replacing one it has is no new watch; the tenant watch is not one of them.
    assert members.watch(resourceType="draft", resourceId=first, events=["draft.published"])
    assert members.watch(resourceType="tenant", events=["member.added"])
    assert len(members.watches()) == 3


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"resourceType": "draft"}, "resourceId"),
        ({"resourceType": "tenant", "resourceId": str(uuid.uuid4())}, "resourceId"),
        ({"resourceType": "comment", "resourceId": str(uuid.uuid4())}, "resourceType"),
        ({}, "resourceType"),
        ({"resourceType": "tenant", "events": ["draft.exploded"]}, "events"),
        ({"resourceType": "tenant", "events": ["settings.updated"]}, "events"),
        ({"resourceType": "tenant", "events": ["webhook.test"]}, "events"),
        ({"resourceType": "tenant", "events": ["draft\u202ecreated"]}, "events"),
        # More names than the catalog has notifying types.
        (
            {"resourceType": "tenant", "events": ["draft.created"] * (len(routing.NOTIFYING) + 1)},
            "events",
        ),
        ({"resourceType": "tenant", "channels": ["sms"]}, "channels.0"),
        ({"resourceType": "tenant", "channels": []}, "channels"),
        ({"resourceType": "tenant", "colour": "blue"}, "colour"),
    ],
)
def test_a_bad_watch_is_400_naming_the_field(members: Members, data: dict, field: str) -> None:
    body = problem(members.request("watches.upsert", data), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}, body


@pytest.mark.parametrize(
    ("kind", "event"),
    [
        ("draft", "credits.low_balance"),
        ("document", "draft.created"),
        ("publisher", "job.run_failed"),
        ("job", "document.ready"),
    ],
)
def test_events_that_cannot_be_about_the_resource_are_400(
    members: Members, kind: str, event: str
) -> None:
    made = {
        "draft": members.draft,
        "job": members.job,
        "publisher": members.publisher,
        "document": members.document,
    }[kind]()
    data = {"resourceType": kind, "resourceId": made, "events": [event]}
    body = problem(members.request("watches.upsert", data), 400, "BAD_REQUEST")
    (error,) = body["errors"]
    assert error["path"] == "events"
    assert event in error["message"] and f"a {kind} watch may choose" in error["message"]


@pytest.mark.parametrize("bad", MALFORMED_IDS)
def test_a_malformed_watch_id_is_400(members: Members, bad: str) -> None:
    problem(members.request("watches.delete", {"id": bad}), 400, "BAD_REQUEST")


def test_a_bad_filter_is_400(members: Members) -> None:
    body = problem(members.request("watches.list", {"resourceType": "comment"}), 400, "BAD_REQUEST")
    assert "resourceType" in {error["path"] for error in body["errors"]}


@pytest.mark.parametrize(
    ("operation", "data"),
    [
        ("watches.list", {}),
        ("watches.upsert", {"resourceType": "tenant"}),
        ("watches.delete", {"id": str(uuid.uuid4())}),
    ],
)
def test_a_token_is_needed_and_api_keys_are_refused(
    members: Members, operation: str, data: dict
) -> None:
    problem(members.call(operation, data, org=members.org), 401, "UNAUTHORIZED")
    key = members.ok("settings.createApiKey", {"name": "Script"}, role="admin")["secret"]
    problem(members.call(operation, data, token=key), 403, "FORBIDDEN")
