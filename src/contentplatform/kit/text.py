"""Text is text: the one rule every string an operation takes in is held to, and plain text.

Every string anywhere in an input (`kit.schemas.Input` applies the rule to every field: nested
lists, dict keys and values, JSON objects alike) is refused with a 400 naming its field when it
holds:

- a control character (C0, DEL, C1), NUL included; a field marked multi-line (`MultiLine`,
  `PlainMultiLine`) allows tab, line feed and carriage return;
- a lone surrogate (`"\\ud800"` is valid JSON but not text any database can store).

A field of a name, filename, storage path, slug, key or URL (`Name`, `Identifier`) also refuses
what would make it read other than it is: format characters (Unicode category Cf: the
bidirectional overrides and isolates U+202A-U+202E and U+2066-U+2069, zero-width characters
U+200B-U+200F, U+2060, the BOM U+FEFF, the soft hyphen, ...), line and paragraph separators, and
the blank fillers (U+115F, U+1160, U+3164, U+FFA0) and combining grapheme joiner (U+034F).

A field of text a reader sees as text (`PlainText`, `PlainMultiLine`, `Name`: titles, excerpts,
SEO titles and descriptions, names) is plain text: `plain_text()` strips markup from it on the
way in (a value that is nothing but markup keeps its words, without the angle brackets), and
whoever sends it to a receiver that reads HTML escapes it there.
"""

from __future__ import annotations

import html
import json
import math
import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import date
from typing import Annotated, Any

import nh3
from pydantic_core import PydanticCustomError

# The range of a 32-bit integer column: the bounds of an integer input that declares none of
# its own (versions, counts and pages are all far inside it).
MAX_INT = 2**31 - 1
MIN_INT = -(2**31)
# The years an instant may fall in: any time zone's offset keeps it within what Python and every
# database can hold (year 1 at +05:00 is no instant in UTC at all).
MIN_YEAR, MAX_YEAR = 1900, 9998
# JSON objects (seo_meta, a connection's config) nest no deeper than this.
MAX_JSON_DEPTH = 32

# Control characters (C0, DEL, C1) and surrogates; the multi-line form lets \t \n \r through.
_REFUSED = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_REFUSED_MULTI_LINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# Invisible characters that are not format characters (Cf), refused where Cf is.
_INVISIBLE = frozenset("\u034f\u115f\u1160\u3164\uffa0")
_UNSEEN_CATEGORIES = frozenset({"Cf", "Zl", "Zp"})
# Markup can hide behind entities ("&lt;b&gt;" reads as "<b>"): stripping repeats until nothing
# changes. Text settles in one pass, entity-escaped markup in one per layer of escaping.
_MAX_PASSES = 8
# Text the HTML parse of plain_text() returns unchanged: nothing that opens a tag, comment or
# entity, and none of what the parse normalizes (CR to LF, NUL dropped, a leading BOM dropped).
_PLAIN_ALREADY = re.compile(r"[^<&\r\x00\ufeff]*")


@dataclass(frozen=True)
class TextRule:
    """How one field's strings are checked: a marker in the field's annotation
    (`Annotated[str, TextRule(...)]`, or one of the aliases below). A string field without one
    is one line of text."""

    multi_line: bool = False
    # No format or invisible characters: names, filenames, storage paths, slugs, keys, URLs.
    visible: bool = False
    # Markup stripped on the way in: text a reader sees (titles, excerpts, names).
    plain: bool = False

    def apply(self, value: str) -> str:
        """`value` held to the rule (plain text made plain), or PydanticCustomError."""
        self._check(value)
        if not self.plain:
            return value
        stripped = _plain_or_words(value)
        # Entities may decode into characters the rule refuses ("&#10;" in a title).
        self._check(stripped)
        return stripped

    def _check(self, value: str) -> None:
        found = (_REFUSED_MULTI_LINE if self.multi_line else _REFUSED).search(value)
        if found is not None:
            character = found.group()
            if character in "\n\r\t":
                what = "a line break or tab, in a single-line field"
            elif "\ud800" <= character <= "\udfff":
                what = "a lone surrogate, which is not text"
            else:
                what = "a control character"
            raise _refused(character, found.start(), what)
        if self.visible:
            for position, character in enumerate(value):
                if is_unseen(character):
                    raise _refused(
                        character, position, "an invisible or direction-changing character"
                    )


def _refused(character: str, position: int, what: str) -> PydanticCustomError:
    return PydanticCustomError(
        "text_character",
        "must not contain {character} ({what}), found at character {position}",
        {"character": f"U+{ord(character):04X}", "what": what, "position": position + 1},
    )


def is_unseen(character: str) -> bool:
    """A character that changes how text around it reads without being seen itself."""
    return character in _INVISIBLE or unicodedata.category(character) in _UNSEEN_CATEGORIES


# The rule of a string field that names none: one line of text (a search, a topic, a keyword).
LINE = TextRule()

# Text with line breaks and tabs: content, instructions, reasons, descriptions.
MultiLine = Annotated[str, TextRule(multi_line=True)]
# One line a reader sees as text, markup stripped: a title, an SEO title.
PlainText = Annotated[str, TextRule(plain=True)]
# Paragraphs a reader sees as text, markup stripped: an excerpt, a meta description.
PlainMultiLine = Annotated[str, TextRule(multi_line=True, plain=True)]
# The name of something (a job, a connection, a tag): plain text, every character seen.
Name = Annotated[str, TextRule(visible=True, plain=True)]
# A filename, storage path, slug, key, language tag or URL: kept as given, every character seen.
Identifier = Annotated[str, TextRule(visible=True)]
# A JSON object (seo_meta, a connection's config): every key one line, every string value may
# have line breaks, numbers finite, at most MAX_JSON_DEPTH deep.
JsonObject = Annotated[dict[str, Any], TextRule(multi_line=True)]


def plain_text(value: str) -> str:
    """`value` as plain text: tags and comments removed (script and style with their content),
    entities decoded to the characters they stand for, ends stripped. `<` and `&` stay where
    they are text ("a < b", "AT&T"); what remains never parses as a tag, so it is safe to
    escape once wherever HTML is written. Idempotent, short of markup escaped more than
    _MAX_PASSES times over (which loses its angle brackets instead)."""
    if _PLAIN_ALREADY.fullmatch(value):
        return value.strip()  # what the parse below would give back as it is (most text, fast)
    text = value
    for _ in range(_MAX_PASSES):
        stripped = html.unescape(nh3.clean(text, tags=set())).strip()
        if stripped == text:
            return stripped
        text = stripped
    # Escaped more times than any text is: whatever tags are left lose their brackets.
    return without_brackets(text)


def _plain_or_words(value: str) -> str:
    stripped = plain_text(value)
    if value.strip() and not stripped:
        # Nothing but markup (`<img src=x onerror=alert(1)>` as a title): what was typed is
        # kept as words, its brackets dropped, rather than refused or stored empty.
        return without_brackets(value)
    return stripped


def sent_as_text(value: Any) -> Any:
    """`value` (JSON-like: what an event carries out to listeners, webhooks and notifications)
    with every string in it, at any depth, as plain text: markup stripped as a `PlainText`
    input's is. A string without a `<` is left exactly as it is: ids, URLs, codes and text that
    holds no tag, whose entities must not be decoded (a URL's `&para=` is not a `¶`)."""
    if isinstance(value, str):
        return _plain_or_words(value) if "<" in value else value
    if isinstance(value, dict):
        return {key: sent_as_text(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [sent_as_text(item) for item in value]
    return value


def without_brackets(value: str) -> str:
    """`value`, its entities decoded, with no `<` or `>` left, so no part of it can read as a
    tag: `<img src=x>` -> `img src=x`."""
    text = value
    for _ in range(_MAX_PASSES):
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    return " ".join(text.replace("<", " ").replace(">", " ").split())


def cleaned(value: str, max_length: int) -> str:
    """A name we take from elsewhere and cannot answer with a 400 (an identity provider's claim),
    made fit to store and show: plain text, one line, without control, invisible or
    direction-changing characters, whitespace runs folded, at most `max_length` characters."""
    if value.isascii() and value.isprintable():
        visible = value  # no control, invisible or direction-changing character can be in it
    else:
        visible = "".join(
            " " if character.isspace() else character
            for character in value
            if character.isspace() or not (_REFUSED.match(character) or is_unseen(character))
        )
    return " ".join(plain_text(visible).split())[:max_length].rstrip()


def escaped(value: str) -> str:
    """Plain text as HTML text, for a receiver that reads the field as HTML (a WordPress title):
    `plain_text(value)` with `&`, `<` and `>` escaped. Quotes stay: the receiver escapes what it
    puts in an attribute, as it does for its own titles."""
    return html.escape(plain_text(value), quote=False)


def checked(value: Any, rule: TextRule, *, has_max: bool, has_min: bool) -> Any:
    """`value` (one field's, after its own validation) with every string in it held to `rule`
    (dict keys to one line, kept as given), every integer within MIN_INT..MAX_INT where the
    field declares no bound of its own on that side (`has_max`, `has_min`), every float finite,
    every instant and date in the years MIN_YEAR..MAX_YEAR, nesting at most MAX_JSON_DEPTH deep.
    Lists and dicts come back rebuilt (plain text may change a string in them); models are left
    alone: an `Input` checks its own fields. A refusal inside a list or dict says where
    (`seo_title: must not contain U+0000 ...`)."""
    if not isinstance(value, dict | list | tuple):  # most fields: no walk to set up
        return _leaf(value, rule, has_max, has_min)
    key_rule = replace(rule, multi_line=False, plain=False)

    def walk(node: Any, depth: int, where: str) -> Any:
        if isinstance(node, dict):
            _check_depth(depth)
            return {
                _located(key_rule.apply, key, _at(where, key)) if isinstance(key, str) else key: (
                    walk(item, depth + 1, _at(where, key))
                )
                for key, item in node.items()
            }
        if isinstance(node, list | tuple):
            _check_depth(depth)
            items = [walk(item, depth + 1, _at(where, index)) for index, item in enumerate(node)]
            return type(node)(items)
        return _located(lambda leaf: _leaf(leaf, rule, has_max, has_min), node, where)

    return walk(value, 0, "")


def _leaf(node: Any, rule: TextRule, has_max: bool, has_min: bool) -> Any:
    if isinstance(node, str):
        return rule.apply(node)
    if isinstance(node, bool):
        return node
    if isinstance(node, int):
        if not has_max and node > MAX_INT:
            raise PydanticCustomError("int_bound", "must be at most {limit}", {"limit": MAX_INT})
        if not has_min and node < MIN_INT:
            raise PydanticCustomError("int_bound", "must be at least {limit}", {"limit": MIN_INT})
    elif isinstance(node, float) and not math.isfinite(node):
        raise PydanticCustomError("float_finite", "must be a finite number")
    elif isinstance(node, date) and not MIN_YEAR <= node.year <= MAX_YEAR:
        # A date too: a range's previous period or its day after would leave Python's years.
        raise PydanticCustomError(
            "datetime_bound",
            "must be in the years {first} to {last}",
            {"first": MIN_YEAR, "last": MAX_YEAR},
        )
    return node


def _check_depth(depth: int) -> None:
    if depth >= MAX_JSON_DEPTH:
        raise PydanticCustomError(
            "json_depth", "must nest at most {depth} levels deep", {"depth": MAX_JSON_DEPTH}
        )


def _located(check: Any, value: Any, where: str) -> Any:
    """`check(value)`, its refusal prefixed with where in the field it is."""
    try:
        return check(value)
    except PydanticCustomError as error:
        if not where:
            raise
        raise PydanticCustomError(
            error.type,
            "{where}: " + error.message_template,
            {**(error.context or {}), "where": where},
        ) from None


def _at(where: str, step: str | int) -> str:
    """`where` one step down: `.key` into a dict, `[index]` into a list."""
    if isinstance(step, int):
        return f"{where}[{step}]"
    key = json.dumps(step)[1:-1]  # a key with a control character in it shows it escaped
    return f"{where}.{key}" if where else key
