"""Splitting extracted text into chunks for the search index.

Token-aware without downloading a tokenizer: tokens are counted with a local regex (words and
single punctuation marks), which tracks subword tokenizers closely enough to size chunks.

The text is read as Markdown blocks (headings, tables, prose); headings and code are CommonMark's
(markdown-it-py), so a setext heading (a line underlined with `===` or `---`) is one and a `#` line
inside a fenced or indented code block is not. Prose too long for one chunk is
split by `semchunk` at the most meaningful boundary it can find (blank lines, line breaks, sentence
ends, ...) with overlap between consecutive chunks. Then small neighbouring pieces are packed
together up to `max_tokens`. Two rules hold throughout:

- a heading is never the last thing in a chunk: it always shares a chunk with the text under it
  (room for it is reserved when that text is split);
- a heading always starts a chunk: a section is never packed into the chunk of the one before,
  so every chunk's heading path is that of its own text;
- a table is never split, unless it alone exceeds `max_tokens`: then it is split between rows and
  every continuation repeats the header row(s);
- a list with a lead-in (a sentence ending with ":" right before its items, in any source) is kept
  with it the same way: whole, or split between items with the lead-in repeated.

Offsets: `source[c.char_start:c.char_end] == c.text` for every chunk, except the continuation of
a table (or list) split by rows, whose text is the table's header row(s) (the list's lead-in), a
newline, then that span. So
`c.text.endswith(source[c.char_start:c.char_end])` always holds. `heading` is the heading path
in effect where the chunk's text starts ("Guide > Install"), kept apart from the text.

Overlap happens only inside one run of prose that had to be split; pieces packed across a heading
or a table do not overlap. Output is deterministic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Literal, cast

from markdown_it import MarkdownIt
from semchunk.semchunk import Chunker, chunkerify

from contentplatform.ai.tokens import count_tokens

_TABLE_ROW = re.compile(r"[ \t]*\|")
_TABLE_SEPARATOR = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")
_FENCE = re.compile(r" {0,3}(```|~~~)")
_ITEM = re.compile(r"[ \t]{0,3}(?:[-*+•]|\d{1,9}[.)])[ \t]+\S")
_SENTENCE_BREAK = re.compile(r"[.!?][\"')\]\u201d\u2019]*\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    ordinal: int
    text: str
    token_count: int
    char_start: int
    char_end: int
    heading: str | None = None


@dataclass(slots=True)
class _Block:
    kind: Literal["heading", "table", "list", "text"]
    start: int
    end: int
    level: int = 0
    title: str = ""
    # For tables: (start, end) of each row; for lists, of the lead-in then each item.
    rows: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Piece:
    """A span that goes into one chunk whole."""

    start: int
    end: int
    tokens: int
    heading: str | None
    sticky: bool = False  # a heading: must share its chunk with what follows
    prefix: str = ""  # a table continuation's repeated header


def chunk_text(text: str, *, max_tokens: int = 512, overlap_tokens: int = 64) -> list[Chunk]:
    if max_tokens < 1 or not 0 <= overlap_tokens < max_tokens:
        raise ValueError("need max_tokens >= 1 and 0 <= overlap_tokens < max_tokens")
    pieces = _pieces(text, _blocks(text), max_tokens, overlap_tokens)
    return [_chunk(text, ordinal, group) for ordinal, group in enumerate(_pack(pieces, max_tokens))]


@cache
def _commonmark() -> MarkdownIt:
    # Only the block structure is read: inline parsing (emphasis, links) is skipped.
    return MarkdownIt("commonmark").disable("inline")


def _structure(text: str) -> tuple[dict[int, tuple[int, int, str]], set[int]]:
    """CommonMark's reading of `text`: its top-level headings, by first line, as (line after
    the heading, level, title), and the lines of its code blocks, fenced or indented (HTML
    blocks too: nothing in them is a heading or a table)."""
    headings: dict[int, tuple[int, int, str]] = {}
    code: set[int] = set()
    tokens = _commonmark().parse(text)
    for index, token in enumerate(tokens):
        if token.map is None:
            continue
        first, after = token.map
        if token.type == "heading_open" and token.level == 0:
            title = tokens[index + 1].content.strip()
            if title:
                headings[first] = (after, int(token.tag[1]), " ".join(title.split()))
        elif token.type in ("fence", "code_block", "html_block"):
            code.update(range(first, after))
    return headings, code


def _blocks(text: str) -> list[_Block]:
    """Headings (ATX or setext, as CommonMark reads them), tables (consecutive `|` lines) and
    runs of prose between them, trimmed of surrounding whitespace. Nothing inside a code block
    is a heading or table."""
    headings, code = _structure(text)
    blocks: list[_Block] = []
    position = 0
    heading_until = -1  # the line after the heading being read (a setext heading has two)
    previous_line = ""  # kind of the previous line: "table", "text", "heading" or "" (blank)
    for number, line in enumerate(text.split("\n")):
        start = position
        position += len(line) + 1
        content = line.rstrip()
        if not content:
            previous_line = ""
            continue
        start += len(content) - len(content.lstrip())
        end = start + len(content.strip())
        if number < heading_until:  # a setext heading's next line: its title goes on, or its rule
            blocks[-1].end = end
            continue
        if number in headings:
            heading_until, level, title = headings[number]
            blocks.append(_Block("heading", start, end, level, title))
            previous_line = "heading"
        elif number not in code and _TABLE_ROW.match(content):
            if previous_line == "table":
                blocks[-1].end = end
                blocks[-1].rows.append((start, end))
            else:
                blocks.append(_Block("table", start, end, rows=[(start, end)]))
            previous_line = "table"
        else:
            # Prose continues across blank lines, up to the next heading or table.
            if blocks and blocks[-1].kind == "text":
                blocks[-1].end = end
            else:
                blocks.append(_Block("text", start, end))
            previous_line = "text"
    return [part for block in blocks for part in _lists(text, block)]


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each line of text[start:end], trailing whitespace left out."""
    lines = []
    for line in text[start:end].split("\n"):
        lines.append((start, start + len(line.rstrip())))
        start += len(line) + 1
    return lines


def _lists(text: str, block: _Block) -> list[_Block]:
    """A prose block with its lists that have a lead-in carved out: [prose, list, prose, ...].
    The lead-in is the last sentence of the line (or paragraph) ending with ":" just before the
    items (a blank line between is allowed); the list runs over the items, their continuation
    lines and blank lines between items."""
    if block.kind != "text" or ":" not in text[block.start : block.end]:
        return [block]
    lines = _lines(text, block.start, block.end)
    blank = [a == b for a, b in lines]
    item = [bool(_ITEM.match(text, a, b)) and a != b for a, b in lines]
    fence = []
    in_fence = False
    for a, b in lines:
        if _FENCE.match(text, a, b):
            in_fence = not in_fence
        fence.append(in_fence)
    parts: list[_Block] = []
    cursor = block.start  # the start of what is not yet in a part
    index = 0
    while index < len(lines):
        a, b = lines[index]
        first = index + 1 + (index + 1 < len(lines) and blank[index + 1])
        is_lead_in = (
            not fence[index]
            and not item[index]
            and b > a
            and text[b - 1] == ":"
            and first < len(lines)
            and item[first]
        )
        if not is_lead_in:
            index += 1
            continue
        paragraph = index
        while paragraph > 0 and not blank[paragraph - 1] and not item[paragraph - 1]:
            paragraph -= 1
        lead_start = max(lines[paragraph][0], cursor)
        for found in _SENTENCE_BREAK.finditer(text, lead_start, b - 1):
            lead_start = found.end()
        rows = [(lead_start, b)]
        last = first
        while last < len(lines):
            if item[last]:
                rows.append(lines[last])
            elif not blank[last]:
                # A continuation line: indented, or right under the item (Markdown's lazy one).
                indented = text[lines[last][0]] in " \t"
                if not (indented or not blank[last - 1]) or fence[last]:
                    break
                rows[-1] = (rows[-1][0], lines[last][1])
            elif not (
                last + 1 < len(lines)
                and (item[last + 1] or (not blank[last + 1] and text[lines[last + 1][0]] in " \t"))
            ):
                break
            last += 1
        before = text[cursor:lead_start].rstrip()
        if before.strip():
            parts.append(
                _Block("text", cursor + len(before) - len(before.lstrip()), cursor + len(before))
            )
        parts.append(_Block("list", lead_start, rows[-1][1], rows=rows))
        cursor = rows[-1][1]
        index = last
    rest = text[cursor : block.end]
    if rest.strip():
        parts.append(
            _Block("text", cursor + len(rest) - len(rest.lstrip()), cursor + len(rest.rstrip()))
        )
    return parts


def _pieces(text: str, blocks: list[_Block], max_tokens: int, overlap: int) -> list[_Piece]:
    pieces: list[_Piece] = []
    path: list[tuple[int, str]] = []  # (level, title) of the headings in effect
    pending = 0  # tokens of the headings waiting for the text under them
    for block in blocks:
        tokens = count_tokens(text[block.start : block.end])
        if block.kind == "heading":
            while path and path[-1][0] >= block.level:
                path.pop()
            path.append((block.level, block.title))
            if tokens <= max_tokens:
                pieces.append(_Piece(block.start, block.end, tokens, _path(path), sticky=True))
                pending += tokens
            else:  # not a real heading: a huge line that happens to start with "#"
                pieces += _prose(text, block.start, block.end, max_tokens, 0, _path(path))
            continue
        if pending > max_tokens // 2:
            # Headings this long are not worth shrinking every chunk for: let them go free.
            pieces = _unstick(pieces)
            pending = 0
        budget, heading = max_tokens - pending, _path(path)
        if block.kind in ("table", "list"):
            pieces += _table(text, block, tokens, budget, heading)
        elif tokens <= budget:
            pieces.append(_Piece(block.start, block.end, tokens, heading))
        else:
            pieces += _prose(text, block.start, block.end, budget, overlap, heading)
        pending = 0
    return pieces


def _path(path: list[tuple[int, str]]) -> str | None:
    return " > ".join(title for _, title in path) or None


def _unstick(pieces: list[_Piece]) -> list[_Piece]:
    freed = list(pieces)
    for index in range(len(freed) - 1, -1, -1):
        if not freed[index].sticky:
            break
        piece = freed[index]
        freed[index] = _Piece(piece.start, piece.end, piece.tokens, piece.heading)
    return freed


@cache
def _chunker(budget: int) -> Chunker:
    # memoize=False: semchunk's default memo is an unbounded cache of every text it counted,
    # which would grow for the life of a worker process.
    return chunkerify(count_tokens, chunk_size=budget, memoize=False)


def _prose(
    text: str, start: int, end: int, budget: int, overlap: int, heading: str | None
) -> list[_Piece]:
    """semchunk's split of text[start:end] into spans of at most `budget` tokens."""
    # An overlap over half the budget would only shrink semchunk's internal subchunks.
    overlap = min(overlap, budget // 2)
    result = _chunker(budget)(text[start:end], offsets=True, overlap=overlap or None)
    _, offsets = cast(tuple[list[str], list[tuple[int, int]]], result)
    return [
        _Piece(start + a, start + b, count_tokens(text[start + a : start + b]), heading)
        for a, b in offsets
    ]


def _table(text: str, block: _Block, tokens: int, budget: int, heading: str | None) -> list[_Piece]:
    """The whole table (or list), or if it exceeds the budget, groups of rows (items) under a
    repeated header (lead-in)."""
    if tokens <= budget:
        return [_Piece(block.start, block.end, tokens, heading)]
    rows = block.rows
    has_separator = (
        block.kind == "table"
        and len(rows) > 1
        and _TABLE_SEPARATOR.fullmatch(text[rows[1][0] : rows[1][1]])
    )
    header_end = rows[1 if has_separator else 0][1]
    header = text[block.start : header_end]
    header_tokens = count_tokens(header)
    body = rows[2 if has_separator else 1 :]
    row_tokens = [count_tokens(text[start:end]) for start, end in body]
    if not body or header_tokens > budget // 2 or header_tokens + max(row_tokens) > budget:
        # No row boundary makes pieces that fit: split it like prose.
        return _prose(text, block.start, block.end, budget, 0, heading)
    pieces: list[_Piece] = []
    start, end, prefix, total = block.start, header_end, "", header_tokens
    for (row_start, row_end), row in zip(body, row_tokens, strict=True):
        if total + row > budget:
            pieces.append(_Piece(start, end, total, heading, prefix=prefix))
            # A continuation's tokens include the header it repeats.
            start, prefix, total = row_start, header, header_tokens
        end = row_end
        total += row
    pieces.append(_Piece(start, end, total, heading, prefix=prefix))
    return pieces


def _pack(pieces: list[_Piece], max_tokens: int) -> list[list[_Piece]]:
    """Greedily put consecutive pieces together up to `max_tokens`, never ending a chunk with a
    heading that has text after it."""
    groups: list[list[_Piece]] = []
    current: list[_Piece] = []
    tokens = 0
    for piece in pieces:
        joins = current and (
            not piece.prefix  # a continuation's text is not contiguous with what precedes it
            and piece.start >= current[-1].end  # overlapping pieces of split prose stay apart
            and tokens + piece.tokens <= max_tokens
            # A heading starts a chunk, unless the chunk so far is headings (theirs is its text).
            and not (piece.sticky and not current[-1].sticky)
        )
        if not joins and current:
            # Close the chunk, but carry trailing headings over to the text they belong to (the
            # room for them was reserved when that text was split).
            keep = len(current)
            while keep > 1 and current[keep - 1].sticky:
                keep -= 1
            groups.append(current[:keep])
            current = current[keep:]
            tokens = sum(p.tokens for p in current)
        current.append(piece)
        tokens += piece.tokens
    if current:
        groups.append(current)
    return groups


def _chunk(text: str, ordinal: int, group: list[_Piece]) -> Chunk:
    start, end = group[0].start, group[-1].end
    body = text[start:end]
    content = f"{group[0].prefix}\n{body}" if group[0].prefix else body
    heading = next((piece.heading for piece in group if not piece.sticky), group[-1].heading)
    return Chunk(ordinal, content, count_tokens(content), start, end, heading)


__all__ = ["Chunk", "chunk_text"]
