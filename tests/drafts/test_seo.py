"""The SEO score: a well-made article gets 100, and each rubric check moves it as documented."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contentplatform.drafts.seo import NO_KEYWORD, SeoCheck, SeoScore, contains_keyword, score

KEYWORD = "cold brew coffee"
TITLE = "How to Make Cold Brew Coffee at Home"  # 36 characters
META = (
    "Cold brew coffee is smooth, sweet and easy. Learn the ratio, the grind and the steeping "
    "time, and make a batch that lasts all week."
)  # 132 characters
INTRO = "Cold brew coffee is smooth and sweet. It is also easy to make at home."
H2S = ("Why cold brew coffee tastes different", "What you need")
LINK = '<a href="https://example.com/grinders">grinder guide</a>'

RUBRIC = [
    ("keyword_in_title", 15),
    ("keyword_in_intro", 10),
    ("keyword_in_headings", 10),
    ("title_length", 10),
    ("meta_description_length", 10),
    ("heading_structure", 10),
    ("length", 15),
    ("readability", 10),
    ("links", 10),
]


def sentence(n: int, words: int = 10) -> str:
    """A sentence of exactly `words` words."""
    filler = ["the", "brew", "stays", "smooth", "and", "the", "flavour", "stays", "clean"] * 10
    return " ".join([f"Step{n}", *filler[: words - 1]]) + "."


def article(
    *,
    title: str = TITLE,
    intro: str = INTRO,
    h2s: tuple[str, ...] = H2S,
    sub_level: int = 3,
    sentences: int = 30,
    sentence_words: int = 10,
    link: str | None = LINK,
    meta: str | None = META,
    keywords: list[str] | None = None,
) -> tuple[str, str, dict[str, Any]]:
    """(title, content, seo_meta) of an article that passes every check unless told otherwise."""
    body = [f"<p>{intro}</p>"]
    for i, heading in enumerate(h2s):
        body.append(f"<h2>{heading}</h2>")
        text = " ".join(sentence(i * 100 + n, sentence_words) for n in range(sentences))
        body.append(f"<p>{text}</p>")
        if i == len(h2s) - 1:
            body.append(f"<h{sub_level}>Grinding the beans</h{sub_level}>")
            body.append(f"<p>Use a coarse grind. Read the {link or 'grinder guide'}.</p>")
    seo_meta: dict[str, Any] = {"focus_keywords": [KEYWORD] if keywords is None else keywords}
    if meta is not None:
        seo_meta["meta_description"] = meta
    return title, "".join(body), seo_meta


def check(result: SeoScore, check_id: str) -> SeoCheck:
    return next(c for c in result.checks if c.id == check_id)


def points(result: SeoScore) -> dict[str, int]:
    return {c.id: c.points for c in result.checks}


def test_a_well_made_article_scores_100() -> None:
    result = score(*article())
    assert result.total == 100
    assert all(c.passed and c.points == c.max_points for c in result.checks)
    assert [(c.id, c.max_points) for c in result.checks] == RUBRIC


LONG_TITLE = "Cold Brew Coffee: The Complete Guide to Ratios, Grinds and Steeping Time"


@pytest.mark.parametrize(
    ("check_id", "changes"),
    [
        ("keyword_in_title", {"title": "How to Make a Smooth Iced Drink at Home"}),
        ("keyword_in_intro", {"intro": "This drink is smooth and sweet. It is easy to make."}),
        ("keyword_in_headings", {"h2s": ("Why it tastes different", "What you need")}),
        ("title_length", {"title": LONG_TITLE}),
        ("meta_description_length", {"meta": None}),
        # Two rules broken: a single H2, and an H4 right after it.
        ("heading_structure", {"h2s": H2S[:1], "sub_level": 4, "sentences": 60}),
        ("length", {"sentences": 3}),
        ("readability", {"sentence_words": 30}),
        ("links", {"link": None}),
    ],
)
def test_each_check_loses_its_points_alone(check_id: str, changes: dict[str, Any]) -> None:
    result = score(*article(**changes))
    failed = check(result, check_id)
    assert failed.points == 0
    assert not failed.passed
    assert failed.detail
    assert result.total == 100 - failed.max_points
    assert all(c.passed for c in result.checks if c.id != check_id)


def test_the_documented_example_detail() -> None:
    title = "T" * 72
    result = score(title, "<p></p>", {})
    assert check(result, "title_length").detail == (
        "The title has 72 characters; keep it between 30 and 60."
    )


# --- bands ---


@pytest.mark.parametrize(
    ("length", "expected"),
    [(0, 0), (1, 5), (29, 5), (30, 10), (60, 10), (61, 5), (70, 5), (71, 0), (200, 0)],
)
def test_title_length_bands(length: int, expected: int) -> None:
    assert points(score("x" * length, "", {}))["title_length"] == expected


def test_the_seo_title_is_measured_instead_of_the_title() -> None:
    result = score("x" * 100, "", {"seo_title": "y" * 45})
    assert check(result, "title_length").points == 10
    assert "SEO title" in check(result, "title_length").detail


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (None, 0),
        (0, 0),
        (69, 0),
        (70, 5),
        (119, 5),
        (120, 10),
        (160, 10),
        (161, 5),
        (200, 5),
        (201, 0),
    ],
)
def test_meta_description_bands(length: int | None, expected: int) -> None:
    meta = {} if length is None else {"meta_description": "m" * length}
    assert points(score(TITLE, "", meta))["meta_description_length"] == expected


def test_a_meta_description_that_is_not_text_counts_as_missing() -> None:
    result = score(TITLE, "", {"meta_description": 12345})
    assert check(result, "meta_description_length").detail == (
        "Add a meta description of 120 to 160 characters."
    )


@pytest.mark.parametrize(
    ("words", "expected"),
    [(0, 0), (149, 0), (150, 4), (299, 4), (300, 8), (599, 8), (600, 15), (2000, 15)],
)
def test_length_bands(words: int, expected: int) -> None:
    content = "<p>" + "word " * words + "</p>"
    assert points(score(TITLE, content, {}))["length"] == expected


@pytest.mark.parametrize(
    ("average", "expected"),
    [(5, 10), (20, 10), (21, 5), (25, 5), (26, 0), (60, 0)],
)
def test_readability_bands(average: int, expected: int) -> None:
    content = "<p>" + " ".join(sentence(n, average) for n in range(10)) + "</p>"
    assert points(score(TITLE, content, {}))["readability"] == expected


def test_readability_ignores_headings_and_ends_sentences_at_line_breaks() -> None:
    long_heading = " ".join(["word"] * 100)
    content = (
        f"<h2>{long_heading}</h2><p>{sentence(1, 20)}</p>"
        # Five list items without full stops are five short sentences, not one of 15 words.
        "<ul>" + "<li>three word item</li>" * 5 + "</ul>"
    )
    result = score(TITLE, content, {})
    assert check(result, "readability").points == 10
    assert check(result, "readability").detail == "Sentences average 5.8 words."


def test_readability_of_an_empty_article() -> None:
    assert check(score(TITLE, "<p></p>", {}), "readability").points == 0


def test_sentences_end_at_question_and_exclamation_marks() -> None:
    twelve = " ".join(["word"] * 12)
    content = f"<p>{twelve}? {twelve}! {twelve}. “{twelve}.” {twelve}…</p>"
    assert points(score(TITLE, content, {}))["readability"] == 10


# --- heading structure ---


@pytest.mark.parametrize(
    ("content", "expected", "problem"),
    [
        ("<h2>A</h2><h3>B</h3><h2>C</h2><h3>D</h3><h4>E</h4>", 10, "well structured"),
        ("<h2>A</h2><h3>B</h3>", 5, "at least two H2"),
        ("<h2>A</h2><h4>B</h4><h2>C</h2>", 5, "an H4 follows an H2"),
        ("<h3>A</h3><h2>B</h2><h2>C</h2>", 5, "an H3 follows the title"),
        ("<h1>A</h1><h2>B</h2><h2>C</h2>", 5, "Remove the H1"),
        ("<h1>A</h1><h2>B</h2>", 0, "Remove the H1"),
        ("", 5, "found 0"),  # no headings at all breaks only the two-H2 rule
        ("<h2>A</h2><h2></h2>", 5, "found 1"),  # an empty heading is not a heading
    ],
)
def test_heading_structure(content: str, expected: int, problem: str) -> None:
    result = check(score(TITLE, content, {}), "heading_structure")
    assert result.points == expected
    assert problem in result.detail


# --- links ---


@pytest.mark.parametrize(
    ("hrefs", "expected"),
    [
        ([], 0),
        (["#section"], 0),
        (["mailto:team@example.com", "tel:+4930123"], 0),
        (["https://example.com"], 10),
        (["HTTP://example.com"], 10),
        (["/blog/other-post"], 10),
        (["../other-post"], 10),
        (["#top", "/blog/other-post"], 10),
    ],
)
def test_links(hrefs: list[str], expected: int) -> None:
    content = "".join(f'<p><a href="{href}">link</a></p>' for href in hrefs)
    assert points(score(TITLE, content, {}))["links"] == expected


# --- the focus keyword ---


@pytest.mark.parametrize(
    ("text", "keyword", "found"),
    [
        ("How to Make COLD BREW Coffee", "cold brew coffee", True),
        ("Cold\u00a0brew   coffee, explained", "cold brew coffee", True),
        ("The best café in town", "cafe", True),
        ("The best cafe in town", "Café", True),
        ("Über die Straße", "uber die strasse", True),
        ("How to start painting", "art", False),
        ("Artistic choices", "art", False),
        ("Modern art.", "art", True),
        ("The art's history", "art", True),
        ("cold coffee brew", "cold brew coffee", False),
        ("cold brewing coffee", "cold brew coffee", False),
        ("Learn C++ today", "c++", True),
        ("Learn C today", "c++", False),
        ("anything", "   ", False),
    ],
)
def test_keyword_matching(text: str, keyword: str, found: bool) -> None:
    assert contains_keyword(text, keyword) is found


def test_keyword_checks_use_the_first_focus_keyword_only() -> None:
    title, content, meta = article(keywords=["iced tea", KEYWORD])
    result = score(title, content, meta)
    assert points(result)["keyword_in_title"] == 0
    assert check(result, "keyword_in_title").detail == 'Add "iced tea" to the title.'


def test_keyword_in_headings_counts_h2_and_h3_only() -> None:
    meta = {"focus_keywords": ["espresso"]}
    assert points(score(TITLE, "<h3>Espresso</h3>", meta))["keyword_in_headings"] == 10
    assert points(score(TITLE, "<h4>Espresso</h4>", meta))["keyword_in_headings"] == 0
    assert points(score(TITLE, "<h1>Espresso</h1>", meta))["keyword_in_headings"] == 0


def test_keyword_in_title_reads_the_seo_title_when_set() -> None:
    title, content, meta = article()
    meta["seo_title"] = "A Smooth Summer Drink Made in Your Kitchen"
    result = check(score(title, content, meta), "keyword_in_title")
    assert result.points == 0
    assert result.detail == f'Add "{KEYWORD}" to the SEO title.'


@pytest.mark.parametrize("keywords", [None, [], [""], ["  "], [42]])
def test_without_a_focus_keyword_the_keyword_checks_score_nothing(keywords: Any) -> None:
    title, content, meta = article()
    if keywords is None:
        del meta["focus_keywords"]
    else:
        meta["focus_keywords"] = keywords
    result = score(title, content, meta)
    for check_id in ("keyword_in_title", "keyword_in_intro", "keyword_in_headings"):
        assert check(result, check_id).points == 0
        assert check(result, check_id).detail == NO_KEYWORD
    assert result.total == 65


# --- the stored form ---


def test_as_json_shape() -> None:
    title, content, meta = article(link=None)
    result = score(title, content, meta)
    data = result.as_json()
    assert set(data) == {"total", "checks", "rubric_version"}
    assert data["rubric_version"] == 1
    assert data["total"] == 90 == sum(c["points"] for c in data["checks"])
    assert [c["id"] for c in data["checks"]] == [check_id for check_id, _ in RUBRIC]
    for entry in data["checks"]:
        assert set(entry) == {"id", "label", "points", "max_points", "passed", "detail"}
    assert data["checks"][-1] == {
        "id": "links",
        "label": "Links",
        "points": 0,
        "max_points": 10,
        "passed": False,
        "detail": "Add at least one link to a related page or source.",
    }
    assert json.loads(json.dumps(data)) == data


def test_score_is_deterministic() -> None:
    assert score(*article()) == score(*article())
