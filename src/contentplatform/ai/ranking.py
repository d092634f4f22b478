"""Reading sources into sentences and ranking them: what the offline writer writes from.

A source's text is read line by line: `# heading` lines and code fences are dropped, Markdown
emphasis, links and stray `[n]` footnote markers removed, bullet lines and table rows become list
items (a row reads "Starter — price: $29, seats: 3", labelled by the table's header row), and the
remaining prose is split into sentences by a regex that knows common abbreviations ("e.g.", "Dr.",
"U.S."). Sentences are ranked by the stemmed words they share with a query (light suffix
stripping, so "pricing" meets "price"), with a bonus for the more relevant sources (they arrive
best first); near-duplicates are chosen only once. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from contentplatform.ai.base import Source


def wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Typographic quotes, spelled as escapes so the source shows which is which.
CLOSING = "\"'\u201d\u2019)]"
_OPENING = "\"'\u201c\u2018(["

STOPWORDS = wordset(
    "a about above after again against all also am an and any are as at be because been before "
    "being below between both but by can could did do does doing down during each either every "
    "few for from further had has have having he her here hers him his how however i if in into "
    "is it its itself just let may me might more most must my no nor not now of off on once only "
    "or other our ours out over own per same shall she should so some such than that the their "
    "theirs them then there these they this those through to too under until up upon us very via "
    "was we were what when where whether which while who whom why will with within without would "
    "yet you your yours"
)
# Words written with a final period that rarely end a sentence.
_ABBREVIATIONS = wordset(
    "approx dept dr e.g eg esp est fig i.e ie inc incl jr ltd mr mrs ms no nos prof sr st vs "
    "ca cf al co corp"
)
WORD = re.compile(r"\w+")
_HEADING_LINE = re.compile(r"#{1,6}(\s|$)")
_FENCE = re.compile(r"(```|~~~)")
_TABLE_SEPARATOR = re.compile(r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?")
_BULLET = re.compile(r"(?:[-*+•▪◦‣]|\d{1,2}[.)])\s+(.*)")
_BOUNDARY = re.compile(rf"([.!?…]+[{re.escape(CLOSING)}]*)\s+")
_INLINE = (
    (re.compile(r"!\[[^\]]*\]\([^)]*\)"), ""),  # images
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # links keep their text
    (re.compile(r"\*\*|__|`"), ""),
    (re.compile(r"(?<!\w)[*_](\S(?:[^*_]*\S)?)[*_](?!\w)"), r"\1"),
    (re.compile(r"\s*\[\d+\]"), ""),  # the document's own footnote markers would read as citations
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s", "e")


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str  # plain text; prose ends with terminal punctuation, items may not
    ref: int
    rank: int  # index of its source in the request (0: most relevant)
    position: int  # order within its source
    item: bool  # a list item or a table row rather than prose
    words: frozenset[str] = field(compare=False)  # stemmed content words


# --- sentences -------------------------------------------------------------------------------


def sentences(selected: Iterable[Source], ranking: Sequence[Source]) -> list[Sentence]:
    """The sentences and list items of `selected`, ranked by position in `ranking`."""
    ranks: dict[int, int] = {}
    for index, source in enumerate(ranking):
        ranks.setdefault(source.ref, index)
    result: list[Sentence] = []
    for source in selected:
        rank = ranks.get(source.ref, len(ranking))
        for position, (text, item) in enumerate(_units(source.text)):
            result.append(sentence(text, source.ref, rank, position, item))
    return result


def sentence(text: str, ref: int, rank: int, position: int, item: bool) -> Sentence:
    words = frozenset(stem(word) for word in WORD.findall(text.casefold()) if _meaningful(word))
    return Sentence(text, ref, rank, position, item, words)


def _units(text: str) -> list[tuple[str, bool]]:
    """(text, is_item) for each sentence of prose and each list item or table row."""
    units: list[tuple[str, bool]] = []
    paragraph: list[str] = []
    header: list[str] | None = None
    in_fence = False

    def flush() -> None:
        if paragraph:
            units.extend((s, False) for s in split_sentences(inline(" ".join(paragraph))))
            paragraph.clear()

    lines = [raw.strip() for raw in text.splitlines()]
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence or _HEADING_LINE.match(line):
            flush()
            continue
        if not line:
            flush()
            header = None
            continue
        if line.startswith("|"):
            flush()
            if _TABLE_SEPARATOR.fullmatch(line):
                continue
            cells = [inline(cell) for cell in line.strip("|").split("|")]
            if header is None:
                header = cells
            elif row := _row(header, cells):
                units.append((row, True))
            continue
        header = None
        bullet = _BULLET.fullmatch(line)
        if bullet:
            flush()
            item = inline(bullet[1])
            if len(item.split()) >= 2:
                units.append((item, True))
            continue
        if _title_line(line, paragraph, lines[index + 1] if index + 1 < len(lines) else ""):
            flush()
            continue
        paragraph.append(line.lstrip("> "))
    flush()
    # A fragment of two or three words is a caption or a label, and an FAQ's question is not a
    # statement: neither is something to write from.
    return [
        (text, item)
        for text, item in units
        if item or (len(text.split()) >= 4 and not text.endswith("?"))
    ]


def _title_line(line: str, paragraph: list[str], following: str) -> bool:
    """A heading in text without Markdown (PDF, plain text): a short line with no final
    punctuation, between the end of a sentence and the start of another."""
    return (
        len(line.split()) <= 8
        and line[-1] not in ".!?…:;,-"
        and not line[0].islower()
        and (not paragraph or paragraph[-1][-1] in ".!?…:")
        and (not following or not following[0].islower())
    )


def _row(header: list[str], cells: list[str]) -> str:
    """A table row as a list item: "Starter — price: $29, seats: 3"."""
    if not cells or not cells[0]:
        return ""
    details = [
        f"{name.lower() if name[1:].islower() else name}: {cell}" if name else cell
        for name, cell in zip(header[1:], cells[1:], strict=False)
        if cell
    ]
    return f"{cells[0]} — {', '.join(details)}" if details else cells[0]


def inline(text: str) -> str:
    for pattern, replacement in _INLINE:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        following = text[match.end() : match.end() + 1]
        if not (following.isupper() or following.isdigit() or following in _OPENING):
            continue
        if match[1] == ".":
            words = text[start : match.start()].split()
            last = words[-1].casefold() if words else ""
            # "e.g.", "Dr.", an initial ("J. Smith") or "U.S." does not end a sentence.
            if last in _ABBREVIATIONS or re.fullmatch(r"[^\W\d_](\.[^\W\d_])*", last):
                continue
        sentences.append(text[start : match.end(1)].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return [s for s in sentences if any(c.isalnum() for c in s)]


# --- scoring ---------------------------------------------------------------------------------


def query(*parts: tuple[object, float], extend: dict[str, float] | None = None) -> dict[str, float]:
    """Stemmed word -> weight (the highest weight a word is given)."""
    query = dict(extend or {})
    for text, weight in parts:
        if not isinstance(text, str):
            continue
        for word in WORD.findall(text.casefold()):
            if _meaningful(word):
                root = stem(word)
                query[root] = max(weight, query.get(root, 0.0))
    return query


def _score(sentence: Sentence, query: dict[str, float]) -> float:
    overlap = sum(weight for word, weight in query.items() if word in sentence.words)
    length = len(sentence.text.split())
    fit = 1.0 if 6 <= length <= 40 or (sentence.item and length >= 2) else 0.6
    return (overlap + 0.5) * fit + 1.0 / (1 + sentence.rank) + 0.2 / (1 + sentence.position)


def pick(
    sentences: Sequence[Sentence],
    query: dict[str, float],
    count: int,
    *,
    avoid: Sequence[Sentence] = (),
    preferred: Sequence[Sentence] = (),
    per_source: int | None = None,
    prose: bool = False,
) -> list[Sentence]:
    """The best `count` sentences, best first: no near-duplicates of each other or of `avoid`,
    `preferred` ones first, at most `per_source` from one source, only prose if asked (falling
    back to list items when there is no prose)."""
    pool = [s for s in sentences if not s.item] if prose else list(sentences)
    pool = pool or list(sentences)
    ranked = sorted(pool, key=lambda s: (s not in preferred, -_score(s, query), s.rank, s.position))
    chosen: list[Sentence] = []
    per: Counter[int] = Counter()
    for sentence in ranked:
        if len(chosen) == count:
            break
        if per_source is not None and per[sentence.rank] >= per_source:
            continue
        if any(similar(sentence, other) for other in (*chosen, *avoid)):
            continue
        chosen.append(sentence)
        per[sentence.rank] += 1
    return chosen


def similar(a: Sentence, b: Sentence) -> bool:
    if a.text in b.text or b.text in a.text:
        return True
    union = a.words | b.words
    return bool(union) and len(a.words & b.words) / len(union) >= 0.7


def _meaningful(word: str) -> bool:
    return word not in STOPWORDS and (len(word) > 1 or word.isdigit())


def stem(word: str) -> str:
    """Light suffix stripping, so "pricing", "prices" and "priced" meet."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                continue
            return word[: -len(suffix)]
    return word
