"""drafts.compareVersions over REST and RPC, and the HTML-aware word diff under it
(drafts/diff.py): tags stay whole, words are the unit, the pieces rebuild both versions, stats
count words, and how much of the latest AI revision a person's edits kept."""

from __future__ import annotations

import random
import uuid

import pytest

from contentplatform.drafts import diff
from contentplatform.kit.text import MAX_INT
from tests.drafts.review import Review, bad_fields, generated
from tests.support.bounds import MALFORMED_IDS
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

review = org_fixture(Review)
other = org_fixture(Review, second=True)

DIFF_FIELDS = {
    *("from", "to", "title_diff", "excerpt_diff", "seo_meta_changes", "content_diff", "stats"),
}


def ops(changes: list[diff.Change]) -> list[tuple[str, str]]:
    return [(change.op, change.text) for change in changes]


def rebuilt(changes: list[dict], keep: str, key: str = "html") -> str:
    """The text of one side of a diff: its equal pieces and its own (`delete` or `insert`)."""
    return "".join(c[key] for c in changes if c["op"] in ("equal", keep))


# --- the tokenizer and the diff ---------------------------------------------------------------


def test_tokens_are_whole_tags_whitespace_runs_and_words():
    html = '<p class="lead">Hello,  <a href="https://x.example/?a=1&amp;b=2">big</a> world</p>'
    assert diff.tokenize(html) == [
        '<p class="lead">',
        "Hello,",
        "  ",
        '<a href="https://x.example/?a=1&amp;b=2">',
        "big",
        "</a>",
        " ",
        "world",
        "</p>",
    ]


@pytest.mark.parametrize(
    "tag",
    [
        '<img alt="a > b" src="https://x.example/a.png">',
        "<img alt='1 < 2'>",
        "<br/>",
        "<!-- a > b -->",
        '<a\nhref="https://x.example">',
    ],
)
def test_a_tag_is_never_split_even_with_brackets_in_its_attributes(tag):
    assert diff.tokenize(f"<p>before {tag} after</p>") == [
        "<p>",
        "before",
        " ",
        tag,
        " ",
        "after",
        "</p>",
    ]
    assert diff.is_tag(tag)


def test_text_that_only_looks_like_markup_is_words():
    assert diff.tokenize("a < b and c<d") == [
        "a",
        " ",
        "<",
        " ",
        "b",
        " ",
        "and",
        " ",
        "c",
        "<",
        "d",
    ]
    assert diff.tokenize("1 <b> 2", html=False) == ["1", " ", "<b>", " ", "2"]
    assert not diff.is_word("<") and not diff.is_word("—") and diff.is_word("don't")


@pytest.mark.parametrize("seed", range(5))
def test_tokens_and_pieces_give_back_the_text(seed):
    pieces = ["<p>", "</p>", "<h2>", "</h2>", " ", "  ", "\n", "word", "other", "&amp;", "<br>"]
    chooser = random.Random(seed)
    before = "".join(chooser.choice(pieces) for _ in range(300))
    after = "".join(chooser.choice(pieces) for _ in range(300))
    assert "".join(diff.tokenize(before)) == before
    changes = diff.compare(before, after)
    as_json = [{"op": c.op, "html": c.text} for c in changes]
    assert rebuilt(as_json, "insert") == after
    # The older side differs at most in how long its whitespace runs are.
    older = diff.tokenize(rebuilt(as_json, "delete"))
    assert [t if not t.isspace() else " " for t in older] == [
        t if not t.isspace() else " " for t in diff.tokenize(before)
    ]


def test_a_changed_word_is_a_delete_then_an_insert_between_equal_html():
    changes = diff.compare("<p>The quick brown fox</p>", "<p>The slow brown fox jumps</p>")
    assert ops(changes) == [
        ("equal", "<p>The "),
        ("delete", "quick "),
        ("insert", "slow "),
        ("equal", "brown fox"),
        ("insert", " jumps"),
        ("equal", "</p>"),
    ]
    assert diff.stats(changes) == diff.Stats(words_added=2, words_removed=1)


def test_a_split_paragraph_inserts_whole_tags_and_no_words():
    changes = diff.compare("<p>Hello world</p>", "<p>Hello</p><p>world</p>")
    assert ops(changes) == [
        ("equal", "<p>Hello"),
        ("delete", " "),  # whitespace only one side has is a change: words never run together
        ("insert", "</p><p>"),
        ("equal", "world</p>"),
    ]
    assert diff.stats(changes) == diff.Stats(words_added=0, words_removed=0)


def test_a_changed_attribute_changes_the_whole_tag():
    before = '<p>See <a href="https://a.example">the guide</a>.</p>'
    after = '<p>See <a href="https://b.example">the guide</a>.</p>'
    assert ops(diff.compare(before, after)) == [
        ("equal", "<p>See "),
        ("delete", '<a href="https://a.example">'),
        ("insert", '<a href="https://b.example">'),
        ("equal", "the guide</a>.</p>"),
    ]


def test_whitespace_alone_is_no_change():
    assert ops(diff.compare("<p>a b</p>", "<p>a \n b</p>")) == [("equal", "<p>a \n b</p>")]
    assert diff.compare("", "") == []
    assert ops(diff.compare("", "<p>New</p>")) == [("insert", "<p>New</p>")]


def test_retained_share_counts_the_words_kept_in_place():
    original = "<p>" + " ".join(f"w{n}" for n in range(10)) + "</p>"
    edited = original.replace("w3", "changed").replace("w7 ", "")
    assert diff.retained_pct(original, edited) == 80.0
    assert diff.retained_pct(original, original) == 100.0
    assert diff.retained_pct(original, "<p>all new</p>") == 0.0
    assert diff.retained_pct("<p></p>", original) is None


def test_an_article_edited_in_many_places_is_diffed_word_by_word_quickly():
    chooser = random.Random(7)
    words = [f"w{chooser.randrange(2000)}" for _ in range(8000)]
    paragraphs = [" ".join(words[i : i + 80]) for i in range(0, len(words), 80)]
    before = "".join(f"<p>{p}</p>" for p in paragraphs)
    edited = list(words)
    for place in chooser.sample(range(len(edited)), 100):
        edited[place] = "edited"
    after = "".join(f"<p>{' '.join(edited[i : i + 80])}</p>" for i in range(0, len(edited), 80))
    stats = diff.stats(diff.compare(before, after))
    assert stats.words_added == stats.words_removed
    assert 90 <= stats.words_added <= 110  # word by word, not one replaced block


def test_a_text_too_repetitive_to_compare_cheaply_is_one_replaced_block(monkeypatch):
    monkeypatch.setattr(diff, "MAX_WORK", 0)
    changes = diff.compare("<p>a b c d</p><p>same</p>", "<p>d c b a</p><p>same</p>")
    assert ops(changes) == [
        ("equal", "<p>"),
        ("delete", "a b c d"),
        ("insert", "d c b a"),
        ("equal", "</p><p>same</p>"),
    ]


# --- drafts.compareVersions -------------------------------------------------------------------


def test_compare_two_revisions_of_a_draft(review):
    draft = review.create("Growing tomatoes", "<p>Water tomatoes every morning.</p>")
    review.update(
        draft["id"],
        title="Growing cherry tomatoes",
        content="<p>Water tomatoes every evening.</p><p>Feed them weekly.</p>",
        excerpt="A short guide.",
        seo_meta={"seo_title": "Cherry tomatoes", "focus_keywords": ["tomatoes"]},
    )

    found = review.diff(draft["id"], **{"from": 1})  # to: the current version, 2
    assert set(found) == DIFF_FIELDS
    assert (found["from"], found["to"]) == (1, 2)
    assert found["title_diff"] == [
        {"op": "equal", "text": "Growing "},
        {"op": "insert", "text": "cherry "},
        {"op": "equal", "text": "tomatoes"},
    ]
    assert found["excerpt_diff"] == [{"op": "insert", "text": "A short guide."}]
    assert found["seo_meta_changes"] == {
        "focus_keywords": {"from": None, "to": ["tomatoes"]},
        "seo_title": {"from": None, "to": "Cherry tomatoes"},
    }
    assert found["content_diff"] == [
        {"op": "equal", "html": "<p>Water tomatoes every "},
        {"op": "delete", "html": "morning."},
        {"op": "insert", "html": "evening.</p><p>Feed them weekly."},
        {"op": "equal", "html": "</p>"},
    ]
    assert found["stats"] == {"words_added": 4, "words_removed": 1, "ai_words_retained_pct": None}

    # Backwards, and a version with itself.
    back = review.diff(draft["id"], **{"from": 2, "to": 1})
    assert (back["from"], back["to"]) == (2, 1)
    assert back["stats"]["words_added"] == 1 and back["stats"]["words_removed"] == 4
    assert back["seo_meta_changes"]["seo_title"] == {"from": "Cherry tomatoes", "to": None}
    same = review.diff(draft["id"], **{"from": 2, "to": 2})
    assert [c["op"] for c in same["content_diff"]] == ["equal"]
    assert same["title_diff"] == [{"op": "equal", "text": "Growing cherry tomatoes"}]
    assert same["excerpt_diff"] == [{"op": "equal", "text": "A short guide."}]
    assert same["seo_meta_changes"] == {}
    assert same["stats"] == {"words_added": 0, "words_removed": 0, "ai_words_retained_pct": None}


def test_the_share_of_ai_words_a_person_kept(review, run):
    content = "<p>" + " ".join(f"word{n}" for n in range(20)) + "</p>"
    draft_id = generated(run, review.tenant_id, "Generated article", content)
    review.update(draft_id, content=content.replace("word5 ", "").replace("word9", "nine"))
    review.update(draft_id, title="Edited title")

    latest = review.diff(draft_id, **{"from": 1})
    assert (latest["from"], latest["to"]) == (1, 3)
    assert latest["stats"] == {
        "words_added": 1,
        "words_removed": 2,
        "ai_words_retained_pct": 90.0,
    }
    # Up to the AI revision itself, all of it is kept.
    assert review.diff(draft_id, **{"from": 1, "to": 1})["stats"]["ai_words_retained_pct"] == 100
    # A later AI revision is the one compared with (none after `to` counts).
    assert review.diff(draft_id, **{"from": 2, "to": 2})["stats"]["ai_words_retained_pct"] == 90


def test_a_version_the_draft_does_not_have_is_404(review):
    draft = review.create()
    for query in ({"from": 2}, {"from": 1, "to": 2}, {"from": MAX_INT}):
        body = problem(review.compare(draft["id"], **query), 404, "NOT_FOUND")
        assert "version" in body["detail"], body


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({}, "from"),
        ({"from": 0}, "from"),
        ({"from": -1}, "from"),
        ({"from": "first"}, "from"),
        ({"from": MAX_INT + 1}, "from"),
        ({"from": 1, "to": 0}, "to"),
        ({"from": 1, "to": "last"}, "to"),
    ],
)
def test_compare_refuses_out_of_bounds_versions(review, query, field):
    draft = review.create()
    assert bad_fields(review.compare(draft["id"], **query)) == [field]


@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
def test_a_malformed_id_is_400(review, bad_id):
    assert bad_fields(review.compare(bad_id, **{"from": 1})) == ["id"]


def test_another_tenant_cannot_compare_a_draft_it_does_not_own(review, other):
    draft = review.create("Secret", "<p>The secret.</p>")
    review.update(draft["id"], content="<p>The new secret.</p>")
    for draft_id in (draft["id"], str(uuid.uuid4())):
        problem(other.compare(draft_id, **{"from": 1, "to": 2}), 404, "NOT_FOUND")
    # A member (the least role) of the owner reads it.
    assert review.diff(draft["id"], **{"from": 1})["to"] == 2


def test_without_a_valid_token_is_401(call, org):
    data = {"id": str(uuid.uuid4()), "from": 1}
    problem(call("drafts.compareVersions", data, org=org), 401, "UNAUTHORIZED")
