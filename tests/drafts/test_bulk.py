"""drafts.bulk over REST and RPC: one review action on up to 50 drafts, each through the state
machine on its own (a draft that cannot take it is reported, the others change), the inputs each
action needs, roles (editors act, only admins delete, members do neither) and a second tenant's
drafts, which are NOT_FOUND like missing ones and never touched."""

from __future__ import annotations

import uuid

import pytest

from tests.drafts.review import Review, bad_fields, codes, results
from tests.drafts.support import put_status
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

review = org_fixture(Review)
other = org_fixture(Review, second=True)


def test_approve_many_reports_each_draft_in_the_order_given(review, other):
    reviewing = review.create("A")
    approved = review.approve(review.create("B")["id"])
    rejected = review.reject(review.create("C")["id"])
    theirs, missing = other.create("Theirs"), str(uuid.uuid4())
    ids = [rejected["id"], reviewing["id"], theirs["id"], approved["id"], missing]

    outcome = review.bulk("approve", ids)
    assert (outcome["success"], outcome["affected"]) == (False, 1)
    assert codes(outcome) == results(
        (rejected["id"], "CONFLICT"),
        (reviewing["id"], None),
        (theirs["id"], "NOT_FOUND"),
        (approved["id"], "CONFLICT"),
        (missing, "NOT_FOUND"),
    )
    by_id = {row["id"]: row for row in outcome["results"]}
    # The detail is what the single operation would say.
    assert (
        by_id[rejected["id"]]["error"]["detail"] == "The draft is rejected; it cannot be approved."
    )
    assert by_id[missing]["error"]["detail"] == f"There is no draft {missing}."
    assert by_id[reviewing["id"]]["error"] is None

    after = review.get(reviewing["id"])
    assert (after["status"], after["approved_by"]) == ("approved", review.users["editor"])
    assert review.get(rejected["id"]) == rejected
    assert other.get(theirs["id"]) == theirs


def test_every_draft_changed_is_success(review):
    drafts = [review.create(f"Draft {n}") for n in range(3)]
    outcome = review.bulk("reject", [d["id"] for d in drafts], reason="  Needs sources.  ")
    assert outcome == {
        "success": True,
        "affected": 3,
        "results": [{"id": d["id"], "ok": True, "error": None} for d in drafts],
    }
    for draft in drafts:
        after = review.get(draft["id"])
        assert (after["status"], after["rejection_reason"]) == ("rejected", "Needs sources.")


def test_archive_many_from_any_status_but_generating(review, run):
    drafts = {status: review.create(status) for status in ("reviewing", "approved", "rejected")}
    review.approve(drafts["approved"]["id"])
    review.reject(drafts["rejected"]["id"])
    generating, published = review.create("generating"), review.create("published")
    put_status(run, generating["id"], "generating")
    put_status(run, published["id"], "published")
    ids = [d["id"] for d in drafts.values()] + [generating["id"], published["id"]]

    outcome = review.bulk("archive", ids, reason="End of the season.")
    assert codes(outcome) == results(
        *((d["id"], None) for d in drafts.values()),
        (generating["id"], "CONFLICT"),
        (published["id"], None),
    )
    for draft_id in [*(d["id"] for d in drafts.values()), published["id"]]:
        assert review.get(draft_id)["status"] == "archived"
    assert review.get(generating["id"])["status"] == "generating"
    # Archived already: a conflict, not a second move.
    assert codes(review.bulk("archive", [published["id"]])) == results(
        (published["id"], "CONFLICT")
    )


def test_assign_many_to_one_member(review, other):
    review.whoami("member")
    mine, theirs = review.create(), other.create()
    outcome = review.bulk("assign", [mine["id"], theirs["id"]], assigneeId=review.users["member"])
    assert codes(outcome) == results((mine["id"], None), (theirs["id"], "NOT_FOUND"))
    assert review.get(mine["id"])["assignee_id"] == review.users["member"]
    assert other.get(theirs["id"])["assignee_id"] is None
    # Assigning is not a move: any status takes it.
    review.archive(mine["id"])
    review.whoami("admin")
    outcome = review.bulk("assign", [mine["id"]], assigneeId=review.users["admin"])
    assert outcome["success"]


def test_assigning_someone_who_is_not_a_member_changes_nothing(review, other):
    draft = review.create()
    outsider = other.whoami("member")["user"]["idp_user_id"]
    for assignee in (outsider, "nobody-at-all"):
        response = review.bulk_request("assign", [draft["id"]], assigneeId=assignee)
        assert bad_fields(response) == ["assigneeId"]
    assert review.get(draft["id"]) == draft


def test_delete_many_is_for_admins(review, other):
    mine, theirs = review.create("Mine"), other.create("Theirs")
    response = review.bulk_request("delete", [mine["id"]])  # as the editor
    body = problem(response, 403, "FORBIDDEN")
    assert "admin" in body["detail"] and "editor" in body["detail"]
    assert review.get(mine["id"]) == mine

    outcome = review.bulk("delete", [mine["id"], theirs["id"]], role="admin")
    assert codes(outcome) == results((mine["id"], None), (theirs["id"], "NOT_FOUND"))
    problem(review.request("drafts.getById", {"id": mine["id"]}), 404, "NOT_FOUND")
    assert other.get(theirs["id"]) == theirs
    # Deleted already: not found.
    outcome = review.bulk("delete", [mine["id"]], role="admin")
    assert codes(outcome) == results((mine["id"], "NOT_FOUND"))


@pytest.mark.parametrize("action", ["approve", "reject", "archive", "assign", "delete"])
def test_a_member_may_not_act_in_bulk(review, action):
    draft = review.create()
    extra = {"reason": "No."} if action == "reject" else {}
    if action == "assign":
        extra = {"assigneeId": review.users["editor"]}
    body = problem(
        review.bulk_request(action, [draft["id"]], role="member", **extra), 403, "FORBIDDEN"
    )
    assert "member" in body["detail"]
    assert review.get(draft["id"]) == draft


@pytest.mark.parametrize(
    ("action", "extra", "field"),
    [
        ("reject", {}, "reason"),
        ("reject", {"reason": "   "}, "reason"),
        ("reject", {"reason": "x" * 2001}, "reason"),
        ("reject", {"reason": "a\x00b"}, "reason"),
        ("archive", {"reason": "x" * 501}, "reason"),
        ("approve", {"reason": "Why not."}, "reason"),
        ("delete", {"reason": "Why not."}, "reason"),
        ("assign", {}, "assigneeId"),
        ("assign", {"assigneeId": ""}, "assigneeId"),
        ("assign", {"assigneeId": "x" * 256}, "assigneeId"),
        ("approve", {"assigneeId": "someone"}, "assigneeId"),
        ("publish", {}, "action"),
        ("approve", {"unknown": 1}, "unknown"),
    ],
)
def test_each_action_takes_what_it_needs_and_nothing_else(review, action, extra, field):
    draft = review.create()
    response = review.bulk_request(action, [draft["id"]], role="admin", **extra)
    assert bad_fields(response) == [field]
    assert review.get(draft["id"]) == draft


@pytest.mark.parametrize(
    ("ids", "field"),
    [
        ([], "draftIds"),
        ([str(uuid.uuid4()) for _ in range(51)], "draftIds"),
        (["not-a-uuid"], "draftIds.0"),
        ("not-a-list", "draftIds"),
    ],
)
def test_draft_ids_are_1_to_50_ids(review, ids, field):
    assert bad_fields(review.bulk_request("approve", ids)) == [field]


def test_the_same_draft_twice_is_400(review):
    draft = review.create()
    assert bad_fields(review.bulk_request("approve", [draft["id"], draft["id"]])) == ["draftIds"]
    assert review.get(draft["id"]) == draft


@pytest.mark.own_org
def test_fifty_drafts_at_once(review):
    drafts = [review.create(f"Draft {n}")["id"] for n in range(50)]
    outcome = review.bulk("approve", drafts)
    assert (outcome["success"], outcome["affected"]) == (True, 50)
    assert review.stats()["byStatus"]["approved"] == 50


def test_without_a_valid_token_is_401(call, org):
    data = {"action": "approve", "draftIds": [str(uuid.uuid4())]}
    problem(call("drafts.bulk", data, org=org), 401, "UNAUTHORIZED")
