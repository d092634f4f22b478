"""drafts.addComment and drafts.listComments over REST and RPC: the Comment record, threads one
level deep, resolving and reopening, anchors stamped with the draft's version, @mentions of
members only, every bound, roles, and a second tenant that sees none of it. Comments never move
the draft."""

from __future__ import annotations

import uuid

import pytest

from tests.drafts.review import Review, add_replies, bad_fields
from tests.support.bounds import MALFORMED_IDS
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

review = org_fixture(Review)
other = org_fixture(Review, second=True)

COMMENT_FIELDS = {
    *("id", "draft_id", "parent_id", "author_id", "body", "anchor", "mentions"),
    *("resolved_at", "resolved_by", "created_at"),
}
CONTENT = "<h2>Why</h2><p>Because the sun is free.</p>"
TEXT = "Why\n\nBecause the sun is free."  # the content as text, what anchors count in


def ids(page: dict) -> list[str]:
    return [comment["id"] for comment in page["data"]]


# --- adding -----------------------------------------------------------------------------------


def test_a_comment_on_a_draft(review):
    draft = review.create("Solar", CONTENT)
    comment = review.comment(draft["id"], "  Is the sun really free?\nCite a source.  ")

    assert set(comment) == COMMENT_FIELDS
    assert comment["draft_id"] == draft["id"]
    assert comment["parent_id"] is None
    assert comment["author_id"] == review.users["member"]
    assert comment["body"] == "Is the sun really free?\nCite a source."  # ends trimmed
    assert comment["anchor"] is None and comment["mentions"] == []
    assert comment["resolved_at"] is None and comment["resolved_by"] is None
    assert review.comments(draft["id"]) == {"data": [comment], "total": 1}
    # A comment moves nothing and is no revision.
    assert review.get(draft["id"]) == draft


@pytest.mark.parametrize(
    "body", ["<b>bold</b> & <script>alert(1)</script>", "1 < 2 > 0", "&lt;p&gt; stays"]
)
def test_the_body_is_plain_text_kept_as_typed(review, body):
    draft = review.create()
    assert review.comment(draft["id"], body)["body"] == body
    assert review.comments(draft["id"])["data"][0]["body"] == body


def test_an_anchor_is_stamped_with_the_drafts_current_version(review):
    draft = review.create("Solar", CONTENT)
    review.update(draft["id"], excerpt="Solar power at home.")  # version 2
    start = TEXT.index("the sun")
    anchor = {"quote": "the sun is free", "start": start, "end": start + len("the sun is free")}
    comment = review.comment(draft["id"], "Really?", anchor=anchor)
    assert comment["anchor"] == {**anchor, "version": 2}
    # A zero-width anchor at the very end of the text is a place too.
    end = len(TEXT)
    anchored = review.comment(
        draft["id"], "Add more.", anchor={"quote": ".", "start": end, "end": end}
    )
    assert anchored["anchor"]["end"] == end


def test_mentions_name_members_by_their_user_id(review):
    draft = review.create()
    admin = review.whoami("admin")["user"]
    editor = review.users["editor"]  # a member since it created the draft
    body = (
        f"@{editor}, see this. cc @{admin['id']}: and again @{editor}. "
        "Mail ann@example.com, not a mention."
    )
    comment = review.comment(draft["id"], body)
    # By the identity provider's user id, once each, in order; our own user id names one too.
    assert comment["mentions"] == [editor, review.users["admin"]]
    assert comment["body"] == body


def test_mentioning_someone_who_is_not_a_member_is_400_naming_them(review, other):
    draft = review.create()
    outsider = other.whoami("member")["user"]["idp_user_id"]
    review.whoami("member")
    body = f"@{review.users['member']} and @{outsider} and @nobody-at-all"
    response = review.add_comment(draft["id"], body)
    found = problem(response, 400, "BAD_REQUEST")
    assert f"@{outsider}" in found["detail"] and "@nobody-at-all" in found["detail"]
    assert f"@{review.users['member']}" not in found["detail"]
    assert [error["path"] for error in found["errors"]] == ["body"]
    assert review.comments(draft["id"])["total"] == 0


def test_at_most_20_people_in_one_comment(review):
    draft = review.create()
    body = " ".join(f"@someone{n}" for n in range(21))
    assert bad_fields(review.add_comment(draft["id"], body)) == ["body"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"body": ""}, "body"),
        ({"body": "   \n "}, "body"),
        ({"body": "x" * 5001}, "body"),
        ({"body": "null\x00byte"}, "body"),
        ({"body": "bell\x07"}, "body"),
        ({"body": 42}, "body"),
        ({"anchor": {"quote": "", "start": 0, "end": 1}}, "anchor.quote"),
        ({"anchor": {"quote": "q" * 501, "start": 0, "end": 1}}, "anchor.quote"),
        ({"anchor": {"quote": "q", "start": -1, "end": 1}}, "anchor.start"),
        ({"anchor": {"quote": "q", "start": 5, "end": 4}}, "anchor.end"),
        ({"anchor": {"quote": "q", "start": 0, "end": 1_000_001}}, "anchor.end"),
        ({"anchor": {"quote": "q", "start": 0}}, "anchor.end"),
        ({"anchor": {"quote": "q", "start": 0, "end": 1, "version": 3}}, "anchor.version"),
        ({"parentId": "not-a-uuid"}, "parentId"),
        ({"resolve": True}, "resolve"),
        ({"resolve": "maybe"}, "resolve"),
        ({"authorId": "someone-else"}, "authorId"),
    ],
)
def test_add_comment_refuses_out_of_bounds_input(review, change, field):
    draft = review.create("Solar", CONTENT)
    data = {"body": "A comment.", **change}
    response = review.request("drafts.addComment", {"id": draft["id"], **data}, role="member")
    assert bad_fields(response) == [field]
    assert review.comments(draft["id"])["total"] == 0


def test_an_anchor_past_the_end_of_the_text_is_400(review):
    draft = review.create("Solar", CONTENT)
    length = len(TEXT)
    response = review.add_comment(
        draft["id"], "Here?", anchor={"quote": "x", "start": 0, "end": length + 1}
    )
    assert bad_fields(response) == ["anchor.end"]


def test_the_longest_body_and_quote_are_taken(review):
    draft = review.create("Solar", CONTENT)
    comment = review.comment(
        draft["id"], "x" * 5000, anchor={"quote": "q" * 500, "start": 0, "end": 3}
    )
    assert len(comment["body"]) == 5000 and len(comment["anchor"]["quote"]) == 500


# --- threads ----------------------------------------------------------------------------------


def test_replies_follow_their_thread_and_a_reply_resolves_it(review):
    draft = review.create("Solar", CONTENT)
    first = review.comment(draft["id"], "First thread.")
    second = review.comment(draft["id"], "Second thread.", role="editor")
    reply = review.comment(draft["id"], "A reply.", parentId=first["id"], role="admin")
    assert (reply["parent_id"], reply["author_id"]) == (first["id"], review.users["admin"])
    later = review.comment(draft["id"], "Another reply.", parentId=first["id"])

    page = review.comments(draft["id"])
    assert ids(page) == [first["id"], reply["id"], later["id"], second["id"]]
    assert page["total"] == 2  # threads

    resolving = review.comment(
        draft["id"], "Fixed, thanks.", parentId=second["id"], resolve=True, role="editor"
    )
    assert resolving["parent_id"] == second["id"]
    # A resolved thread is hidden unless asked for, with its resolution on its first comment.
    assert ids(review.comments(draft["id"])) == [first["id"], reply["id"], later["id"]]
    everything = review.comments(draft["id"], includeResolved=True)
    assert everything["total"] == 2
    resolved = everything["data"][3]
    assert resolved["id"] == second["id"]
    assert resolved["resolved_by"] == review.users["editor"]
    assert resolved["resolved_at"] is not None
    assert everything["data"][4]["id"] == resolving["id"]

    # Any other reply reopens the thread.
    review.comment(draft["id"], "Not quite.", parentId=second["id"])
    reopened = review.comments(draft["id"])
    assert reopened["total"] == 2
    assert reopened["data"][3]["id"] == second["id"]
    assert reopened["data"][3]["resolved_at"] is None
    assert reopened["data"][3]["resolved_by"] is None
    # None of it moved the draft.
    assert review.get(draft["id"]) == draft


def test_threads_are_paged_oldest_first(review):
    draft = review.create()
    threads = [review.comment(draft["id"], f"Thread {n}.")["id"] for n in range(5)]
    reply = review.comment(draft["id"], "Reply.", parentId=threads[2])["id"]

    assert ids(review.comments(draft["id"], limit=2)) == threads[:2]
    page = review.comments(draft["id"], limit=2, page=2)
    assert ids(page) == [threads[2], reply, threads[3]]
    assert (page["total"], ids(review.comments(draft["id"], limit=2, page=3))) == (5, threads[4:])
    assert review.comments(draft["id"], page=4, limit=2) == {"data": [], "total": 5}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"page": 0}, "page"),
        ({"page": 100_001}, "page"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"includeResolved": "perhaps"}, "includeResolved"),
    ],
)
def test_list_comments_refuses_out_of_bounds_input(review, query, field):
    draft = review.create()
    response = review.request("drafts.listComments", {"id": draft["id"], **query}, role="member")
    assert bad_fields(response) == [field]


def test_a_reply_to_a_reply_is_400_replies_are_one_level_deep(review):
    draft = review.create()
    thread = review.comment(draft["id"], "Thread.")
    reply = review.comment(draft["id"], "Reply.", parentId=thread["id"])
    response = review.add_comment(draft["id"], "Deeper.", parentId=reply["id"])
    assert bad_fields(response) == ["parentId"]
    response = review.add_comment(
        draft["id"],
        "Anchored reply.",
        parentId=thread["id"],
        anchor={"quote": "q", "start": 0, "end": 0},
    )
    assert bad_fields(response) == ["anchor"]
    assert review.comments(draft["id"])["data"] == [thread, reply]


def test_a_parent_of_another_draft_or_none_at_all_is_404(review):
    draft, elsewhere = review.create("One"), review.create("Two")
    thread = review.comment(elsewhere["id"], "On the other draft.")
    for parent in (thread["id"], str(uuid.uuid4())):
        problem(review.add_comment(draft["id"], "Reply.", parentId=parent), 404, "NOT_FOUND")
    assert review.comments(draft["id"])["total"] == 0


def test_a_thread_holds_at_most_100_replies(review, run):
    draft = review.create()
    thread = review.comment(draft["id"], "Busy thread.")
    add_replies(run, review.tenant_id, draft["id"], thread["id"], 100)
    response = review.add_comment(draft["id"], "One more.", parentId=thread["id"])
    body = problem(response, 409, "CONFLICT")
    assert "100" in body["detail"]
    assert len(review.comments(draft["id"])["data"]) == 101


# --- identity, roles and tenancy --------------------------------------------------------------


def test_a_member_comments_on_drafts_in_any_status(review, run):
    draft = review.create()
    review.archive(draft["id"])
    assert review.comment(draft["id"], "Why archived?")["draft_id"] == draft["id"]
    assert review.get(draft["id"])["status"] == "archived"


@pytest.mark.parametrize("operation", ["drafts.addComment", "drafts.listComments"])
def test_without_a_valid_token_is_401(call, org, operation):
    data = {"id": str(uuid.uuid4()), "body": "Hi."}
    if operation == "drafts.listComments":
        data.pop("body")
    problem(call(operation, data, org=org), 401, "UNAUTHORIZED")
    problem(call(operation, data, token="not-a-jwt", org=org), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
def test_a_malformed_draft_id_is_400(review, bad_id):
    assert bad_fields(review.add_comment(bad_id, "Hi.")) == ["id"]
    response = review.request("drafts.listComments", {"id": bad_id}, role="member")
    assert bad_fields(response) == ["id"]


def test_a_second_tenant_sees_and_reaches_none_of_the_comments(review, other):
    draft = review.create()
    thread = review.comment(draft["id"], "Our secret remark.")
    theirs = other.create()
    for draft_id in (draft["id"], str(uuid.uuid4())):
        problem(other.add_comment(draft_id, "Hello?"), 404, "NOT_FOUND")
        response = other.request("drafts.listComments", {"id": draft_id}, role="member")
        problem(response, 404, "NOT_FOUND")
    # Nor can it reply to our thread from a draft of its own.
    problem(other.add_comment(theirs["id"], "Reply.", parentId=thread["id"]), 404, "NOT_FOUND")
    assert review.comments(draft["id"])["data"] == [thread]
    assert other.comments(theirs["id"]) == {"data": [], "total": 0}


def test_a_deleted_draft_has_no_comments_to_show(review):
    draft = review.create()
    review.comment(draft["id"], "Soon gone.")
    review.delete(draft["id"])
    problem(review.add_comment(draft["id"], "Hello?"), 404, "NOT_FOUND")
    response = review.request("drafts.listComments", {"id": draft["id"]}, role="member")
    problem(response, 404, "NOT_FOUND")
