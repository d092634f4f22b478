"""notifications.list and notifications.markRead over REST and RPC, and the listener that makes
them from the events outbox: what reaches whom (the assignee, the mentioned, the job's creator,
the admins, a watch's owner), never the actor, never another organization; unread counts,
marking read by ids, up to a time or all, the 90-day retention, bounds and roles."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest

from contentplatform.kit.db import Database
from contentplatform.notifications import service
from tests.conftest import Run, Token
from tests.notifications.support import Members, age, emit, settled
from tests.support.problems import problem

# --- the listener, end to end ------------------------------------------------------------------


def test_assigning_a_draft_tells_the_assignee_and_never_the_actor(
    members: Members, run: Run
) -> None:
    draft_id = members.draft("Spring launch")
    assigned = members.request(
        "drafts.assign", {"id": draft_id, "assigneeId": members.subject("member")}, role="editor"
    )
    assert assigned.status_code == 200, assigned.text
    settled(run, members.tenant_id)

    page = members.notifications("member")
    assert page["total"] == 1
    assert page["unread_count"] == 1
    (told,) = page["data"]
    assert told == {
        "id": told["id"],
        "type": "draft.assigned",
        "category": "review",
        "title": "Draft assigned to you",
        "body": f"“Spring launch” was assigned to you by {members.subject('editor')}.",
        "resource_type": "draft",
        "resource_id": draft_id,
        "url": f"/drafts/{draft_id}",
        "actor_id": members.subject("editor"),
        "read_at": None,
        "created_at": told["created_at"],
    }
    # The editor acted; the admin is not the assignee and watches nothing of it.
    assert members.notifications("editor")["total"] == 0
    assert members.notifications("admin")["total"] == 0

    # The draft moves on: its assignee hears of it (the draft's events, by default).
    approved = members.request("drafts.approve", {"id": draft_id}, role="admin")
    assert approved.status_code == 200, approved.text
    settled(run, members.tenant_id)
    newest = members.notifications("member")["data"][0]
    assert (newest["type"], newest["title"]) == ("draft.status_changed", "Draft approved")
    assert newest["body"] == (
        f"“Spring launch” moved from reviewing to approved by {members.subject('admin')}."
    )
    assert members.notifications("admin")["total"] == 0


def test_an_assignee_who_assigns_themselves_is_not_told(members: Members, run: Run) -> None:
    draft_id = members.draft()
    emit(
        run,
        members.tenant_id,
        "draft.assigned",
        actor=members.actor("member"),
        resource_id=draft_id,
        payload={"draft_id": draft_id, "title": "Mine", "assignee_id": members.subject("member")},
    )
    assert members.notifications("member")["total"] == 0


def test_a_mention_tells_the_members_it_names_who_are_members(members: Members, run: Run) -> None:
    draft_id = str(uuid.uuid4())
    emit(
        run,
        members.tenant_id,
        "comment.mentioned",
        actor=members.actor("editor"),
        resource_id=draft_id,
        payload={
            "draft_id": draft_id,
            "title": "Launch",
            "mentions": [members.subject("member"), members.subject("editor"), "someone-else"],
        },
    )
    (told,) = members.notifications("member")["data"]
    assert told["title"] == "You were mentioned"
    assert told["body"] == "Ada Editor mentioned you in a comment on “Launch”."
    # The author mentioned themselves: never told of their own action.
    assert members.notifications("editor")["total"] == 0
    assert members.notifications("admin")["total"] == 0


def test_failures_reach_the_admins_and_the_jobs_creator_billing_only_admins(
    members: Members, run: Run
) -> None:
    job_id = members.job("Weekly notes")  # created by the editor
    emit(
        run,
        members.tenant_id,
        "job.run_failed",
        resource_id=job_id,
        # As job runs write it: the job's name and creator are read from the job.
        payload={
            "job_id": job_id,
            "instance_id": str(uuid.uuid4()),
            "error": "the model timed out",
        },
    )
    emit(run, members.tenant_id, "credits.low_balance", payload={"balance": 40})
    emit(
        run,
        members.tenant_id,
        "document.failed",
        resource_id=uuid.uuid4(),
        payload={"filename": "scan.pdf", "error": "no text"},
    )

    assert members.types("admin") == ["document.failed", "credits.low_balance", "job.run_failed"]
    assert members.types("editor") == ["job.run_failed"]
    assert members.types("member") == []
    failed = members.notifications("editor")["data"][0]
    assert failed["title"] == "Job run failed"
    assert failed["body"] == "A run of “Weekly notes” failed: the model timed out."
    assert failed["category"] == "generation"
    assert (failed["url"], failed["actor_id"]) == (f"/jobs/{job_id}", None)
    billing = members.notifications("admin", category="billing")["data"]
    assert [(b["title"], b["body"], b["url"]) for b in billing] == [
        ("Credits running low", "40 credits left.", "/settings/billing")
    ]


def test_a_failed_publish_reaches_the_assignee_the_admins_and_the_connections_watchers(
    members: Members, run: Run
) -> None:
    draft_id = members.draft("Launch")
    assign = {"id": draft_id, "assigneeId": members.subject("member")}
    assert members.request("drafts.assign", assign, role="editor").status_code == 200
    connection_id = members.publisher()
    members.watch("editor", resourceType="publisher", resourceId=connection_id)
    settled(run, members.tenant_id)
    # As publishing writes it: the draft's title and assignee are read from the draft.
    emit(
        run,
        members.tenant_id,
        "publish_attempt.failed",
        resource_id=draft_id,
        payload={
            "attempt_id": str(uuid.uuid4()),
            "draft_id": draft_id,
            "publisher_connection_id": connection_id,
            "mode": "publish",
            "tries": 3,
            "error": "the target answered 502",
        },
    )
    failed = members.notifications("member")["data"][0]
    assert (failed["type"], failed["category"], failed["title"]) == (
        "publish_attempt.failed",
        "publishing",
        "Publishing failed",
    )
    assert failed["body"] == "“Launch” could not be published: the target answered 502."
    assert failed["url"] == f"/drafts/{draft_id}"
    assert members.types("admin") == ["publish_attempt.failed"]
    assert members.types("editor") == ["publish_attempt.failed"]


def test_a_job_watch_hears_of_the_jobs_drafts_and_runs_not_of_another_job(
    members: Members, run: Run
) -> None:
    watched, other = members.job("Watched"), members.job("Other")
    members.watch(resourceType="job", resourceId=watched)
    actor = members.actor("editor")
    for job_id, title in ((watched, "In the watched job"), (other, "In another job")):
        emit(
            run,
            members.tenant_id,
            "draft.created",
            actor=actor,
            resource_id=uuid.uuid4(),
            payload={"title": title, "job_id": job_id},
        )
    emit(
        run,
        members.tenant_id,
        "generation.run_failed",
        resource_id=uuid.uuid4(),
        payload={"job_id": watched, "title": "Run of the watched job"},
    )
    page = members.notifications("member")
    assert [item["type"] for item in page["data"]] == ["generation.run_failed", "draft.created"]
    assert page["data"][1]["body"] == "“In the watched job” was created by Ada Editor."


def test_a_draft_watch_can_choose_its_events_and_email_only_is_not_shown_in_app(
    members: Members, run: Run
) -> None:
    draft_id = members.draft("Chosen")
    members.watch(resourceType="draft", resourceId=draft_id, events=["draft.published"])
    members.watch(
        "admin", resourceType="draft", resourceId=draft_id, channels=["email"]
    )  # recorded for a mailer; nothing in-app
    payload = {"draft_id": draft_id, "title": "Chosen"}
    emit(run, members.tenant_id, "draft.status_changed", resource_id=draft_id, payload=payload)
    emit(run, members.tenant_id, "draft.published", resource_id=draft_id, payload=payload)
    assert members.types("member") == ["draft.published"]
    assert members.types("admin") == []


def test_an_event_is_told_once_however_many_watches_choose_it(members: Members, run: Run) -> None:
    job_id = members.job()
    draft_id = members.draft("Twice watched", jobId=job_id)
    settled(run, members.tenant_id)  # its draft.created told before anyone watched
    members.watch(resourceType="job", resourceId=job_id)
    members.watch(resourceType="draft", resourceId=draft_id)
    emit(
        run,
        members.tenant_id,
        "draft.assigned",
        actor=members.actor("admin"),
        resource_id=draft_id,
        payload={"draft_id": draft_id, "job_id": job_id, "assignee_id": members.subject("member")},
    )
    assert members.types("member") == ["draft.assigned"]


def test_a_deleted_tenant_watch_mutes_the_role_defaults_until_asked_for_again(
    members: Members, run: Run
) -> None:
    def assign() -> None:
        emit(
            run,
            members.tenant_id,
            "draft.assigned",
            actor=members.actor("editor"),
            resource_id=uuid.uuid4(),
            payload={"title": "Muted?", "assignee_id": members.subject("member")},
        )

    gone = members.request("watches.delete", {"id": members.tenant_watch()["id"]})
    assert gone.status_code == 200, gone.text
    assign()
    assert members.notifications("member")["total"] == 0

    members.watch(resourceType="tenant")
    assign()
    assert members.types("member") == ["draft.assigned"]


def test_the_tenant_watch_also_chooses_event_types_across_the_tenant(
    members: Members, run: Run
) -> None:
    members.watch(resourceType="tenant", events=["document.ready"])
    document_id = uuid.uuid4()
    emit(
        run,
        members.tenant_id,
        "document.ready",
        actor=members.actor("editor"),
        resource_id=document_id,
        payload={"filename": "guide.md"},
    )
    emit(
        run,
        members.tenant_id,
        "draft.assigned",
        actor=members.actor("editor"),
        resource_id=uuid.uuid4(),
        payload={"assignee_id": members.subject("member")},
    )
    (told,) = members.notifications("member")["data"]  # no longer the draft defaults
    assert (told["title"], told["body"], told["url"]) == (
        "Document ready",
        "“guide.md” is processed and searchable.",
        f"/documents/{document_id}",
    )
    # The others kept their defaults, which do not bring it.
    assert members.notifications("admin")["total"] == 0


def test_markup_in_a_payload_is_told_as_plain_text(members: Members, run: Run) -> None:
    emit(
        run,
        members.tenant_id,
        "draft.assigned",
        actor=members.actor("editor"),
        resource_id=uuid.uuid4(),
        payload={
            "title": "<b>Launch</b><script>alert(1)</script>\u202e",
            "assignee_id": members.subject("member"),
        },
    )
    (told,) = members.notifications("member")["data"]
    assert told["body"] == "“Launch” was assigned to you by Ada Editor."


# --- another organization ----------------------------------------------------------------------


def test_another_organization_sees_none_of_them_and_cannot_mark_them(
    members: Members, others: Members, run: Run, token: Token
) -> None:
    emit(
        run,
        members.tenant_id,
        "draft.assigned",
        actor=members.actor("editor"),
        resource_id=uuid.uuid4(),
        payload={"title": "Ours", "assignee_id": members.subject("member")},
    )
    (ours,) = members.notifications("member")["data"]
    assert others.notifications("member") == {
        "data": [],
        "total": 0,
        "page": 1,
        "limit": 20,
        "unread_count": 0,
    }
    # The same person, a member of the other organization too, sees only that one's there.
    same_person = token(others.org, members.subject("member"), "member")
    theirs = others.call("notifications.list", {}, token=same_person, org=others.org)
    assert theirs.status_code == 200, theirs.text
    assert theirs.json()["total"] == 0
    marked = others.call(
        "notifications.markRead", {"ids": [ours["id"]]}, token=same_person, org=others.org
    )
    assert marked.status_code == 200, marked.text
    assert marked.json() == {"updated": 0, "unread_count": 0}
    assert members.notifications("member")["unread_count"] == 1


def test_an_event_of_another_organization_reaches_no_member_here(
    members: Members, others: Members, run: Run
) -> None:
    job_id = members.job()
    members.watch(resourceType="job", resourceId=job_id)
    # The other organization's event names our job's id: its watches are not ours.
    emit(
        run,
        others.tenant_id,
        "job.run_failed",
        resource_id=job_id,
        payload={"job_id": job_id},
    )
    assert members.notifications("member")["total"] == 0
    assert members.notifications("admin")["total"] == 0
    assert others.types("admin") == ["job.run_failed"]


# --- reading, counting and marking read --------------------------------------------------------


def three_failures(members: Members, run: Run) -> list[dict]:
    """Three notifications of the admin, newest first."""
    for name in ("first.pdf", "second.pdf", "third.pdf"):
        emit(
            run,
            members.tenant_id,
            "document.failed",
            resource_id=uuid.uuid4(),
            payload={"filename": name},
        )
    page = members.notifications("admin")
    assert [item["body"] for item in page["data"]] == [
        f"“{name}” could not be processed." for name in ("third.pdf", "second.pdf", "first.pdf")
    ]
    return page["data"]


def test_pages_filters_and_the_unread_count(members: Members, run: Run) -> None:
    newest, middle, oldest = three_failures(members, run)
    emit(
        run, members.tenant_id, "subscription.updated", payload={"plan": "Pro", "status": "active"}
    )

    first = members.notifications("admin", limit=2)
    assert (first["total"], first["page"], first["limit"], first["unread_count"]) == (4, 1, 2, 4)
    assert [item["type"] for item in first["data"]] == ["subscription.updated", "document.failed"]
    second = members.notifications("admin", limit=2, page=2)
    assert [item["id"] for item in second["data"]] == [middle["id"], oldest["id"]]
    assert members.notifications("admin", page=3, limit=2)["data"] == []

    ingestion = members.notifications("admin", category="ingestion")
    assert (ingestion["total"], ingestion["unread_count"]) == (3, 4)

    assert members.mark_read("admin", ids=[newest["id"]]) == {"updated": 1, "unread_count": 3}
    unread = members.notifications("admin", unreadOnly=True, category="ingestion")
    assert [item["id"] for item in unread["data"]] == [middle["id"], oldest["id"]]
    read = members.notifications("admin", category="ingestion")["data"][0]
    assert read["id"] == newest["id"] and read["read_at"] is not None


def test_mark_read_by_ids_ignores_others_ids(members: Members, run: Run) -> None:
    newest, middle, _ = three_failures(members, run)
    emit(
        run,
        members.tenant_id,
        "draft.assigned",
        actor=members.actor("admin"),
        resource_id=uuid.uuid4(),
        payload={"assignee_id": members.subject("member")},
    )
    members_own = members.notifications("member")["data"][0]["id"]

    result = members.mark_read(
        "admin", ids=[newest["id"], newest["id"], members_own, str(uuid.uuid4())]
    )
    assert result == {"updated": 1, "unread_count": 2}
    # Read already: no change the second time.
    assert members.mark_read("admin", ids=[newest["id"], middle["id"]]) == {
        "updated": 1,
        "unread_count": 1,
    }
    assert members.notifications("member")["unread_count"] == 1


def test_mark_read_up_to_a_time_and_all(members: Members, run: Run) -> None:
    newest, middle, oldest = three_failures(members, run)
    result = members.mark_read("admin", before=middle["created_at"])
    assert result == {"updated": 2, "unread_count": 1}
    unread = members.notifications("admin", unreadOnly=True)["data"]
    assert [item["id"] for item in unread] == [newest["id"]]

    assert members.mark_read("admin", all=True) == {"updated": 1, "unread_count": 0}
    assert members.mark_read("admin", all=True) == {"updated": 0, "unread_count": 0}
    early = datetime.fromisoformat(oldest["created_at"]) - timedelta(days=1)
    assert members.mark_read("admin", before=early.isoformat()) == {
        "updated": 0,
        "unread_count": 0,
    }


def test_notifications_are_kept_90_days(members: Members, run: Run) -> None:
    three_failures(members, run)
    age(run, members.tenant_id, days=91)
    assert members.notifications("admin")["total"] == 0
    assert members.notifications("admin")["unread_count"] == 0

    async def forget(db: Database) -> int:
        async with db.unit_of_work() as session:
            return await service.forget_old(session)

    run(forget)  # what the maintenance runs on each reconcile pass
    assert members.mark_read("admin", all=True) == {"updated": 0, "unread_count": 0}


# --- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"page": 0}, "page"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"category": "gossip"}, "category"),
        ({"unreadOnly": "sometimes"}, "unreadOnly"),
    ],
)
def test_list_bounds_are_400_naming_the_field(members: Members, query: dict, field: str) -> None:
    body = problem(members.request("notifications.list", query), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({}, "body"),
        ({"all": False}, "body"),
        ({"ids": [str(uuid.uuid4())], "all": True}, "body"),
        ({"before": "2030-01-01T00:00:00Z", "all": True}, "body"),
        ({"ids": []}, "ids"),
        ({"ids": [str(uuid.uuid4()) for _ in range(101)]}, "ids"),
        ({"ids": ["not-a-uuid"]}, "ids.0"),
        ({"before": "2030-01-01T00:00:00"}, "before"),
        ({"all": True, "colour": "blue"}, "colour"),
    ],
)
def test_mark_read_takes_exactly_one_of_ids_before_or_all(
    members: Members, data: dict, field: str
) -> None:
    body = problem(members.request("notifications.markRead", data), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}, body


def test_a_hundred_ids_are_taken(members: Members) -> None:
    ids = [str(uuid.uuid4()) for _ in range(100)]
    assert members.mark_read(ids=ids) == {"updated": 0, "unread_count": 0}


@pytest.mark.parametrize(
    ("operation", "data"),
    [("notifications.list", {}), ("notifications.markRead", {"all": True})],
)
def test_a_token_is_needed_and_api_keys_are_refused(
    members: Members, operation: str, data: dict
) -> None:
    problem(members.call(operation, data, org=members.org), 401, "UNAUTHORIZED")
    key = members.ok("settings.createApiKey", {"name": "Script"}, role="admin")["secret"]
    problem(members.call(operation, data, token=key), 403, "FORBIDDEN")
