"""The SEO score of a draft: 0-100 from nine checks, each with a sentence a writer can act on.

Inputs: the draft's title and content HTML, and from its seo_meta (all optional) `seo_title`
(falls back to the title), `meta_description` and `focus_keywords` (the first one is the focus
keyword). Keyword matching ignores case and accents and respects word boundaries ("art" does not
match "start"); a multi-word keyword matches as a phrase.

Rubric (version 1, 100 points):

1. keyword_in_title (15): the focus keyword appears in the SEO title (or the title).
2. keyword_in_intro (10): the focus keyword appears in the first paragraph.
3. keyword_in_headings (10): the focus keyword appears in at least one h2-h3 heading.
4. title_length (10): SEO title of 30-60 characters = 10; 1-29 or 61-70 = 5; else 0.
5. meta_description_length (10): 120-160 characters = 10; 70-119 or 161-200 = 5; missing or
   else 0.
6. heading_structure (10): at least two h2; no heading level skipped going down (h2 -> h4 is a
   skip; the title counts as the h1 above the first heading); no h1 in the body (the title is
   the h1). 10 when all hold, 5 when only one rule fails, else 0.
7. length (15): >= 600 words = 15; 300-599 = 8; 150-299 = 4; else 0.
8. readability (10): average sentence length <= 20 words = 10; <= 25 = 5; else 0. Sentences of
   the plain text without headings; a line break (list item, table row) also ends a sentence.
9. links (10): at least one link to a real URL (http(s) or a relative path; `#fragment`, mailto
   and tel links don't count) = 10; else 0.

Without a focus keyword, checks 1-3 score 0 with the detail "No focus keyword set." A check has
`passed` when it has all its points. Pure and deterministic: no I/O, no clock.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from contentplatform.drafts import html

RUBRIC_VERSION = 1
NO_KEYWORD = "No focus keyword set."


@dataclass(frozen=True)
class SeoCheck:
    id: str
    label: str
    points: int
    max_points: int
    passed: bool
    detail: str


@dataclass(frozen=True)
class SeoScore:
    total: int
    checks: list[SeoCheck]

    def as_json(self) -> dict[str, Any]:
        """The form stored in a draft's seo_meta under "score_breakdown"."""
        return {
            "total": self.total,
            "checks": [asdict(check) for check in self.checks],
            "rubric_version": RUBRIC_VERSION,
        }


@dataclass(frozen=True)
class _Article:
    """Everything the checks read, parsed once."""

    title: str
    title_field: str  # how the details name it: "SEO title" or "title"
    meta_description: str
    keyword: str | None
    intro: str
    headings: list[tuple[int, str]]
    links: list[str]
    words: int
    body_text: str  # plain text without headings


def score(title: str, content_html: str, seo_meta: Mapping[str, Any]) -> SeoScore:
    """The rubric above applied to one draft."""
    article = _read(title, content_html, seo_meta)
    checks = []
    for check_id, label, max_points, rule in _RUBRIC:
        points, detail = rule(article)
        checks.append(SeoCheck(check_id, label, points, max_points, points == max_points, detail))
    return SeoScore(total=sum(check.points for check in checks), checks=checks)


def _read(title: str, content_html: str, seo_meta: Mapping[str, Any]) -> _Article:
    seo_title = _text_field(seo_meta.get("seo_title"))
    return _Article(
        title=seo_title or _single_line(title),
        title_field="SEO title" if seo_title else "title",
        meta_description=_text_field(seo_meta.get("meta_description")),
        keyword=_focus_keyword(seo_meta.get("focus_keywords")),
        intro=html.first_paragraph(content_html),
        headings=html.headings(content_html),
        links=html.links(content_html),
        words=html.word_count(content_html),
        body_text=html.plain_text(content_html, include_headings=False),
    )


def _single_line(text: str) -> str:
    return " ".join(text.split())


def _text_field(value: Any) -> str:
    # seo_meta is a free-form JSON object: anything but a string counts as missing.
    return _single_line(value) if isinstance(value, str) else ""


def _focus_keyword(value: Any) -> str | None:
    # The first entry of the list is the focus keyword; a bare string is accepted as one.
    if isinstance(value, list | tuple) and value:
        value = value[0]
    keyword = _text_field(value)
    return keyword or None


def _fold(text: str) -> str:
    """Text compared without case or accents ("Café" == "cafe", "Straße" == "strasse")."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def contains_keyword(text: str, keyword: str) -> bool:
    """Whether `keyword` occurs in `text` as whole words (a phrase for several words)."""
    words = _fold(keyword).split()
    if not words:
        return False
    # Lookarounds instead of \b so keywords that start or end with punctuation ("c++") work.
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(word) for word in words) + r"(?!\w)"
    return re.search(pattern, _fold(text)) is not None


# Each rule gives (points, detail) for one check; `_RUBRIC` below names them and their maxima.
_Rule = Callable[[_Article], tuple[int, str]]


def _keyword_in_title(a: _Article) -> tuple[int, str]:
    if a.keyword is None:
        return 0, NO_KEYWORD
    if contains_keyword(a.title, a.keyword):
        return 15, f'The {a.title_field} contains "{a.keyword}".'
    return 0, f'Add "{a.keyword}" to the {a.title_field}.'


def _keyword_in_intro(a: _Article) -> tuple[int, str]:
    if a.keyword is None:
        return 0, NO_KEYWORD
    if contains_keyword(a.intro, a.keyword):
        return 10, f'The first paragraph mentions "{a.keyword}".'
    return 0, f'Mention "{a.keyword}" in the first paragraph.'


def _keyword_in_headings(a: _Article) -> tuple[int, str]:
    keyword = a.keyword
    if keyword is None:
        return 0, NO_KEYWORD
    if any(level in (2, 3) and contains_keyword(text, keyword) for level, text in a.headings):
        return 10, f'A subheading contains "{keyword}".'
    return 0, f'Use "{keyword}" in at least one H2 or H3 subheading.'


def _title_length(a: _Article) -> tuple[int, str]:
    n = len(a.title)
    if n == 0:
        return 0, "Add a title of 30 to 60 characters."
    if 30 <= n <= 60:
        return 10, f"The {a.title_field} has {n} characters."
    points = 5 if n <= 70 else 0  # 1-29 or 61-70
    return points, f"The {a.title_field} has {n} characters; keep it between 30 and 60."


def _meta_description_length(a: _Article) -> tuple[int, str]:
    n = len(a.meta_description)
    if n == 0:
        return 0, "Add a meta description of 120 to 160 characters."
    if 120 <= n <= 160:
        return 10, f"The meta description has {n} characters."
    points = 5 if 70 <= n <= 200 else 0
    return points, f"The meta description has {n} characters; keep it between 120 and 160."


def _heading_structure(a: _Article) -> tuple[int, str]:
    problems = []
    h2_count = sum(1 for level, _ in a.headings if level == 2)
    if h2_count < 2:
        problems.append(f"Use at least two H2 subheadings (found {h2_count}).")
    previous = 1  # the title is the page's H1
    for level, _ in a.headings:
        if level > previous + 1:
            where = "the title" if previous == 1 else f"an H{previous}"
            problems.append(f"Don't skip heading levels: an H{level} follows {where}.")
            break
        previous = level
    if any(level == 1 for level, _ in a.headings):
        problems.append("Remove the H1 from the body; the title is the page's H1.")
    if not problems:
        return 10, "Headings are well structured."
    return (5 if len(problems) == 1 else 0), " ".join(problems)


def _length(a: _Article) -> tuple[int, str]:
    n = a.words
    if n >= 600:
        return 15, f"The article has {n} words."
    points = 8 if n >= 300 else 4 if n >= 150 else 0
    return points, f"The article has {n} words; aim for at least 600."


# A sentence ends at ., !, ? or an ellipsis (closing quotes or brackets may follow) before
# whitespace. Abbreviations ("e.g. this") split early; that only errs towards shorter sentences.
_SENTENCE_END = re.compile(r"(?<=[.!?\u2026])[\"'\u201d\u2019)\]]*\s+")


def _readability(a: _Article) -> tuple[int, str]:
    lengths = [
        words
        for line in a.body_text.splitlines()
        for sentence in _SENTENCE_END.split(line)
        if (words := html.count_words(sentence))
    ]
    if not lengths:
        return 0, "There is no body text to measure yet."
    average = sum(lengths) / len(lengths)
    if average <= 20:
        return 10, f"Sentences average {average:.1f} words."
    points = 5 if average <= 25 else 0
    return points, f"Sentences average {average:.1f} words; split long ones to average 20 or fewer."


def _is_real_link(href: str) -> bool:
    if href.startswith("#"):
        return False
    try:
        scheme = urlsplit(href).scheme
    except ValueError:  # e.g. an unbalanced "[" in the host
        return False
    # A relative path ("/guide", "../guide", "//host/path") has no scheme.
    return scheme.lower() in ("", "http", "https")


def _links(a: _Article) -> tuple[int, str]:
    n = sum(1 for href in a.links if _is_real_link(href))
    if n == 0:
        return 0, "Add at least one link to a related page or source."
    return 10, f"The article has {n} {'link' if n == 1 else 'links'} to other pages."


_RUBRIC: tuple[tuple[str, str, int, _Rule], ...] = (
    ("keyword_in_title", "Focus keyword in title", 15, _keyword_in_title),
    ("keyword_in_intro", "Focus keyword in introduction", 10, _keyword_in_intro),
    ("keyword_in_headings", "Focus keyword in subheadings", 10, _keyword_in_headings),
    ("title_length", "Title length", 10, _title_length),
    ("meta_description_length", "Meta description length", 10, _meta_description_length),
    ("heading_structure", "Heading structure", 10, _heading_structure),
    ("length", "Content length", 15, _length),
    ("readability", "Readability", 10, _readability),
    ("links", "Links", 10, _links),
)
