"""Every change to a draft someone would want to hear about is an event written in the change's
own transaction, over REST and RPC: the activity trail (activity.list) shows each one as it
happens, by whom, about which draft; a refused change leaves none. Creation by hand and by the
generation pipeline, every move of the state machine (review, edits, restore, generation
finishing, failing and starting again, auto-approval, publishing, archiving), assignment and
comments with mentions. Payloads carry what a listener needs (ids, title, statuses, the move)
and never the content."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from contentplatform.drafts import publication as draft_publication
from contentplatform.drafts import service as drafts_service
from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Database
from tests.drafts.review import Review, generated, stored_events
from tests.drafts.support import put_status
from tests.generation.support import Writer
from tests.publishers.support import wordpress_body
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.targets.wordpress import WordPressServer

review = org_fixture(Review)
other = org_fixture(Review, second=True)
writer = org_fixture(Writer)

SYSTEM = None  # the actor id of the system (generation, publishing)
CONTENT = "<p>The secret ingredient is smoked paprika.</p>"


@pytest.fixture
def wp() -> Iterator[WordPressServer]:
    with WordPressServer() as server:
        yield server


def moves(run: Any, draft_id: str) -> list[tuple[str, str]]:
    """(from, to) of each draft.status_changed event of the draft, oldest first."""
    return [
        (event.payload["from"], event.payload["to"])
        for event in stored_events(run, draft_id)
        if event.type == "draft.status_changed"
    ]


def test_creating_a_draft_by_hand_is_announced_by_its_author(review, other):
    draft = review.create("Paprika", CONTENT)

    assert review.trail(draft["id"]) == [("draft.created", review.users["editor"])]
    [event] = review.activity(action="draft.created")
    assert (event["resource_type"], event["resource_id"]) == ("draft", draft["id"])
    assert event["actor"] == {
        "type": "user",
        "id": review.users["editor"],
        "display_name": review.users["editor"],
    }
    # The other organization hears nothing of it.
    assert other.activity(resourceType="draft") == []


def test_every_review_move_is_announced_by_who_made_it(review, run):
    editor = review.users["editor"]
    draft = review.create("Paprika", CONTENT)
    review.reject(draft["id"], "Needs a source.")
    review.update(draft["id"], content="<p>Smoked paprika, says the chef.</p>")  # -> reviewing
    review.update(draft["id"], title="Smoked paprika")  # reviewing stays reviewing: no move
    review.approve(draft["id"])
    review.restore(draft["id"], 1)  # approved -> reviewing

    assert review.trail(draft["id"]) == [
        ("draft.created", editor),
        *[("draft.status_changed", editor)] * 4,
    ]
    assert moves(run, draft["id"]) == [
        ("reviewing", "rejected"),
        ("rejected", "reviewing"),
        ("reviewing", "approved"),
        ("approved", "reviewing"),
    ]
    rejected = [e for e in stored_events(run, draft["id"]) if e.payload.get("to") == "rejected"]
    assert rejected[0].payload["reason"] == "Needs a source."


def test_a_refused_change_leaves_no_event(review, run):
    draft = review.create()
    review.approve(draft["id"])
    before = review.trail(draft["id"])

    problem(review.request("drafts.approve", {"id": draft["id"]}), 409, "CONFLICT")
    problem(review.request("drafts.approve", {"id": str(uuid.uuid4())}), 404, "NOT_FOUND")
    response = review.request("drafts.assign", {"id": draft["id"], "assigneeId": "nobody"})
    problem(response, 400, "BAD_REQUEST")
    response = review.add_comment(draft["id"], "Ask @nobody-here", role="member")
    problem(response, 400, "BAD_REQUEST")

    assert review.trail(draft["id"]) == before
    assert len(stored_events(run, draft["id"])) == len(before)


def test_payloads_name_the_draft_and_the_move_never_the_content(review, run):
    job = review.job()
    draft = review.create("Paprika", CONTENT, jobId=job)
    review.approve(draft["id"])

    created, approved = stored_events(run, draft["id"])
    assert created.type == "draft.created"
    assert created.payload == {
        "draft_id": draft["id"],
        "title": "Paprika",
        "status": "reviewing",
        "job_id": job,
        "assignee_id": None,
        "origin": "written",
    }
    assert approved.payload == {
        "draft_id": draft["id"],
        "title": "Paprika",
        "status": "approved",
        "job_id": job,
        "assignee_id": None,
        "from": "reviewing",
        "to": "approved",
        "approved_by": review.users["editor"],
    }
    assert (approved.actor_type, approved.actor_id) == ("user", review.users["editor"])
    for event in (created, approved):
        assert "paprika</p>" not in str(event.payload).lower()


def test_assigning_is_announced_and_assigning_the_same_member_again_is_not(review, run):
    draft = review.create()
    review.whoami("member")
    review.whoami("admin")
    assign = {"id": draft["id"], "assigneeId": review.users["member"]}
    assert review.request("drafts.assign", assign).status_code == 200
    assert review.request("drafts.assign", assign).status_code == 200
    assign["assigneeId"] = review.users["admin"]
    assert review.request("drafts.assign", assign).status_code == 200

    editor = review.users["editor"]
    assert review.trail(draft["id"]) == [
        ("draft.created", editor),
        ("draft.assigned", editor),
        ("draft.assigned", editor),
    ]
    first, second = [e for e in stored_events(run, draft["id"]) if e.type == "draft.assigned"]
    assert (first.payload["assignee_id"], first.payload["previous_assignee_id"]) == (
        review.users["member"],
        None,
    )
    assert (second.payload["assignee_id"], second.payload["previous_assignee_id"]) == (
        review.users["admin"],
        review.users["member"],
    )


def test_a_comment_is_announced_and_its_mentions_too(review, run):
    draft = review.create()
    review.whoami("admin")
    member = review.users["member"]
    plain = review.comment(draft["id"], "Looks good to me.")
    body = f"@{review.users['admin']} can you check the intro? " + "x" * 300
    mentioning = review.comment(draft["id"], body)

    trail = review.trail(draft["id"])
    assert trail[:2] == [("draft.created", review.users["editor"]), ("draft.commented", member)]
    assert sorted(trail[2:]) == [("comment.mentioned", member), ("draft.commented", member)]

    events = {(e.type, e.payload["comment_id"]): e for e in stored_events(run, draft["id"])[1:]}
    assert set(events) == {
        ("draft.commented", plain["id"]),
        ("draft.commented", mentioning["id"]),
        ("comment.mentioned", mentioning["id"]),
    }
    mentioned = events["comment.mentioned", mentioning["id"]].payload
    assert mentioned["mentions"] == [review.users["admin"]]
    assert len(mentioned["excerpt"]) == 200 and mentioned["excerpt"].endswith("…")
    assert body.startswith(mentioned["excerpt"][:-1])
    assert events["draft.commented", plain["id"]].payload["excerpt"] == "Looks good to me."
    # A comment moves nothing.
    assert "draft.status_changed" not in {action for action, _ in trail}


def test_a_comments_markup_never_leaves_in_its_events(review, run):
    draft = review.create()
    review.whoami("admin")
    body = (
        f"@{review.users['admin']} <script>alert(1)</script><img src=x onerror=alert(2)>"
        '<a href="javascript:alert(3)">see this</a> & <b>the intro</b>'
    )
    said = review.comment(draft["id"], body)
    assert said["body"] == body  # the comment itself is kept as written

    events = [e for e in stored_events(run, draft["id"]) if e.payload.get("comment_id")]
    assert {e.type for e in events} == {"draft.commented", "comment.mentioned"}
    for event in events:
        excerpt = event.payload["excerpt"]
        assert excerpt == f"@{review.users['admin']} see this & the intro", event.type
        for needle in ("<", "script", "onerror", "javascript:"):
            assert needle not in excerpt


def test_bulk_actions_announce_each_draft_they_change(review, other):
    first, second = review.create("First"), review.create("Second")
    review.approve(second["id"])
    theirs = other.create("Theirs")

    review.bulk("approve", [first["id"], second["id"], theirs["id"]])
    review.bulk("archive", [first["id"], second["id"]], reason="Out of season.")
    assert review.unarchive(first["id"]).status_code == 200

    editor = review.users["editor"]
    assert review.trail(first["id"]) == [
        ("draft.created", editor),
        *[("draft.status_changed", editor)] * 3,
    ]
    assert review.trail(second["id"]) == [
        ("draft.created", editor),
        *[("draft.status_changed", editor)] * 2,
    ]
    # The other organization's draft was not touched, nor announced to anyone.
    assert other.trail(theirs["id"]) == [("draft.created", other.users["editor"])]
    assert review.trail(theirs["id"]) == []


def test_archiving_and_unarchiving_tell_the_move_and_the_reason(review, run):
    draft = review.create()
    review.bulk("archive", [draft["id"]], reason="Out of season.")
    assert review.unarchive(draft["id"]).status_code == 200

    assert moves(run, draft["id"]) == [("reviewing", "archived"), ("archived", "reviewing")]
    archived = [e for e in stored_events(run, draft["id"]) if e.payload.get("to") == "archived"]
    assert archived[0].payload["reason"] == "Out of season."


def test_the_generation_pipeline_announces_as_the_system(review, run):
    draft_id = generated(run, review.tenant_id, "Paprika", CONTENT)

    assert review.trail(draft_id) == [
        ("draft.created", SYSTEM),
        ("draft.status_changed", SYSTEM),
    ]
    created = stored_events(run, draft_id)[0]
    assert created.payload["origin"] == "generated"
    assert created.payload["status"] == "generating"
    assert created.payload["run_id"] is not None
    assert moves(run, draft_id) == [("generating", "reviewing")]


def test_generating_many_drafts_writes_one_created_event_each(review, run):
    tenant_id = review.tenant_id

    async def scenario(db: Database) -> list[uuid.UUID]:
        async with db.unit_of_work() as session:
            return await drafts_service.start_generating_many(
                session,
                tenant_id,
                [
                    drafts_service.Generating(title=f"Topic {n}", run_id=uuid.uuid4())
                    for n in range(5)
                ],
            )

    ids = [str(draft_id) for draft_id in run(scenario)]
    created = review.activity(action="draft.created")
    assert sorted(event["resource_id"] for event in created) == sorted(ids)
    for draft_id in ids:
        [event] = stored_events(run, draft_id)
        assert event.payload["title"].startswith("Topic ")


def test_a_failed_generation_and_a_new_run_are_announced(review, run):
    draft_id = generated(run, review.tenant_id, "Paprika", CONTENT)
    tenant_id = review.tenant_id

    async def again_and_fail(db: Database) -> None:
        run_id = uuid.uuid4()
        async with db.unit_of_work() as session:
            draft = await drafts_service.require(session, tenant_id, uuid.UUID(draft_id))
            drafts_service.generate_again(draft, run_id)
        async with db.unit_of_work() as session:
            found = await drafts_service.generating(session, tenant_id, uuid.UUID(draft_id), run_id)
            assert found is not None
            drafts_service.fail_generation(found, "Generation failed: the model timed out.")

    run(again_and_fail)
    assert moves(run, draft_id) == [
        ("generating", "reviewing"),
        ("reviewing", "generating"),
        ("generating", "rejected"),
    ]
    failed = stored_events(run, draft_id)[-1]
    assert failed.payload["reason"] == "Generation failed: the model timed out."
    assert failed.actor_type == "system"


def test_auto_approval_and_publishing_are_announced(review, run):
    draft = review.create("Paprika", CONTENT)
    tenant_id = review.tenant_id

    async def publish(db: Database) -> None:
        async with db.unit_of_work() as session:
            found = await drafts_service.require(
                session, tenant_id, uuid.UUID(draft["id"]), for_update=True
            )
            draft_publication.hold_for_review(found, {"decision": "held"})  # no move, no event
            draft_publication.approve_automatically(found, {"decision": "published"})
            await draft_publication.mark_published(session, found, "https://blog.example/p", None)
        async with db.unit_of_work() as session:
            found = await drafts_service.require(session, tenant_id, uuid.UUID(draft["id"]))
            await draft_publication.mark_published(session, found, "https://other.example/p", None)

    run(publish)
    trail = review.trail(draft["id"])
    assert trail[0] == ("draft.created", review.users["editor"])
    assert sorted(trail[1:4]) == [  # one transaction: its events in any order
        ("draft.published", SYSTEM),
        ("draft.status_changed", SYSTEM),
        ("draft.status_changed", SYSTEM),
    ]
    assert trail[4:] == [("draft.published", SYSTEM)]
    assert moves(run, draft["id"]) == [("reviewing", "approved"), ("approved", "published")]
    first, again = [e for e in stored_events(run, draft["id"]) if e.type == "draft.published"]
    assert (first.payload["url"], first.payload["republished"]) == (
        "https://blog.example/p",
        False,
    )
    assert (again.payload["url"], again.payload["published_url"], again.payload["republished"]) == (
        "https://other.example/p",
        "https://blog.example/p",
        True,
    )
    approved = [e for e in stored_events(run, draft["id"]) if e.payload.get("to") == "approved"]
    assert approved[0].payload["approved_by"] == "system:auto_publish"


def test_publishing_through_a_connection_is_announced_when_the_target_took_it(review, wp):
    connection = review.ok("publishers.create", wordpress_body(wp), role="admin")
    draft = review.approve(review.create("Paprika", CONTENT)["id"])
    data = {"id": draft["id"], "publisherConnectionId": connection["id"]}
    review.ok("drafts.publish", data)
    deadline = time.monotonic() + 15
    while review.get(draft["id"])["status"] != "published":
        assert time.monotonic() < deadline, "the attempt never succeeded"
        time.sleep(0.05)

    editor = review.users["editor"]
    trail = review.trail(draft["id"])
    assert trail[:2] == [("draft.created", editor), ("draft.status_changed", editor)]
    # The attempt's workflow, once the target answered: the move and the publication.
    assert sorted(trail[2:]) == [("draft.published", SYSTEM), ("draft.status_changed", SYSTEM)]
    [published] = review.activity(action="draft.published")
    assert published["resource_id"] == draft["id"]


def test_unpublishing_is_announced(review, run):
    draft = review.create()
    put_status(run, draft["id"], "published")
    tenant_id = review.tenant_id

    async def unpublish(db: Database) -> None:
        async with db.unit_of_work() as session:
            found = await drafts_service.require(session, tenant_id, uuid.UUID(draft["id"]))
            drafts_service.mark_unpublished(session, found)

    run(unpublish)
    assert moves(run, draft["id"]) == [("published", "approved")]


def test_a_draft_a_run_writes_through_the_api_is_announced_from_request_to_failure(writer):
    # No documents: the run fails at once (NO_SOURCES) and rejects its draft.
    started = writer.start(topic="Quantum chromodynamics on a lattice", keywords=["gluon"])
    run = writer.wait(started["run"]["id"])
    assert run["status"] == "failed"

    seen = Review.of(writer)
    assert seen.trail(started["id"]) == [
        ("draft.created", writer.users["editor"]),  # who asked for the article
        ("draft.status_changed", SYSTEM),  # the run, rejecting it
    ]


def test_a_deleted_draft_keeps_its_trail(review, run):
    draft = review.create()
    review.delete(draft["id"])

    async def gone(db: Database) -> bool:
        async with db.unit_of_work() as session:
            row = await session.get(Draft, uuid.UUID(draft["id"]))
            return row is not None and row.deleted_at is not None

    assert run(gone)
    assert review.trail(draft["id"]) == [("draft.created", review.users["editor"])]
