"""Drafts hold text to the kit's rule and numbers to bounds, over REST and RPC (and on PostgreSQL
when the suite runs there, where a NUL used to be a 500): a control character is a 400 naming
its field, titles, excerpts and SEO texts are plain text on every write (the generation
pipeline's too), a page or version past any bound is a 400, a page past the last is empty, a
version past the last is 404, and an update that gives nothing answers the draft unchanged."""

from __future__ import annotations

import uuid

import pytest

from contentplatform.drafts import service as drafts_service
from contentplatform.kit.db import Database
from contentplatform.kit.schemas import MAX_PAGE
from contentplatform.kit.text import MAX_INT
from tests.drafts.support import Drafts, put_status
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

HUGE = "99999999999999999999"  # as a client sends it in a query: past 64 bits

drafts = org_fixture(Drafts)


def refused(response) -> list[tuple[str, str]]:
    body = problem(response, 400, "BAD_REQUEST")
    return [(error["path"], error["message"]) for error in body["errors"]]


def paths(response) -> list[str]:
    return [path for path, _ in refused(response)]


# --- text ---------------------------------------------------------------------------------------


@pytest.mark.own_org
@pytest.mark.parametrize("title", ["Cold\x00brew", "Cold\x1bbrew", "Cold\nbrew", "Cold\tbrew"])
def test_a_control_character_in_a_title_is_a_400_naming_title(drafts, title):
    [(path, message)] = refused(drafts.request("drafts.createDraft", {"title": title}))
    assert path == "title"
    assert f"U+{ord(title[4]):04X}" in message
    draft = drafts.create("Cold brew")
    assert paths(drafts.request("drafts.update", {"id": draft["id"], "title": title})) == ["title"]
    assert drafts.list()["data"] == [draft]


def test_a_nul_anywhere_in_an_edit_is_a_400_naming_where(drafts):
    draft = drafts.create()
    cases = {
        "content": {"content": "<p>a\x00b</p>"},
        "excerpt": {"excerpt": "a\x00b"},
        "seo_meta": {"seo_meta": {"seo_title": "a\x00b"}},
    }
    for field, change in cases.items():
        [(path, message)] = refused(drafts.request("drafts.update", {"id": draft["id"], **change}))
        assert path == field, change
        assert "U+0000" in message
    [(path, message)] = refused(
        drafts.request("drafts.update", {"id": draft["id"], **cases["seo_meta"]})
    )
    assert message.startswith("seo_title: ")
    assert paths(drafts.request("drafts.reject", {"id": draft["id"], "reason": "No\x00"})) == [
        "reason"
    ]
    assert paths(drafts.request("drafts.list", {"search": "a\x00"}, role="member")) == ["search"]
    assert drafts.get(draft["id"]) == draft


def test_content_and_reasons_keep_their_line_breaks(drafts):
    draft = drafts.create("Notes", "<p>one</p>\n<p>two</p>")
    assert draft["content"] == "<p>one</p>\n<p>two</p>"
    rejected = drafts.reject(draft["id"], "Too short.\n\tAdd a second section.")
    assert rejected["rejection_reason"] == "Too short.\n\tAdd a second section."


def raw_update(drafts: Drafts, draft_id: str, seo_meta: str):
    """drafts.update with seo_meta written as JSON text: what a client's encoder may send that
    ours would not (Infinity, NaN)."""
    headers = {
        "Authorization": f"Bearer {drafts.tokens['editor']}",
        "x-idp-org-id": drafts.org,
        "content-type": "application/json",
    }
    if drafts.call.transport == "rpc":
        body = f'{{"id": "{draft_id}", "seo_meta": {seo_meta}}}'
        return drafts.client.post("/api/rpc/drafts.update", content=body, headers=headers)
    body = f'{{"seo_meta": {seo_meta}}}'
    return drafts.client.patch(f"/v1/drafts/{draft_id}", content=body, headers=headers)


def test_seo_meta_numbers_are_finite_and_bounded_and_it_nests_only_so_deep(drafts):
    draft = drafts.create()
    for seo_meta in (
        '{"score": Infinity}',
        '{"score": NaN}',
        '{"n": 1e999}',
        '{"n": 1099511627776}',
    ):
        assert paths(raw_update(drafts, draft["id"], seo_meta)) == ["seo_meta"], seo_meta
    deep = '{"a": ' * 200 + "1" + "}" * 200
    assert paths(raw_update(drafts, draft["id"], deep)) == ["seo_meta"]
    assert drafts.get(draft["id"]) == draft


def test_titles_excerpts_and_seo_texts_are_stored_as_plain_text(drafts):
    draft = drafts.create("<img src=x onerror=alert(1)>Fresh <b>beans</b> &amp; more")
    assert draft["title"] == "Fresh beans & more"

    updated = drafts.update(
        draft["id"],
        title="<script>alert(1)</script>Roasting at home",
        excerpt="<p>Why <em>light</em> roasts?</p>",
        seo_meta={
            "seo_title": "<b>Roasting</b> 101",
            "meta_description": 'Beans <a href="https://evil.example">here</a>',
            "focus_keywords": ["<i>roasting</i>", "beans"],
        },
    )

    assert updated["title"] == "Roasting at home"
    assert updated["excerpt"] == "Why light roasts?"
    meta = updated["seo_meta"]
    assert (meta["seo_title"], meta["meta_description"]) == ("Roasting 101", "Beans here")
    assert meta["focus_keywords"] == ["roasting", "beans"]
    assert drafts.titles(search="roasting") == ["Roasting at home"]
    # What a reader would see stays: "<" that is text, entities as characters.
    assert drafts.update(draft["id"], title="1 < 2 & 3 > 2")["title"] == "1 < 2 & 3 > 2"


@pytest.mark.parametrize(
    ("title", "stored"),
    [("<img src=x onerror=alert(1)>", "img src=x onerror=alert(1)"), ("&lt;br&gt;", "br")],
)
def test_a_title_that_is_only_markup_keeps_its_words_without_brackets(drafts, title, stored):
    assert drafts.create(title=title)["title"] == stored


def test_a_generated_draft_is_stored_as_plain_text(drafts, run):
    tenant_id, run_id = drafts.tenant_id, uuid.uuid4()
    placeholder = drafts_service.Generating(title="<video> tags <b>explained</b>", run_id=run_id)

    async def generate(db: Database) -> str:
        async with db.unit_of_work() as session:
            [draft_id] = await drafts_service.start_generating_many(
                session, tenant_id, [placeholder]
            )
        async with db.unit_of_work() as session:
            draft = await drafts_service.generating(session, tenant_id, draft_id, run_id)
            assert draft is not None
            assert draft.title == "tags explained"
            drafts_service.finish_generation(
                session,
                draft,
                title="<h1>Brewing <em>better</em></h1>",
                content="<p>Start with fresh beans.</p>",
                excerpt="<p>Fresh beans &amp; <b>clean</b> water.</p>",
                seo_meta={"seo_title": "<b>Brewing</b>", "meta_description": "<i>How</i> to"},
                provenance={},
                summary="Generated",
            )
            return str(draft_id)

    draft = drafts.get(run(generate))
    assert (draft["title"], draft["excerpt"]) == ("Brewing better", "Fresh beans & clean water.")
    assert (draft["seo_meta"]["seo_title"], draft["seo_meta"]["meta_description"]) == (
        "Brewing",
        "How to",
    )


# --- numbers ------------------------------------------------------------------------------------


@pytest.mark.own_org
def test_a_page_past_any_bound_is_a_400_and_past_the_last_an_empty_page(drafts):
    draft = drafts.create()
    for page in (HUGE, str(MAX_PAGE + 1)):
        assert paths(drafts.request("drafts.list", {"page": page}, role="member")) == ["page"]
        response = drafts.request("drafts.listVersions", {"id": draft["id"], "page": page})
        assert paths(response) == ["page"]
    assert drafts.list(page=MAX_PAGE) == {"data": [], "total": 1}
    assert drafts.versions(draft["id"], page=MAX_PAGE) == {"data": [], "total": 1}


def test_a_version_past_the_last_is_404_and_past_any_bound_a_400(drafts):
    draft = drafts.create()
    for operation in ("drafts.getVersion", "drafts.restoreVersion"):
        missing = drafts.request(operation, {"id": draft["id"], "version": MAX_INT})
        problem(missing, 404, "NOT_FOUND")
        for version in (MAX_INT + 1, HUGE):
            response = drafts.request(operation, {"id": draft["id"], "version": version})
            assert paths(response) == ["version"], (operation, version)
    for version in (MAX_INT + 1, int(HUGE)):
        data = {"id": draft["id"], "title": "Changed", "expectedVersion": version}
        assert paths(drafts.request("drafts.update", data)) == ["expectedVersion"]
    assert drafts.get(draft["id"]) == draft


# --- an update that gives nothing -----------------------------------------------------------------


def test_an_update_that_gives_nothing_answers_the_draft_unchanged(drafts):
    draft = drafts.create()
    assert drafts.update(draft["id"]) == draft
    assert drafts.update(draft["id"], expectedVersion=1) == draft
    assert drafts.versions(draft["id"])["total"] == 1


def test_an_update_that_gives_nothing_to_a_draft_with_no_revision_yet(drafts, run):
    # A generation that failed before it wrote anything leaves a rejected draft at version 0.
    draft = drafts.create()
    put_status(run, draft["id"], "rejected", version=0, rejection_reason="The model failed.")
    before = drafts.get(draft["id"])
    assert before["version"] == 0

    assert drafts.update(draft["id"]) == before
    assert drafts.get(draft["id"]) == before
