"""The 13 Drafts operations end to end over real HTTP (REST and RPC): the record and its
creation, every bound, roles and tenancy, list filters, search, stats and publishable, edits
and their revisions (and racing edits), the review state machine, versions and restore, the SEO
score, soft delete and assignment."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import select

from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Database
from tests.drafts.support import Drafts, put_status
from tests.support.bounds import MALFORMED_IDS, PAGE_BOUNDS
from tests.support.openapi import operation_ids
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

# The Draft record: the reference's fields (snake_case, as there) and ours besides.
RECORD_FIELDS = {
    *("id", "tenant_id", "title", "content", "excerpt", "seo_meta", "seo_score", "status"),
    *("job_id", "instance_id", "run_id", "assignee_id", "rejection_reason", "provenance"),
    *("version", "created_at", "updated_at", "approved_at", "published_at"),
    *("approved_by", "published_url", "slug", "auto_publish"),
}
VERSION_SUMMARY_FIELDS = {
    *("version", "author_type", "author_id", "change_summary", "fields_changed"),
    *("seo_score", "created_at"),
}
VERSION_FIELDS = VERSION_SUMMARY_FIELDS | {"title", "content", "excerpt", "seo_meta", "provenance"}
STATUSES = ("generating", "reviewing", "approved", "rejected", "published", "archived")
SEO_CHECKS = {
    "keyword_in_title": 15,
    "keyword_in_intro": 10,
    "keyword_in_headings": 10,
    "title_length": 10,
    "meta_description_length": 10,
    "heading_structure": 10,
    "length": 15,
    "readability": 10,
    "links": 10,
}
DIRTY = (
    '<p onclick="steal()">Hello <strong>bold</strong> and <em>italic</em>, '
    '<a href="javascript:alert(1)">bad link</a>, '
    '<a href="JaVaScRiPt:alert(3)">shouting link</a>, '
    '<a href="https://example.com/guide">good link</a>.</p>'
    "<script>alert(1)</script>"
    '<img src="https://example.com/a.png" onerror="alert(2)" alt="A chart">'
    "<h2>Steps</h2><ul><li>one</li><li>two</li></ul>"
)


drafts = org_fixture(Drafts)
other = org_fixture(Drafts, second=True)  # a second tenant, through the same transport


def bad_fields(response) -> list[str]:
    """The paths a 400 names."""
    body = problem(response, 400, "BAD_REQUEST")
    return [error["path"] for error in body["errors"]]


def conflict(response, detail: str) -> None:
    body = problem(response, 409, "CONFLICT")
    assert body["detail"] == detail, body


def without_score(seo_meta: dict) -> dict:
    return {key: value for key, value in seo_meta.items() if key != "score_breakdown"}


def checks(draft: dict) -> dict[str, dict]:
    return {check["id"]: check for check in draft["seo_meta"]["score_breakdown"]["checks"]}


# --- createDraft and the record ---------------------------------------------------------------


def test_create_draft_starts_in_review_as_version_1_by_its_author(drafts):
    job = drafts.job()
    instance = drafts.instance(job)
    content = "<h2>Why</h2><p>Because the sun is free.</p>"
    draft = drafts.create("Solar panels at home", content, jobId=job, instanceId=instance)

    assert set(draft) == RECORD_FIELDS
    assert draft["tenant_id"] == str(drafts.tenant_id)
    assert (draft["title"], draft["content"], draft["excerpt"]) == (
        "Solar panels at home",
        content,
        None,
    )
    assert (draft["status"], draft["version"]) == ("reviewing", 1)
    assert (draft["job_id"], draft["instance_id"], draft["run_id"]) == (job, instance, None)
    assert draft["assignee_id"] is None and draft["rejection_reason"] is None
    assert draft["approved_at"] is None and draft["published_at"] is None
    assert draft["provenance"] == {}
    assert set(draft["seo_meta"]) == {"score_breakdown"}
    assert draft["seo_score"] == draft["seo_meta"]["score_breakdown"]["total"]
    assert drafts.get(draft["id"]) == draft

    versions = drafts.versions(draft["id"])
    assert versions["total"] == 1
    [first] = versions["data"]
    assert set(first) == VERSION_SUMMARY_FIELDS
    assert first["version"] == 1
    assert (first["author_type"], first["author_id"]) == ("human", drafts.users["editor"])
    assert first["change_summary"] == "Created"
    assert first["fields_changed"] == ["title", "content"]
    assert first["seo_score"] == draft["seo_score"]

    stored = drafts.version(draft["id"], 1)
    assert set(stored) == VERSION_FIELDS
    assert (stored["title"], stored["content"], stored["excerpt"]) == (
        draft["title"],
        content,
        None,
    )
    assert stored["seo_meta"] == draft["seo_meta"]
    assert stored["provenance"] is None  # a person wrote it


@pytest.mark.parametrize("content", [None, "", "   ", "<script>alert(1)</script>"])
def test_content_defaults_to_an_empty_paragraph(drafts, content):
    draft = drafts.create("Empty", content)
    assert draft["content"] == "<p></p>"
    assert drafts.version(draft["id"], 1)["content"] == "<p></p>"


@pytest.mark.own_org
@pytest.mark.parametrize("how", ["createDraft", "update"])
def test_content_is_sanitized_on_every_write(drafts, how):
    if how == "createDraft":
        draft = drafts.create("Dirty", DIRTY)
    else:
        draft = drafts.update(drafts.create("Clean", "<p>Clean.</p>")["id"], content=DIRTY)
        assert draft["version"] == 2

    content = draft["content"]
    for gone in ("<script", "alert(", "onclick", "onerror", "steal()", "javascript:", "JaVaScRiPt"):
        assert gone not in content, (gone, content)
    # What an article needs is kept: formatting, headings, lists, the safe link and image.
    for kept in (
        "<strong>bold</strong>",
        "<em>italic</em>",
        "<h2>Steps</h2>",
        "<ul><li>one</li><li>two</li></ul>",
        'href="https://example.com/guide"',
        'rel="noopener noreferrer"',
        'src="https://example.com/a.png"',
        'alt="A chart"',
        "bad link",  # the text of a link that lost its href stays
    ):
        assert kept in content, (kept, content)
    assert drafts.get(draft["id"])["content"] == content
    assert drafts.version(draft["id"], draft["version"])["content"] == content
    # Nothing removed is searchable.
    assert drafts.list(search="alert")["total"] == 0
    assert drafts.list(search="bold and italic")["total"] == 1


# --- bounds and enums -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "field"),
    [
        *PAGE_BOUNDS,
        ({"status": "draft"}, "status"),
        ({"status": "deleted"}, "status"),
        ({"jobId": "not-a-uuid"}, "jobId"),
    ],
)
def test_list_refuses_out_of_bounds_and_unknown_values(drafts, query, field):
    drafts.create()
    assert bad_fields(drafts.request("drafts.list", query, role="member")) == [field]


@pytest.mark.own_org
def test_list_accepts_its_bounds_and_has_defaults(drafts):
    assert drafts.list() == {"data": [], "total": 0}
    draft = drafts.create("Only one")
    for query in ({"limit": 1}, {"limit": 100}, {"page": 1, "limit": 20}, {"search": "ONLY one"}):
        assert drafts.list(**query) == {"data": [draft], "total": 1}, query
    assert drafts.list(page=1000) == {"data": [], "total": 1}
    assert drafts.list(search="x" * 255) == {"data": [], "total": 0}
    for status in STATUSES:
        expected = [draft] if status == "reviewing" else []
        assert drafts.list(status=status)["data"] == expected, status
    assert drafts.list(jobId=str(uuid.uuid4()))["total"] == 0


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"title": ""}, "title"),
        ({"title": "x" * 501}, "title"),
        ({"title": None}, "title"),
        ({}, "title"),
        ({"title": "Fine", "content": "x" * 1_000_001}, "content"),
        ({"title": "Fine", "jobId": "not-a-uuid"}, "jobId"),
        ({"title": "Fine", "instanceId": "12345"}, "instanceId"),
        ({"title": "Fine", "status": "approved"}, "status"),
        ({"title": "Fine", "excerpt": "Not a create field."}, "excerpt"),
    ],
)
def test_create_refuses_out_of_bounds_and_unknown_fields(drafts, data, field):
    assert bad_fields(drafts.request("drafts.createDraft", data)) == [field]
    assert drafts.list()["total"] == 0


@pytest.mark.own_org
def test_create_accepts_the_longest_title_and_content(drafts):
    title = "t" * 500
    content = "<p>" + "a" * (1_000_000 - len("<p></p>")) + "</p>"
    assert len(content) == 1_000_000
    draft = drafts.create(title, content)
    assert (draft["title"], draft["content"]) == (title, content)
    assert drafts.list(search="aaaa")["total"] == 1


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"title": ""}, "title"),
        ({"title": "x" * 501}, "title"),
        ({"excerpt": "x" * 1001}, "excerpt"),
        ({"content": "x" * 1_000_001}, "content"),
        ({"seo_meta": {"notes": "x" * 20_001}}, "seo_meta"),
        # REST names the field, RPC the alias sent (reported: the transports differ here).
        ({"seoMeta": {"notes": "x" * 20_001}}, ("seo_meta", "seoMeta")),
        ({"seo_meta": "solar"}, "seo_meta"),
        ({"seo_meta": {"seo_title": 5}}, "seo_meta.seo_title"),
        ({"seo_meta": {"meta_description": ["a"]}}, "seo_meta.meta_description"),
        ({"seo_meta": {"slug": {"a": 1}}}, "seo_meta.slug"),
        ({"seo_meta": {"focus_keywords": "solar"}}, "seo_meta.focus_keywords"),
        ({"seo_meta": {"focus_keywords": ["solar", 1]}}, "seo_meta.focus_keywords"),
        ({"expectedVersion": -1}, "expectedVersion"),
        ({"status": "approved"}, "status"),
        ({"assigneeId": "someone"}, "assigneeId"),
    ],
)
def test_update_refuses_out_of_bounds_input_and_changes_nothing(drafts, data, field):
    draft = drafts.create("Untouched", "<p>Untouched.</p>")
    [path] = bad_fields(drafts.request("drafts.update", {"id": draft["id"], **data}))
    assert path in ((field,) if isinstance(field, str) else field)
    assert drafts.get(draft["id"]) == draft
    assert drafts.versions(draft["id"])["total"] == 1


def test_update_accepts_its_bounds(drafts):
    draft = drafts.create()
    title, excerpt = "t" * 500, "e" * 1000
    notes = "n" * 19_900  # under 20,000 bytes of JSON with the key
    updated = drafts.update(draft["id"], title=title, excerpt=excerpt, seo_meta={"notes": notes})
    assert (updated["title"], updated["excerpt"]) == (title, excerpt)
    assert updated["seo_meta"]["notes"] == notes
    assert updated["version"] == 2


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({}, "reason"),
        ({"reason": None}, "reason"),
        ({"reason": ""}, "reason"),
        ({"reason": "   \n\t "}, "reason"),
        ({"reason": "x" * 2001}, "reason"),
        ({"reason": "Weak.", "note": "extra"}, "note"),
    ],
)
def test_reject_needs_a_reason_of_at_most_2000_characters(drafts, data, field):
    draft = drafts.create()
    assert bad_fields(drafts.request("drafts.reject", {"id": draft["id"], **data})) == [field]
    assert drafts.get(draft["id"]) == draft


def test_reject_accepts_2000_characters_and_trims_the_reason(drafts):
    long_reason = "r" * 2000
    assert drafts.reject(drafts.create()["id"], long_reason)["rejection_reason"] == long_reason
    trimmed = drafts.reject(drafts.create()["id"], "  Needs sources.\n")
    assert trimmed["rejection_reason"] == "Needs sources."


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({}, "assigneeId"),
        ({"assigneeId": ""}, "assigneeId"),
        ({"assigneeId": "x" * 256}, "assigneeId"),
        ({"assigneeId": 42}, "assigneeId"),
        ({"assigneeId": "member", "role": "admin"}, "role"),
    ],
)
def test_assign_refuses_out_of_bounds_input(drafts, data, field):
    draft = drafts.create()
    assert bad_fields(drafts.request("drafts.assign", {"id": draft["id"], **data})) == [field]
    assert drafts.get(draft["id"])["assignee_id"] is None


@pytest.mark.parametrize(
    ("operation", "data", "field"),
    [
        ("drafts.listVersions", {"page": 0}, "page"),
        ("drafts.listVersions", {"limit": 0}, "limit"),
        ("drafts.listVersions", {"limit": 101}, "limit"),
        ("drafts.getVersion", {"version": 0}, "version"),
        ("drafts.getVersion", {"version": -1}, "version"),
        ("drafts.getVersion", {"version": "one"}, "version"),
        ("drafts.restoreVersion", {"version": 0}, "version"),
        ("drafts.restoreVersion", {"version": 1, "expectedVersion": -1}, "expectedVersion"),
        ("drafts.restoreVersion", {"version": 1, "title": "x"}, "title"),
    ],
)
def test_version_operations_refuse_out_of_bounds_input(drafts, operation, data, field):
    draft = drafts.create()
    assert bad_fields(drafts.request(operation, {"id": draft["id"], **data})) == [field]
    assert drafts.get(draft["id"]) == draft


# Each operation on one draft, with the rest of a valid input.
ID_OPERATIONS = {
    "drafts.getById": {},
    "drafts.update": {"title": "Changed"},
    "drafts.delete": {},
    "drafts.approve": {},
    "drafts.reject": {"reason": "No."},
    "drafts.assign": {"assigneeId": "someone"},
    "drafts.listVersions": {},
    "drafts.getVersion": {"version": 1},
    "drafts.restoreVersion": {"version": 1},
    "drafts.publish": {},
    "drafts.listPublishAttempts": {},
}


@pytest.mark.parametrize("operation", sorted(ID_OPERATIONS))
@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
def test_malformed_id_is_400_naming_the_id(drafts, operation, bad_id):
    data = {"id": bad_id, **ID_OPERATIONS[operation]}
    assert bad_fields(drafts.request(operation, data, role="admin")) == ["id"]


@pytest.mark.parametrize("operation", sorted(ID_OPERATIONS))
def test_unknown_id_is_404(drafts, operation):
    drafts.create()
    data = {"id": str(uuid.uuid4()), **ID_OPERATIONS[operation]}
    problem(drafts.request(operation, data, role="admin"), 404, "NOT_FOUND")


@pytest.mark.parametrize("operation", ["drafts.getVersion", "drafts.restoreVersion"])
def test_unknown_version_is_404(drafts, operation):
    draft = drafts.create()
    body = problem(
        drafts.request(operation, {"id": draft["id"], "version": 2}, role="admin"),
        404,
        "NOT_FOUND",
    )
    assert "version 2" in body["detail"]
    assert drafts.get(draft["id"]) == draft


# --- identity, roles and tenancy --------------------------------------------------------------


def all_inputs(draft_id: str) -> dict[str, dict]:
    """A valid input for each of the 22 operations."""
    return {
        "drafts.list": {},
        "drafts.getStats": {},
        "drafts.publishable": {},
        "drafts.createDraft": {"title": "New"},
        "drafts.bulk": {"action": "approve", "draftIds": [draft_id]},
        **{op: {"id": draft_id, **extra} for op, extra in ID_OPERATIONS.items()},
        "drafts.archive": {"id": draft_id},
        "drafts.unarchive": {"id": draft_id},
        "drafts.unpublish": {"id": draft_id},
        "drafts.compareVersions": {"id": draft_id, "from": 1},
        "drafts.listComments": {"id": draft_id},
        "drafts.addComment": {"id": draft_id, "body": "Looks good."},
    }


ALL_OPERATIONS = sorted(all_inputs("id"))
EDITOR_OPERATIONS = {
    "drafts.createDraft",
    "drafts.update",
    "drafts.approve",
    "drafts.reject",
    "drafts.assign",
    "drafts.restoreVersion",
    "drafts.publish",
    "drafts.archive",
    "drafts.unarchive",
    "drafts.unpublish",
    "drafts.bulk",
}
ADMIN_OPERATIONS = {"drafts.delete"}


def test_there_are_22_drafts_operations(openapi_document):
    found = operation_ids(openapi_document, "drafts.")
    assert found == set(ALL_OPERATIONS)
    assert len(found) == 22


@pytest.mark.parametrize("operation", ALL_OPERATIONS)
def test_without_a_valid_token_is_401(call, org, operation):
    data = all_inputs(str(uuid.uuid4()))[operation]
    problem(call(operation, data, org=org), 401, "UNAUTHORIZED")
    problem(call(operation, data, token="not-a-jwt", org=org), 401, "UNAUTHORIZED")


@pytest.mark.own_org
def test_each_role_is_refused_what_it_may_not_do(drafts):
    draft = drafts.create()
    drafts.whoami("member")
    inputs = all_inputs(draft["id"])
    inputs["drafts.assign"]["assigneeId"] = drafts.users["member"]
    for operation in sorted(EDITOR_OPERATIONS | ADMIN_OPERATIONS):
        body = problem(
            drafts.request(operation, inputs[operation], role="member"), 403, "FORBIDDEN"
        )
        assert "member" in body["detail"], body
    body = problem(drafts.request("drafts.delete", inputs["drafts.delete"]), 403, "FORBIDDEN")
    assert "admin" in body["detail"], body

    # Nothing happened, and a member still reads everything.
    assert drafts.get(draft["id"]) == draft
    assert drafts.list() == {"data": [draft], "total": 1}
    assert drafts.stats()["byStatus"]["reviewing"] == 1
    assert drafts.versions(draft["id"])["total"] == 1
    assert drafts.version(draft["id"], 1)["title"] == draft["title"]
    assert drafts.publishable() == []

    # An editor does the editor's part, an admin deletes.
    assert drafts.request("drafts.assign", inputs["drafts.assign"]).status_code == 200
    assert drafts.update(draft["id"], title="Edited")["version"] == 2
    assert drafts.restore(draft["id"], 1)["title"] == draft["title"]
    assert drafts.approve(draft["id"])["status"] == "approved"
    assert drafts.create("Second")["status"] == "reviewing"
    assert drafts.delete(draft["id"]) == {"success": True}


@pytest.mark.own_org
def test_create_draft_names_only_jobs_and_instances_of_its_organization(drafts, other):
    job, their_job = drafts.job(), other.job()
    instance = drafts.instance(job)

    # An instance alone names its job too.
    assert drafts.create("By instance", instanceId=instance)["job_id"] == job
    for link in (
        {"jobId": their_job},
        {"jobId": str(uuid.uuid4())},
        {"instanceId": other.instance(their_job)},
        {"instanceId": str(uuid.uuid4())},
    ):
        problem(drafts.request("drafts.createDraft", {"title": "Linked", **link}), 404, "NOT_FOUND")
    mismatch = {"title": "Linked", "jobId": drafts.job("Another"), "instanceId": instance}
    body = problem(drafts.request("drafts.createDraft", mismatch), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["instanceId"]
    assert drafts.titles() == ["By instance"]


@pytest.mark.own_org
def test_a_second_tenant_sees_nothing_of_the_first_tenants_drafts(drafts, other):
    job = drafts.job()
    secret = drafts.create("Secret plan", "<p>The secret is smoked paprika.</p>", jobId=job)
    approved = drafts.approve(drafts.create("Approved plan", jobId=job)["id"])
    rejected = drafts.reject(drafts.create("Rejected plan")["id"])
    theirs = other.create("Their own")
    other.whoami("member")

    for draft in (secret, approved, rejected):
        for operation, extra in ID_OPERATIONS.items():
            data = {"id": draft["id"], **extra}
            if operation == "drafts.assign":  # even naming a member of their own
                data["assigneeId"] = other.users["member"]
            problem(other.request(operation, data, role="admin"), 404, "NOT_FOUND")

    assert other.list() == {"data": [theirs], "total": 1}
    for query in (
        {"search": "paprika"},
        {"search": "plan"},
        {"jobId": job},
        {"status": "approved"},
    ):
        assert other.list(**query) == {"data": [], "total": 0}, query
    assert other.stats() == {
        "total": 1,
        "byStatus": {status: int(status == "reviewing") for status in STATUSES},
    }
    assert other.publishable() == []

    # The first tenant's drafts are untouched, and it cannot see the second's either.
    assert drafts.get(secret["id"]) == secret
    assert drafts.get(approved["id"]) == approved
    assert drafts.get(rejected["id"]) == rejected
    assert drafts.versions(secret["id"])["total"] == 1
    assert drafts.stats()["total"] == 3
    problem(drafts.request("drafts.getById", {"id": theirs["id"]}), 404, "NOT_FOUND")
    assert other.get(theirs["id"]) == theirs


def test_only_a_member_of_this_organization_can_be_assigned(drafts, other):
    draft = drafts.create()
    theirs = other.create()
    outsider = other.whoami("member")  # a member of the other organization only
    drafts.whoami("member")
    for assignee in (
        outsider["user"]["idp_user_id"],
        outsider["user"]["id"],  # our user id of that user
        "nobody-at-all",
        str(uuid.uuid4()),
    ):
        response = drafts.request("drafts.assign", {"id": draft["id"], "assigneeId": assignee})
        assert bad_fields(response) == ["assigneeId"], assignee
    # Nor can the other organization assign this one's member to its own draft.
    response = other.request(
        "drafts.assign", {"id": theirs["id"], "assigneeId": drafts.users["member"]}
    )
    assert bad_fields(response) == ["assigneeId"]
    assert drafts.get(draft["id"]) == draft
    assert other.get(theirs["id"]) == theirs


# --- list, search, stats and publishable ------------------------------------------------------


@pytest.mark.own_org
def test_list_is_newest_first_paginated_and_filtered(drafts):
    job = drafts.job()
    first = drafts.create("First", jobId=job)
    second = drafts.create("Second")
    third = drafts.create("Third", jobId=job)
    fourth = drafts.create("Fourth")

    assert drafts.titles() == ["Fourth", "Third", "Second", "First"]
    assert drafts.list()["total"] == 4
    assert drafts.list(limit=3) == {"data": [fourth, third, second], "total": 4}
    assert drafts.list(limit=3, page=2) == {"data": [first], "total": 4}
    assert drafts.list(limit=3, page=3) == {"data": [], "total": 4}
    assert drafts.list(jobId=job) == {"data": [third, first], "total": 2}

    drafts.approve(second["id"])
    drafts.reject(fourth["id"])
    assert drafts.titles(status="approved") == ["Second"]
    assert drafts.titles(status="rejected") == ["Fourth"]
    assert drafts.titles(status="reviewing") == ["Third", "First"]
    assert drafts.list(status="reviewing", jobId=job, limit=1) == {"data": [third], "total": 2}
    assert drafts.list(status="approved", jobId=job)["total"] == 0
    # An edit moves a draft between statuses, not in the order.
    drafts.update(first["id"], title="First, edited")
    assert drafts.titles() == ["Fourth", "Third", "Second", "First, edited"]


@pytest.mark.own_org
def test_search_matches_the_title_and_the_text_of_the_content_ignoring_case(drafts):
    drafts.create("Quarterly report", "<p>Revenue grew in <strong>Paris</strong> and Lyon.</p>")
    drafts.create(
        "Meeting notes",
        '<p>We talked about <em>solar</em> <a href="https://example.com/secret-url">panels</a>.</p>',
    )
    drafts.create("Été à Paris", "<p>Un <b>ÉTÉ</b> chaud.</p>")
    drafts.create("Discount", "<p>Save 100% today on snake_case names.</p>")
    drafts.create("Other discount", "<p>Save 1000 dollars today on snakeXcase names.</p>")

    assert drafts.titles(search="QUARTERLY") == ["Quarterly report"]
    assert drafts.titles(search="paris") == ["Été à Paris", "Quarterly report"]
    assert drafts.titles(search="Lyon.") == ["Quarterly report"]
    # The text as a reader sees it, across tags; never the markup.
    assert drafts.titles(search="solar panels") == ["Meeting notes"]
    assert drafts.titles(search="about solar") == ["Meeting notes"]
    for markup in ("strong", "<p>", "href", "secret-url", "example.com", "em>"):
        assert drafts.titles(search=markup) == [], markup
    # Case beyond ASCII, in the title and in the text.
    assert drafts.titles(search="été") == ["Été à Paris"]
    assert drafts.titles(search="un été CHAUD") == ["Été à Paris"]
    # LIKE's wildcards are plain characters.
    assert drafts.titles(search="100%") == ["Discount"]
    assert drafts.titles(search="snake_case") == ["Discount"]
    assert drafts.titles(search="%") == ["Discount"]
    # Search combines with the other filters and counts what it matched.
    assert drafts.list(search="save", limit=1)["total"] == 2
    assert drafts.list(search="save", status="approved")["total"] == 0


@pytest.mark.own_org
def test_search_sees_the_latest_content(drafts):
    draft = drafts.create("Notes", "<p>Apples.</p>")
    drafts.update(draft["id"], content="<p>Oranges.</p>")
    assert drafts.list(search="apples")["total"] == 0
    assert drafts.titles(search="oranges") == ["Notes"]


@pytest.mark.own_org
def test_stats_count_every_status_and_leave_deleted_drafts_out(drafts, run):
    assert drafts.stats() == {"total": 0, "byStatus": {status: 0 for status in STATUSES}}
    made = [drafts.create(f"Draft {n}")["id"] for n in range(7)]
    drafts.approve(made[0])
    drafts.approve(made[1])
    drafts.reject(made[2])
    put_status(run, made[3], "archived")
    put_status(run, made[4], "published")
    drafts.delete(made[1])
    drafts.delete(made[5])
    assert drafts.stats() == {
        "total": 5,
        "byStatus": {
            "generating": 0,
            "reviewing": 1,
            "approved": 1,
            "rejected": 1,
            "published": 1,
            "archived": 1,
        },
    }
    assert drafts.list()["total"] == 5


@pytest.mark.own_org
def test_publishable_lists_approved_drafts_most_recently_approved_first(drafts, run):
    a, b, c, d, e = (drafts.create(title)["id"] for title in "ABCDE")
    drafts.approve(b)
    drafts.approve(a)
    drafts.approve(e)
    drafts.reject(c)
    put_status(run, d, "published")
    assert [draft["title"] for draft in drafts.publishable()] == ["E", "A", "B"]
    assert drafts.publishable()[1] == drafts.get(a)

    drafts.update(a, title="A, edited")  # back to review: it needs approving again
    drafts.delete(e)
    assert [draft["title"] for draft in drafts.publishable()] == ["B"]


# --- update and revisions ---------------------------------------------------------------------


def test_each_change_is_a_revision_by_its_author(drafts):
    draft = drafts.create("Title one", "<p>Body one.</p>")
    one = drafts.update(draft["id"], title="Title two")
    assert (one["title"], one["content"], one["version"]) == ("Title two", "<p>Body one.</p>", 2)
    assert one["status"] == "reviewing"
    assert one["updated_at"] > draft["updated_at"]
    assert drafts.get(draft["id"]) == one

    response = drafts.request(
        "drafts.update",
        {"id": draft["id"], "content": "<p>Body two.</p>", "excerpt": "Short."},
        role="admin",
    )
    assert response.status_code == 200, response.text
    two = response.json()
    assert (two["content"], two["excerpt"], two["version"]) == ("<p>Body two.</p>", "Short.", 3)
    three = drafts.update(draft["id"], seo_meta={"slug": "title-two"})
    assert three["version"] == 4

    versions = drafts.versions(draft["id"])
    assert versions["total"] == 4
    summaries = [
        (v["version"], v["author_id"], v["fields_changed"], v["change_summary"])
        for v in versions["data"]
    ]
    editor, admin = drafts.users["editor"], drafts.users["admin"]
    assert summaries == [
        (4, editor, ["seo_meta"], "Edited the SEO metadata"),
        (3, admin, ["content", "excerpt"], "Edited the content and excerpt"),
        (2, editor, ["title"], "Edited the title"),
        (1, editor, ["title", "content"], "Created"),
    ]
    assert {v["author_type"] for v in versions["data"]} == {"human"}
    times = [v["created_at"] for v in versions["data"]]
    assert times == sorted(times, reverse=True)

    # Each version holds the whole draft as that change left it.
    stored = [drafts.version(draft["id"], n) for n in (1, 2, 3, 4)]
    assert [(v["title"], v["content"], v["excerpt"]) for v in stored] == [
        ("Title one", "<p>Body one.</p>", None),
        ("Title two", "<p>Body one.</p>", None),
        ("Title two", "<p>Body two.</p>", "Short."),
        ("Title two", "<p>Body two.</p>", "Short."),
    ]
    assert without_score(stored[3]["seo_meta"]) == {"slug": "title-two"}
    assert without_score(stored[2]["seo_meta"]) == {}


def test_an_edit_that_changes_nothing_stores_no_revision(drafts):
    draft = drafts.create("Same", "<p>Same.</p>")
    for changes in (
        {},
        {"title": "Same"},
        {"content": "<p>Same.</p>"},
        {"title": "Same", "content": "  <p>Same.</p>\n"},
        {"content": "<p>Same.</p><script>alert(1)</script>"},  # the same once sanitized
        {"seo_meta": {}},
        {"seo_meta": {"slug": None}},  # removing a key it does not have
        {"seo_meta": {"score_breakdown": {"total": 100}}},  # the service's own
    ):
        assert drafts.update(draft["id"], **changes) == draft, changes
    assert drafts.versions(draft["id"])["total"] == 1

    # An approved draft edited without a change keeps its approval.
    approved = drafts.approve(draft["id"])
    assert drafts.update(draft["id"], title="Same") == approved
    assert drafts.get(draft["id"])["status"] == "approved"


def test_seo_meta_is_merged_and_a_null_removes_a_key(drafts):
    draft = drafts.create("Solar at home")
    meta = {
        "seo_title": "Solar panels at home",
        "slug": "solar",
        "focus_keywords": ["solar"],
        "custom": {"nested": [1, 2]},
    }
    updated = drafts.update(draft["id"], seo_meta=meta)
    assert without_score(updated["seo_meta"]) == meta

    # `seoMeta` is accepted too; untouched keys stay, null removes one.
    updated = drafts.update(draft["id"], seoMeta={"slug": None, "meta_description": "About."})
    assert without_score(updated["seo_meta"]) == {
        "seo_title": "Solar panels at home",
        "focus_keywords": ["solar"],
        "custom": {"nested": [1, 2]},
        "meta_description": "About.",
    }
    assert updated["version"] == 3

    # score_breakdown cannot be set: it is recomputed.
    faked = {"total": 100, "checks": []}
    updated = drafts.update(draft["id"], seo_meta={"score_breakdown": faked, "custom": "plain"})
    assert updated["seo_meta"]["custom"] == "plain"
    breakdown = updated["seo_meta"]["score_breakdown"]
    assert breakdown != faked and len(breakdown["checks"]) == len(SEO_CHECKS)
    assert breakdown["total"] == updated["seo_score"] < 100
    assert drafts.get(draft["id"]) == updated


def test_expected_version_refuses_an_edit_based_on_an_old_version(drafts):
    draft = drafts.create("One")
    two = drafts.update(draft["id"], title="Two", expectedVersion=1)
    assert two["version"] == 2

    for operation, data in (
        ("drafts.update", {"title": "Three", "expectedVersion": 1}),
        ("drafts.update", {"title": "Three", "expectedVersion": 0}),
        ("drafts.update", {"title": "Three", "expectedVersion": 3}),
        ("drafts.restoreVersion", {"version": 1, "expectedVersion": 1}),
    ):
        body = problem(drafts.request(operation, {"id": draft["id"], **data}), 409, "CONFLICT")
        assert "version 2" in body["detail"], body
    assert drafts.get(draft["id"]) == two
    assert drafts.versions(draft["id"])["total"] == 2

    assert drafts.update(draft["id"], title="Three", expectedVersion=2)["version"] == 3
    assert drafts.restore(draft["id"], 1, expectedVersion=3)["version"] == 4


def test_racing_edits_based_on_one_version_let_exactly_one_through(drafts):
    draft = drafts.create("Start")

    def edit(n: int):
        data = {"id": draft["id"], "title": f"Edit {n}", "expectedVersion": 1}
        return drafts.request("drafts.update", data)

    with ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(edit, range(6)))
    assert sorted(r.status_code for r in responses) == [200] + [409] * 5
    [winner] = [r.json() for r in responses if r.status_code == 200]
    assert winner["version"] == 2
    assert drafts.get(draft["id"]) == winner
    assert drafts.versions(draft["id"])["total"] == 2


def test_racing_edits_are_serialized_into_one_version_each(drafts):
    draft = drafts.create("Start")

    def edit(n: int):
        return drafts.request("drafts.update", {"id": draft["id"], "title": f"Edit {n}"})

    with ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(edit, range(6)))
    assert [r.status_code for r in responses] == [200] * 6, [r.text for r in responses]
    assert sorted(r.json()["version"] for r in responses) == [2, 3, 4, 5, 6, 7]
    versions = drafts.versions(draft["id"])["data"]
    assert [v["version"] for v in versions] == [7, 6, 5, 4, 3, 2, 1]
    assert drafts.get(draft["id"])["title"] == drafts.version(draft["id"], 7)["title"]


# --- the review state machine -----------------------------------------------------------------


def test_approve_and_reject_a_draft_in_review(drafts):
    draft = drafts.create()
    approved = drafts.approve(draft["id"])
    assert approved["status"] == "approved"
    assert approved["approved_at"] is not None
    assert approved["approved_by"] == drafts.users["editor"]
    assert approved["rejection_reason"] is None
    assert approved["version"] == 1  # a review is not a revision
    assert drafts.get(draft["id"]) == approved
    assert drafts.versions(draft["id"])["total"] == 1

    other = drafts.create()
    rejected = drafts.reject(other["id"], "Cite your sources.")
    assert rejected["status"] == "rejected"
    assert rejected["rejection_reason"] == "Cite your sources."
    assert rejected["approved_at"] is None and rejected["version"] == 1
    assert drafts.get(other["id"]) == rejected


def test_moves_the_state_machine_forbids_are_409_naming_the_status(drafts):
    approved = drafts.approve(drafts.create()["id"])
    rejected = drafts.reject(drafts.create()["id"], "Too thin.")
    for draft in (approved, rejected):
        status = draft["status"]
        conflict(
            drafts.request("drafts.approve", {"id": draft["id"]}),
            f"The draft is {status}; it cannot be approved.",
        )
        conflict(
            drafts.request("drafts.reject", {"id": draft["id"], "reason": "Again."}),
            f"The draft is {status}; it cannot be rejected.",
        )
        assert drafts.get(draft["id"]) == draft


@pytest.mark.own_org
def test_an_edit_sends_rejected_and_approved_drafts_back_to_review(drafts):
    rejected = drafts.reject(drafts.create("Thin")["id"], "Too thin.")
    edited = drafts.update(rejected["id"], content="<p>Much more to say now.</p>")
    assert (edited["status"], edited["version"]) == ("reviewing", 2)
    # The reason stays for the writer until the draft is approved.
    assert edited["rejection_reason"] == "Too thin."
    approved = drafts.approve(rejected["id"])
    assert approved["rejection_reason"] is None

    edited = drafts.update(approved["id"], title="Thick")
    assert (edited["status"], edited["approved_at"], edited["version"]) == ("reviewing", None, 3)
    assert edited["approved_by"] is None
    assert drafts.publishable() == []
    # It needs approving again, and can be rejected now.
    assert drafts.reject(approved["id"], "Title is off.")["status"] == "rejected"


@pytest.mark.parametrize("start", ["approved", "rejected"])
def test_restoring_a_version_sends_the_draft_back_to_review(drafts, start):
    draft = drafts.create("Original")
    drafts.update(draft["id"], title="Changed")
    if start == "approved":
        drafts.approve(draft["id"])
    else:
        drafts.reject(draft["id"], "Worse.")
    restored = drafts.restore(draft["id"], 1)
    assert (restored["status"], restored["approved_at"]) == ("reviewing", None)
    assert (restored["title"], restored["version"]) == ("Original", 3)
    assert drafts.get(draft["id"]) == restored


@pytest.mark.parametrize("status", ["generating", "archived"])
def test_generating_and_archived_drafts_cannot_be_edited_or_reviewed(drafts, run, status):
    draft = drafts.create("Frozen", "<p>Frozen.</p>")
    put_status(run, draft["id"], status)
    frozen = drafts.get(draft["id"])
    assert frozen["status"] == status
    edited = f"The draft is {status}; it cannot be edited."
    conflict(drafts.request("drafts.update", {"id": draft["id"], "title": "Thawed"}), edited)
    conflict(drafts.request("drafts.update", {"id": draft["id"], "title": "Frozen"}), edited)
    conflict(drafts.request("drafts.restoreVersion", {"id": draft["id"], "version": 1}), edited)
    conflict(
        drafts.request("drafts.approve", {"id": draft["id"]}),
        f"The draft is {status}; it cannot be approved.",
    )
    conflict(
        drafts.request("drafts.reject", {"id": draft["id"], "reason": "No."}),
        f"The draft is {status}; it cannot be rejected.",
    )
    assert drafts.get(draft["id"]) == frozen
    assert drafts.versions(draft["id"])["total"] == 1


@pytest.mark.own_org
def test_a_published_draft_stays_published_when_edited(drafts, run):
    draft = drafts.create("Live", "<p>Live.</p>")
    drafts.approve(draft["id"])
    put_status(run, draft["id"], "published", published_at=Draft.approved_at)
    published = drafts.get(draft["id"])
    assert published["status"] == "published" and published["published_at"] is not None

    conflict(
        drafts.request("drafts.approve", {"id": draft["id"]}),
        "The draft is published; it cannot be approved.",
    )
    conflict(
        drafts.request("drafts.reject", {"id": draft["id"], "reason": "No."}),
        "The draft is published; it cannot be rejected.",
    )
    assert drafts.get(draft["id"]) == published

    edited = drafts.update(draft["id"], content="<p>Live, corrected.</p>")
    assert (edited["status"], edited["version"]) == ("published", 2)
    assert edited["published_at"] == published["published_at"]
    assert edited["approved_at"] == published["approved_at"]
    restored = drafts.restore(draft["id"], 1)
    assert (restored["status"], restored["content"]) == ("published", "<p>Live.</p>")
    assert drafts.publishable() == []


# --- versions and restore ---------------------------------------------------------------------


def test_versions_are_newest_first_and_paginated(drafts):
    draft = drafts.create("v1")
    for n in range(2, 6):
        drafts.update(draft["id"], title=f"v{n}")
    assert [v["version"] for v in drafts.versions(draft["id"])["data"]] == [5, 4, 3, 2, 1]
    pages = [drafts.versions(draft["id"], limit=2, page=page) for page in (1, 2, 3, 4)]
    assert [[v["version"] for v in p["data"]] for p in pages] == [[5, 4], [3, 2], [1], []]
    assert {p["total"] for p in pages} == {5}
    assert drafts.versions(draft["id"], limit=100)["total"] == 5
    assert [drafts.version(draft["id"], n)["title"] for n in (1, 3, 5)] == ["v1", "v3", "v5"]
    problem(
        drafts.request("drafts.getVersion", {"id": draft["id"], "version": 6}),
        404,
        "NOT_FOUND",
    )


def test_restoring_version_1_brings_its_content_back_as_a_new_version(drafts):
    draft = drafts.create("Original title", "<p>Original body.</p>")
    changed = drafts.update(
        draft["id"],
        title="New title",
        content="<h2>New</h2><p>New body.</p>",
        excerpt="New excerpt.",
        seo_meta={"slug": "new", "focus_keywords": ["body"]},
    )
    restored = drafts.restore(draft["id"], 1)
    assert restored["version"] == 3
    assert (restored["title"], restored["content"], restored["excerpt"]) == (
        "Original title",
        "<p>Original body.</p>",
        None,
    )
    assert restored["seo_meta"] == draft["seo_meta"]
    assert restored["seo_score"] == draft["seo_score"]
    assert drafts.get(draft["id"]) == restored

    latest = drafts.versions(draft["id"])["data"][0]
    assert latest["version"] == 3
    assert (latest["author_type"], latest["author_id"]) == ("human", drafts.users["editor"])
    assert latest["change_summary"] == "Restored version 1"
    assert latest["fields_changed"] == ["title", "content", "excerpt", "seo_meta"]
    # History is kept: version 2 is still there to go back to.
    assert drafts.version(draft["id"], 2)["title"] == "New title"
    again = drafts.restore(draft["id"], 2)
    assert again["version"] == 4
    assert (again["title"], again["content"], again["excerpt"]) == (
        changed["title"],
        changed["content"],
        changed["excerpt"],
    )
    assert again["seo_meta"] == changed["seo_meta"]
    # Restoring what the draft already holds changes nothing.
    assert drafts.restore(draft["id"], 4) == again
    assert drafts.restore(draft["id"], 2) == again
    assert drafts.versions(draft["id"])["total"] == 4


# --- the SEO score ----------------------------------------------------------------------------


def test_the_seo_score_follows_the_content(drafts):
    title = "Solar panels for a small home"
    intro = "<p>Solar panels cut the power bill of a small home.</p>"
    draft = drafts.create(title, intro + "<h2>Costs</h2><p>They cost less each year.</p>")
    found = checks(draft)
    assert {check_id: c["max_points"] for check_id, c in found.items()} == SEO_CHECKS
    assert draft["seo_score"] == sum(c["points"] for c in found.values())
    assert draft["seo_meta"]["score_breakdown"]["total"] == draft["seo_score"]
    assert found["keyword_in_title"]["points"] == 0
    assert found["keyword_in_title"]["detail"] == "No focus keyword set."

    keyed = drafts.update(draft["id"], seo_meta={"focus_keywords": ["solar panels"]})
    found = checks(keyed)
    assert found["keyword_in_title"]["passed"] and found["keyword_in_intro"]["passed"]
    assert not found["keyword_in_headings"]["passed"]
    assert "solar panels" in found["keyword_in_headings"]["detail"]
    assert keyed["seo_score"] == draft["seo_score"] + 25

    in_heading = drafts.update(
        draft["id"], content=intro + "<h2>What solar panels cost</h2><p>Less each year.</p>"
    )
    assert checks(in_heading)["keyword_in_headings"]["passed"]
    assert in_heading["seo_score"] == keyed["seo_score"] + 10

    linked = drafts.update(
        draft["id"],
        content=intro
        + '<h2>What solar panels cost</h2><p>Less each <a href="https://example.com">year</a>.</p>',
    )
    assert checks(linked)["links"]["passed"]
    assert linked["seo_score"] == in_heading["seo_score"] + 10

    # Each revision keeps the score it had.
    scores = [v["seo_score"] for v in drafts.versions(draft["id"])["data"]]
    assert scores == [
        linked["seo_score"],
        in_heading["seo_score"],
        keyed["seo_score"],
        draft["seo_score"],
    ]
    assert drafts.version(draft["id"], 2)["seo_meta"] == keyed["seo_meta"]


# --- delete -----------------------------------------------------------------------------------


@pytest.mark.own_org
def test_delete_is_soft_and_the_draft_is_gone_from_every_read(drafts, run):
    doomed = drafts.approve(drafts.create("Doomed plan", "<p>Gone soon.</p>")["id"])
    kept = drafts.create("Kept")
    assert drafts.delete(doomed["id"]) == {"success": True}

    for operation, extra in ID_OPERATIONS.items():
        data = {"id": doomed["id"], **extra}
        problem(drafts.request(operation, data, role="admin"), 404, "NOT_FOUND")
    assert drafts.list() == {"data": [kept], "total": 1}
    assert drafts.list(search="doomed")["total"] == 0
    assert drafts.stats()["total"] == 1 and drafts.stats()["byStatus"]["approved"] == 0
    assert drafts.publishable() == []

    async def stored(db: Database) -> tuple[str, bool]:
        async with db.unit_of_work() as session:
            row = (
                await session.execute(select(Draft).where(Draft.id == uuid.UUID(doomed["id"])))
            ).scalar_one()
            return row.title, row.deleted_at is not None

    assert run(stored) == ("Doomed plan", True)


# --- assign -----------------------------------------------------------------------------------


def test_assign_a_member_of_the_organization(drafts):
    draft = drafts.create()
    drafts.whoami("member")
    response = drafts.request(
        "drafts.assign", {"id": draft["id"], "assigneeId": drafts.users["member"]}
    )
    assert response.status_code == 200, response.text
    assert response.content == b""
    assigned = drafts.get(draft["id"])
    assert assigned["assignee_id"] == drafts.users["member"]
    # Assigning is not a revision and does not move the draft.
    assert (assigned["status"], assigned["version"]) == ("reviewing", 1)
    assert drafts.versions(draft["id"])["total"] == 1

    # Our own user id names a member too; the draft keeps the identity provider's id.
    admin = drafts.whoami("admin")["user"]
    response = drafts.request("drafts.assign", {"id": draft["id"], "assigneeId": admin["id"]})
    assert response.status_code == 200, response.text
    assert drafts.get(draft["id"])["assignee_id"] == drafts.users["admin"]

    # Someone who never joined the organization is refused, and the assignment stays.
    response = drafts.request(
        "drafts.assign", {"id": draft["id"], "assigneeId": f"stranger-{drafts.org}"}
    )
    body = problem(response, 400, "BAD_REQUEST")
    assert f"stranger-{drafts.org}" in body["detail"]
    assert drafts.get(draft["id"])["assignee_id"] == drafts.users["admin"]
