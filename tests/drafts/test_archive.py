"""Archiving (drafts.bulk's archive) and drafts.unarchive over REST and RPC: an archived draft
cannot be edited or approved and leaves nothing behind when it comes back to review, where it
needs approving again; unarchive is for archived drafts, editors, and the draft's own
organization only."""

from __future__ import annotations

import uuid

import pytest

from tests.drafts.review import Review, bad_fields
from tests.support.bounds import MALFORMED_IDS
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

review = org_fixture(Review)
other = org_fixture(Review, second=True)


def test_an_archived_draft_comes_back_to_review_and_needs_approving_again(review):
    draft = review.approve(review.create("Seasonal", "<p>Plant bulbs in autumn.</p>")["id"])
    review.archive(draft["id"])
    archived = review.get(draft["id"])
    assert archived["status"] == "archived"
    assert archived["version"] == draft["version"]

    # Archived: no edit, no approval.
    conflict = problem(
        review.request("drafts.update", {"id": draft["id"], "title": "New"}), 409, "CONFLICT"
    )
    assert "archived" in conflict["detail"]
    problem(review.request("drafts.approve", {"id": draft["id"]}), 409, "CONFLICT")

    response = review.unarchive(draft["id"])
    assert response.status_code == 200, response.text
    back = response.json()
    assert back == review.get(draft["id"])
    assert (back["status"], back["approved_at"], back["approved_by"]) == ("reviewing", None, None)
    # Content and revisions as they were.
    assert (back["title"], back["content"], back["version"]) == (
        draft["title"],
        draft["content"],
        draft["version"],
    )
    assert review.versions(draft["id"])["total"] == 1
    assert review.approve(draft["id"])["status"] == "approved"


@pytest.mark.parametrize("status", ["reviewing", "approved", "rejected"])
def test_only_an_archived_draft_can_be_unarchived(review, status):
    draft = review.create()
    if status == "approved":
        draft = review.approve(draft["id"])
    elif status == "rejected":
        draft = review.reject(draft["id"])
    body = problem(review.unarchive(draft["id"]), 409, "CONFLICT")
    assert body["detail"] == f"The draft is {status}; only an archived draft can be unarchived."
    assert review.get(draft["id"]) == draft


def test_unarchive_is_for_editors(review):
    draft = review.create()
    review.archive(draft["id"])
    body = problem(review.unarchive(draft["id"], role="member"), 403, "FORBIDDEN")
    assert "member" in body["detail"]
    assert review.get(draft["id"])["status"] == "archived"
    assert review.unarchive(draft["id"], role="admin").status_code == 200


def test_another_tenants_or_a_missing_draft_is_404(review, other):
    draft = review.create()
    review.archive(draft["id"])
    for draft_id in (draft["id"], str(uuid.uuid4())):
        problem(other.unarchive(draft_id), 404, "NOT_FOUND")
    assert review.get(draft["id"])["status"] == "archived"
    # Nor can it archive ours in bulk: NOT_FOUND, untouched.
    mine = review.create()
    outcome = other.bulk("archive", [mine["id"]])
    assert outcome["results"][0]["error"]["code"] == "NOT_FOUND"
    assert review.get(mine["id"]) == mine


def test_a_deleted_draft_cannot_be_unarchived(review):
    draft = review.create()
    review.archive(draft["id"])
    review.delete(draft["id"])
    problem(review.unarchive(draft["id"]), 404, "NOT_FOUND")


@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
def test_a_malformed_id_is_400(review, bad_id):
    assert bad_fields(review.unarchive(bad_id)) == ["id"]


def test_without_a_valid_token_is_401(call, org):
    problem(call("drafts.unarchive", {"id": str(uuid.uuid4())}, org=org), 401, "UNAUTHORIZED")
