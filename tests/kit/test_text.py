"""The kit's one rule for text input (kit/text.py), as every operation's Input applies it: control
characters refused (line breaks and tabs where a field is multi-line), invisible and
direction-changing characters refused in names and identifiers, markup stripped from plain text,
integers bounded, JSON objects held to the rule throughout. Over HTTP, each domain's tests show it
(tests/api/test_input_rules.py for every operation at once)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from pydantic import Field, ValidationError

from contentplatform.kit.schemas import Input
from contentplatform.kit.text import (
    MAX_INT,
    MAX_JSON_DEPTH,
    Identifier,
    JsonObject,
    MultiLine,
    Name,
    PlainMultiLine,
    PlainText,
    cleaned,
    escaped,
    plain_text,
)


class Nested(Input):
    description: MultiLine | None = None
    tags: list[Name] | None = None


class Sample(Input):
    """A field of every kind an operation takes."""

    search: str | None = None
    content: MultiLine | None = None
    title: PlainText | None = None
    excerpt: PlainMultiLine | None = None
    name: Name | None = None
    filename: Identifier | None = None
    keywords: list[str] | None = None
    meta: JsonObject | None = None
    nested: Nested | None = None
    page: int = Field(1, ge=1)
    limit: int = Field(20, ge=1, le=100)


def valid(**data: Any) -> dict[str, Any]:
    return Sample.model_validate(data).model_dump(exclude_defaults=True)


def refused(**data: Any) -> list[tuple[str, str]]:
    """(path, message) of each field the input is refused for."""
    with pytest.raises(ValidationError) as caught:
        Sample.model_validate(data)
    return [
        (".".join(str(p) for p in error["loc"]), error["msg"])
        for error in caught.value.errors(include_url=False)
    ]


# --- control characters -------------------------------------------------------------------------

EVERY_FREE_TEXT_FIELD = ["search", "content", "title", "excerpt", "name", "filename"]


@pytest.mark.parametrize("field", EVERY_FREE_TEXT_FIELD)
@pytest.mark.parametrize("character", ["\x00", "\x07", "\x1b", "\x7f", "\x85", "\x9f"])
def test_a_control_character_is_refused_in_every_field_naming_it(field, character):
    [(path, message)] = refused(**{field: f"ab{character}c"})
    assert path == field
    assert f"U+{ord(character):04X}" in message
    assert "control character" in message
    assert "character 3" in message


def test_a_lone_surrogate_is_refused():
    [(path, message)] = refused(search="a\ud800")
    assert path == "search"
    assert "U+D800" in message


@pytest.mark.parametrize("field", ["search", "title", "name", "filename"])
@pytest.mark.parametrize("character", ["\n", "\r", "\t"])
def test_single_line_fields_refuse_line_breaks_and_tabs(field, character):
    [(path, message)] = refused(**{field: f"one{character}two"})
    assert path == field
    assert "single-line" in message


def test_multi_line_fields_keep_line_breaks_and_tabs():
    text = "First line\r\n\tindented\nlast"
    assert valid(content=text)["content"] == text
    assert valid(nested={"description": text})["nested"]["description"] == text
    assert valid(excerpt="One.\n\nTwo.")["excerpt"] == "One.\n\nTwo."


def test_ordinary_text_passes_as_given():
    text = (
        "Caf\u00e9 \u2014 na\u00efve, \u65e5\u672c\u8a9e, \u0645\u0631\u062d\u0628\u0627 \U0001f600"
    )
    assert valid(search=text, name=text, filename=text) == {
        "search": text,
        "name": text,
        "filename": text,
    }


# --- invisible and direction-changing characters ----------------------------------------------

UNSEEN = [
    "\u202e",  # right-to-left override: "evil\u202egnp.exe" shows as "evilexe.png"
    "\u202a",
    "\u2066",
    "\u2069",
    "\u200b",  # zero-width space
    "\u200d",
    "\u200f",
    "\u2060",
    "\ufeff",
    "\u00ad",  # soft hyphen
    "\u2028",  # line separator
    "\u3164",  # Hangul filler: a blank that is a letter
    "\U000e0041",  # a tag character
]


@pytest.mark.parametrize("character", UNSEEN)
@pytest.mark.parametrize("field", ["name", "filename"])
def test_names_and_identifiers_refuse_invisible_and_direction_changing_characters(field, character):
    [(path, message)] = refused(**{field: f"invoice{character}fdp.exe"})
    assert path == field
    assert f"U+{ord(character):04X}" in message


def test_a_right_to_left_mark_is_text_in_a_title_but_not_in_a_filename():
    title = "\u05e9\u05dc\u05d5\u05dd 2024\u200f"
    assert valid(title=title)["title"] == title
    assert refused(filename=title)[0][0] == "filename"


# --- plain text ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("<img src=x onerror=alert(1)> Fresh beans", "Fresh beans"),
        ("<b>Bold</b> claims", "Bold claims"),
        ("<script>alert(1)</script>Roasting", "Roasting"),
        ("Tom &amp; Jerry", "Tom & Jerry"),
        ("AT&T and R&D", "AT&T and R&D"),
        ("1 < 2 and 3 > 2", "1 < 2 and 3 > 2"),
        ("I <3 coffee", "I <3 coffee"),
        ("&lt;b&gt;escaped markup&lt;/b&gt;", "escaped markup"),
        ("&amp;lt;b&amp;gt;twice escaped", "twice escaped"),
        ("  spaced  ", "spaced"),
        ("\"Quotes\" and 'apostrophes'", "\"Quotes\" and 'apostrophes'"),
    ],
)
def test_plain_text_fields_are_stored_without_markup(given, stored):
    assert valid(title=given, name=given, excerpt=given) == {
        "title": stored,
        "name": stored,
        "excerpt": stored,
    }
    assert plain_text(stored) == stored  # what is stored is already plain


@pytest.mark.parametrize("field", ["title", "name", "excerpt"])
def test_a_plain_text_field_of_only_markup_keeps_its_words_without_brackets(field):
    assert valid(**{field: "<img src=x onerror=alert(1)>"}) == {field: "img src=x onerror=alert(1)"}
    assert valid(**{field: "&lt;br&gt;"}) == {field: "br"}
    assert valid(**{field: "<b></b>"}) == {field: "b /b"}


def test_entities_cannot_smuggle_in_what_the_rule_refuses():
    assert refused(title="one&#10;two")[0][0] == "title"
    assert refused(name="evil&#x202E;gnp.exe")[0][0] == "name"


def test_identifiers_and_other_text_keep_markup_characters_as_given():
    assert valid(filename="<b>.txt", search="<b>", content="<p>x</p>") == {
        "filename": "<b>.txt",
        "search": "<b>",
        "content": "<p>x</p>",
    }


def test_escaped_is_plain_text_made_safe_for_html():
    assert escaped("Tom & Jerry <3") == "Tom &amp; Jerry &lt;3"
    assert escaped("<img src=x onerror=alert(1)>Beans") == "Beans"
    assert escaped('it\'s "quoted"') == 'it\'s "quoted"'


# --- lists, JSON objects, nested inputs ----------------------------------------------------------


def test_every_item_of_a_list_is_held_to_the_rule():
    [(path, message)] = refused(keywords=["fine", "bad\x00"])
    assert path == "keywords"
    assert message.startswith("[1]: ")


def test_a_nested_input_names_its_own_field():
    [(path, message)] = refused(nested={"tags": ["ok", "b\u200bad"]})
    assert path == "nested.tags"
    assert message.startswith("[1]: ")
    assert valid(nested={"tags": ["<i>Beans</i>"]})["nested"]["tags"] == ["Beans"]


def test_a_json_object_holds_every_key_and_string_to_the_rule_and_says_where():
    [(path, message)] = refused(meta={"seo_title": "bad\x00"})
    assert (path, message.split(":")[0]) == ("meta", "seo_title")
    [(_, message)] = refused(meta={"a": [{"b": "fine"}, {"c": "\ud800"}]})
    assert message.startswith("a[1].c: ")
    [(_, message)] = refused(meta={"bad\nkey": "value"})
    assert message.startswith("bad\\nkey: ")
    assert valid(meta={"notes": "line one\nline two", "n": 3, "ok": True, "x": None}) == {
        "meta": {"notes": "line one\nline two", "n": 3, "ok": True, "x": None}
    }


def test_a_json_object_has_finite_bounded_numbers_and_a_bounded_depth():
    assert "finite" in refused(meta={"score": float("inf")})[0][1]
    assert "finite" in refused(meta={"score": float("nan")})[0][1]
    assert str(MAX_INT) in refused(meta={"count": MAX_INT + 1})[0][1]
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(MAX_JSON_DEPTH):
        node["a"] = {}
        node = node["a"]
    assert "levels" in refused(meta=deep)[0][1]
    assert valid(meta=deep["a"])["meta"] == deep["a"]


# --- integers -----------------------------------------------------------------------------------


def test_an_integer_without_a_bound_of_its_own_is_bounded_by_the_kit():
    assert valid(page=MAX_INT)["page"] == MAX_INT
    assert refused(page=MAX_INT + 1) == [("page", f"must be at most {MAX_INT}")]
    assert refused(page=99_999_999_999_999_999_999)[0][0] == "page"


def test_a_negative_integer_is_bounded_too_where_the_field_says_nothing():
    assert "at least" in refused(meta={"n": -(2**40)})[0][1]
    assert refused(page=-(2**40))[0][0] == "page"  # its own ge=1 answers first


def test_an_instant_is_within_years_any_time_zone_can_hold():
    class Window(Input):
        start: datetime
        dates: list[datetime] = []

    for given in ("0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "1899-12-31T00:00:00"):
        with pytest.raises(ValidationError) as caught:
            Window.model_validate({"start": given})
        assert "years 1900 to 9998" in caught.value.errors()[0]["msg"], given
    with pytest.raises(ValidationError):
        Window.model_validate({"start": "2030-01-01T00:00:00Z", "dates": ["0001-01-01T00:00:00"]})
    assert Window.model_validate({"start": "2030-01-01T00:00:00Z"}).start.year == 2030


def test_a_field_bound_of_its_own_is_the_one_that_holds():
    assert refused(limit=101)[0][0] == "limit"
    assert valid(limit=100)["limit"] == 100


def test_a_later_input_inherits_the_rule_without_saying_anything():
    class Later(Input):
        label: str
        count: int

    with pytest.raises(ValidationError) as caught:
        Later.model_validate({"label": "a\x00", "count": 2**40})
    assert [error["loc"] for error in caught.value.errors()] == [("label",), ("count",)]


def test_a_name_from_elsewhere_is_cleaned_rather_than_refused():
    assert cleaned("<b>Ada</b>\x00\u202e Lovelace\n", 255) == "Ada Lovelace"
    assert cleaned("a" * 300, 255) == "a" * 255
    assert cleaned("\u200b", 255) == ""
