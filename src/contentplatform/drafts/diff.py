"""Word-level diffs of a draft's revisions, HTML-aware (drafts.compareVersions).

The text is cut into tokens: a whole tag (with its attributes, never split), a run of
whitespace, or a word (a run of anything else). Each tag or word is then compared with the
whitespace after it attached, and only its tag or word decides equality: HTML reads any run of
whitespace as one space, and a match made of spaces alone is no match. `difflib.SequenceMatcher`
(stdlib) compares these units. What comes back is a list of operations, `equal` / `delete` /
`insert`, whose texts joined in order give the newer text (equal + insert) exactly, and the
older one (equal + delete) but for how long a run of whitespace is where both have one (an
equal part has the newer's run; where only one side has whitespace, it is deleted or inserted,
so no two words ever run together). Tags stay whole in every operation, but an operation may
open a tag another one closes (a paragraph split in two inserts `</p><p>`).

A text long and repetitive enough to make the comparison slow (past `MAX_WORK` steps: some
100,000 words of one article) is shown as one deletion and one insertion of the part between
the ends the two share.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

Op = Literal["equal", "insert", "delete"]

# A comment, or a tag whose attribute values may hold `<` and `>` inside their quotes.
_TAG = r"<!--.*?-->|<[A-Za-z/!?](?:[^<>\"']|\"[^\"]*\"|'[^']*')*>"
_TOKEN = re.compile(
    rf"{_TAG}"
    r"|\s+"
    # A word runs up to whitespace or a `<` that starts a tag; a stray `<` (a broken tag,
    # `a < b` in plain text) is a word of its own, so every character lands in some token.
    r"|(?:[^\s<]|<(?![A-Za-z/!?]))+|<",
    re.DOTALL,
)
# Plain text (a title, an excerpt) has no tags: `<b>` there is text.
_PLAIN_TOKEN = re.compile(r"\s+|\S+")
_IS_TAG = re.compile(_TAG, re.DOTALL)
# A token counts as a word when it holds a letter or a digit (not a lone dash or bullet).
_WORDY = re.compile(r"\w")
# How many comparisons SequenceMatcher's search may make before the diff falls back to one
# replaced block. Measured: a 20,000-word article edited in 500 places is some 1.3 million,
# answered in about 0.4 s.
MAX_WORK = 5_000_000
# SequenceMatcher's autojunk rule: in a sequence of at least 200 units, one seen more than 1 %
# of the time never starts a match (it may still extend one), which keeps its search fast.
_POPULAR_FROM = 200


@dataclass(frozen=True)
class Change:
    op: Op
    text: str


@dataclass(frozen=True)
class Stats:
    words_added: int
    words_removed: int


def tokenize(text: str, *, html: bool = True) -> list[str]:
    """`text` as whole tags, whitespace runs and words (`html=False`: whitespace runs and
    words only): `"".join(tokenize(text)) == text`."""
    return (_TOKEN if html else _PLAIN_TOKEN).findall(text)


def is_tag(token: str) -> bool:
    return _IS_TAG.fullmatch(token) is not None


def is_word(token: str) -> bool:
    return not token.isspace() and not is_tag(token) and _WORDY.search(token) is not None


def word_count(text: str) -> int:
    return sum(1 for token in tokenize(text) if is_word(token))


def compare(before: str, after: str, *, html: bool = True) -> list[Change]:
    """The operations that turn `before` into `after` (HTML, or plain text with `html=False`):
    none empty, adjacent ones of a kind merged, a replacement as its deletion then its
    insertion."""
    changes: list[Change] = []
    for change in _operations(_units(before, html), _units(after, html)):
        if not change.text:
            continue
        if changes and changes[-1].op == change.op:
            changes[-1] = Change(change.op, changes[-1].text + change.text)
        else:
            changes.append(change)
    return changes


def stats(changes: Sequence[Change]) -> Stats:
    """The words the insertions add and the deletions remove."""
    return Stats(
        words_added=sum(word_count(c.text) for c in changes if c.op == "insert"),
        words_removed=sum(word_count(c.text) for c in changes if c.op == "delete"),
    )


def retained_pct(original: str, edited: str) -> float | None:
    """The share of `original`'s words that `edited` keeps in place (0-100, one decimal); None
    when `original` has no words."""
    total = word_count(original)
    if total == 0:
        return None
    kept = sum(word_count(c.text) for c in compare(original, edited) if c.op == "equal")
    return round(100 * kept / total, 1)


def _units(text: str, html: bool) -> list[str]:
    """Each tag or word with the whitespace after it; whitespace opening the text is a unit of
    its own."""
    units: list[str] = []
    for token in tokenize(text, html=html):
        if token.isspace() and units:
            units[-1] += token
        else:
            units.append(token)
    return units


def _operations(a: list[str], b: list[str]) -> list[Change]:
    a_keys, b_keys = [unit.rstrip() for unit in a], [unit.rstrip() for unit in b]
    # The common ends first: most edits touch a small part, and these cost one pass.
    shorter = min(len(a), len(b))
    prefix = 0
    while prefix < shorter and a_keys[prefix] == b_keys[prefix]:
        prefix += 1
    suffix = 0
    while suffix < shorter - prefix and a_keys[-1 - suffix] == b_keys[-1 - suffix]:
        suffix += 1
    a_end, b_end = len(a) - suffix, len(b) - suffix
    middle_a, middle_b = a_keys[prefix:a_end], b_keys[prefix:b_end]
    changes = _equal(a[:prefix], b[:prefix])
    if _work(middle_a, middle_b) > MAX_WORK:
        changes.append(Change("delete", "".join(a[prefix:a_end])))
        changes.append(Change("insert", "".join(b[prefix:b_end])))
    else:
        matcher = SequenceMatcher(None, middle_a, middle_b)
        for tag, a_from, a_to, b_from, b_to in matcher.get_opcodes():
            a_from, a_to, b_from, b_to = (n + prefix for n in (a_from, a_to, b_from, b_to))
            if tag == "equal":
                changes += _equal(a[a_from:a_to], b[b_from:b_to])
                continue
            changes.append(Change("delete", "".join(a[a_from:a_to])))
            changes.append(Change("insert", "".join(b[b_from:b_to])))
    changes += _equal(a[a_end:], b[b_end:])
    return changes


def _equal(a: list[str], b: list[str]) -> list[Change]:
    """Units equal but maybe for their whitespace: the newer's, unless only one side has any
    (then that whitespace is a deletion or an insertion, and words never run together)."""
    changes = []
    for older, newer in zip(a, b, strict=True):
        if older == newer or (older[-1:].isspace() and newer[-1:].isspace()):
            changes.append(Change("equal", newer))
            continue
        token = newer.rstrip()
        changes.append(Change("equal", token))
        changes.append(Change("delete", older[len(token) :]))
        changes.append(Change("insert", newer[len(token) :]))
    return changes


def _work(a: Sequence[str], b: Sequence[str]) -> int:
    """About how many comparisons SequenceMatcher's longest-match search makes: for each unit
    of `a`, the places in `b` that could start a match with it (popular units start none)."""
    counts = Counter(b)
    if len(b) >= _POPULAR_FROM:
        popular = len(b) // 100 + 1
        return sum(n for unit in a if (n := counts[unit]) <= popular)
    return sum(counts[unit] for unit in a)
