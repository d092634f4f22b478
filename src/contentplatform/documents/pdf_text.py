"""The text of a PDF, its structure brought back from where pypdf says each run of text is:
lines, tables, headings, list items and paragraphs (documents/parsing.py dispatches here)."""

from __future__ import annotations

import io
import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pypdf
from pypdf import PasswordType

from contentplatform.documents import extraction

# pypdf reads the text; its text visitor reports each run of text with its position, font and
# size, from which the structure comes back: lines (runs at one height), tables (rows of
# separately placed cells whose columns line up), headings (a size notably above the body's, or
# a short bold line at body size), list items (a bullet or a number) and paragraphs reflowed
# from their lines. pdfplumber finds tables itself but took 15-30 times as long per page.


@dataclass(slots=True)
class _PdfRun:
    text: str
    x: float
    y: float
    size: float
    bold: bool


@dataclass(slots=True)
class _PdfLine:
    page: int
    x: float
    y: float
    size: float  # the size most of its characters are set in
    bold: bool  # every character bold
    text: str
    cells: list[tuple[float, str]]  # (x, text) of each separately placed part


_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
# Bullets: round, square, triangle, arrow and check marks, en and em dashes, - * +.
_BULLET = re.compile(
    "[\u2022\u25cf\u25e6\u25aa\u25ab\u2023\u2043\u2219\u00b7\u25a0\u25a1\u27a2\u25ba\u2713"
    r"\u2013\u2014\-*+]\s+(?=\S)"
)
_NUMBERED = re.compile(r"(?:\d{1,3}|[a-zA-Z])[.)]\s+(?=\S)")
_SENTENCE_END = re.compile(r"[.!?:;][\"'\u201d\u2019)\]]*$")
_HYPHENATED = re.compile(r"([^\W\d_]+)[-\u00ad]$")
HEADING_SIZE_RATIO = 1.15  # a size this much above the body's makes a heading
HEADING_MAX_WORDS = 20
BOLD_HEADING_MAX_WORDS = 12


def extract(data: bytes) -> str:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # pypdf already tried the empty password; files protected only against editing open.
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise extraction.ExtractionError("The PDF is encrypted and cannot be read.")
        pages = [_pdf_lines(number, page) for number, page in enumerate(reader.pages)]
        lines = _without_furniture(pages)
    except extraction.ExtractionError:
        raise
    except pypdf.errors.FileNotDecryptedError as error:
        raise extraction.ExtractionError("The PDF is encrypted and cannot be read.") from error
    except Exception as error:
        # pypdf raises many kinds of errors on damaged files (not only PdfReadError); whatever
        # it is, the cause is the file, and the chained exception keeps the detail for the logs.
        raise extraction.ExtractionError(
            "The PDF could not be read (the file may be damaged)."
        ) from error
    text = extraction.tidy(extraction.join_blocks(_PdfLayout(lines).blocks()), collapse_spaces=True)
    if not text:
        raise extraction.ExtractionError(
            "The PDF has no extractable text (it may be scanned images)."
        )
    return text


# A page number alone on its line: "12", "- 12 -", "Page 12", "12 of 40", "iv".
_PAGE_NUMBER = re.compile(
    r"(?:page\s+)?[-\u2013\u2014]?\s*(?:\d{1,4}|[ivxlc]{1,7})\s*[-\u2013\u2014]?(?:\s+of\s+\d{1,4})?",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
# Lines at a page's top or bottom that are looked at as running headers and footers, and the
# most words one has (a title, a chapter's name; a line of prose is longer).
FURNITURE_LINES = 2
RUNNING_HEADER_MAX_WORDS = 10


def _without_furniture(pages: list[list[_PdfLine]]) -> list[_PdfLine]:
    """The document's lines without what is page furniture, not content: page numbers, running
    headers and footers (a short line at a page's top or bottom whose text, numbers aside,
    recurs so on a third of the pages, at least three) and the entries of a table of contents."""

    def edges(page: list[_PdfLine]) -> list[_PdfLine]:
        ordered = sorted(page, key=lambda line: -line.y)  # top first
        return ordered[:FURNITURE_LINES] + ordered[-FURNITURE_LINES:]

    seen: Counter[str] = Counter()
    sizes: Counter[float] = Counter()
    for page in pages:
        seen.update({_DIGITS.sub("#", line.text.lower()) for line in edges(page)})
        for line in page:
            sizes[line.size] += len(line.text)
    recurring = max(3, len(pages) // 3)
    # A document's title recurs as its running header: the title itself is set larger.
    body = sizes.most_common(1)[0][0] if sizes else 0.0
    kept: list[_PdfLine] = []
    for page in pages:
        furniture = {
            id(line)
            for line in edges(page)
            if _PAGE_NUMBER.fullmatch(line.text.strip())
            or (
                seen[_DIGITS.sub("#", line.text.lower())] >= recurring
                and line.size < body * HEADING_SIZE_RATIO
                and len(line.text.split()) <= RUNNING_HEADER_MAX_WORDS
            )
        }
        kept += [
            line
            for line in page
            if id(line) not in furniture and not extraction.is_toc_entry(line.text)
        ]
    return kept


def _is_bold(font: Any) -> bool:
    if not font:
        return False
    if _BOLD_FONT.search(str(font.get("/BaseFont", ""))):
        return True
    descriptor = font.get("/FontDescriptor")
    try:
        descriptor = descriptor.get_object() if descriptor is not None else None
        weight = float(descriptor.get("/FontWeight", 0)) if descriptor else 0.0
        flags = int(descriptor.get("/Flags", 0)) if descriptor else 0
    except (AttributeError, TypeError, ValueError):
        return False
    return weight >= 600 or bool(flags & (1 << 18))  # ForceBold


def _pdf_runs(page: Any) -> list[_PdfRun]:
    runs: list[_PdfRun] = []

    def visit(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        if not text:
            return
        # Where the run starts on the page, and its size there: the text matrix times the
        # current transformation matrix.
        a, b, c, d, e, f = tm
        m = [
            a * cm[0] + b * cm[2],
            a * cm[1] + b * cm[3],
            c * cm[0] + d * cm[2],
            c * cm[1] + d * cm[3],
            e * cm[0] + f * cm[2] + cm[4],
            e * cm[1] + f * cm[3] + cm[5],
        ]
        scale = math.hypot(m[2], m[3]) or 1.0
        runs.append(_PdfRun(text, m[4], m[5], round(size * scale, 1), _is_bold(font)))

    page.extract_text(visitor_text=visit)
    return runs


def _pdf_lines(number: int, page: Any) -> list[_PdfLine]:
    """The page's runs gathered into lines, in the order the page draws them."""
    groups: list[list[_PdfRun]] = []
    for run in _pdf_runs(page):
        parts = run.text.split("\n")
        for index, part in enumerate(parts):
            y = run.y - index * run.size * 1.2  # a line break inside a run: a guess below it
            if not part.strip():
                continue
            piece = _PdfRun(part, run.x, y, run.size, run.bold)
            last = groups[-1][-1] if groups else None
            same_line = (
                last is not None
                and index == 0
                and abs(last.y - y) <= 0.4 * max(last.size, run.size, 1.0)
            )
            if same_line:
                groups[-1].append(piece)
            else:
                groups.append([piece])
    return [_pdf_line(number, group) for group in groups]


def _pdf_line(number: int, runs: list[_PdfRun]) -> _PdfLine:
    sizes: Counter[float] = Counter()
    for run in runs:
        sizes[run.size] += len(run.text.strip())
    cells: list[tuple[float, str]] = []
    for run in runs:
        # pypdf starts a run with a space where it was placed apart from the previous one.
        if cells and not (run.x > cells[-1][0] + 0.5 and run.text[:1].isspace()):
            cells[-1] = (cells[-1][0], cells[-1][1] + run.text)
        else:
            cells.append((run.x, run.text))
    return _PdfLine(
        page=number,
        x=runs[0].x,
        y=runs[0].y,
        size=sizes.most_common(1)[0][0],
        bold=all(run.bold for run in runs if run.text.strip()),
        text=extraction.inline("".join(run.text for run in runs)),
        cells=[(x, extraction.inline(text)) for x, text in cells],
    )


class _PdfLayout:
    """Blocks (kind, Markdown text) from a document's lines."""

    def __init__(self, lines: list[_PdfLine]) -> None:
        self.lines = lines
        self.tables = self._find_tables()
        in_tables = {index for start, end, _ in self.tables.values() for index in range(start, end)}
        prose = [line for index, line in enumerate(lines) if index not in in_tables]
        sizes: Counter[float] = Counter()
        bold: Counter[float] = Counter()
        for line in prose:
            sizes[line.size] += len(line.text)
            if line.bold:
                bold[line.size] += len(line.text)
        self.body = sizes.most_common(1)[0][0] if sizes else 0.0
        # Where the body itself is bold, bold says nothing about headings.
        self.bold_headings = bold[self.body] * 2 < sizes[self.body]
        larger = sorted({line.size for line in prose if self._large(line)}, reverse=True)
        self.levels = {size: min(rank + 1, 6) for rank, size in enumerate(larger)}
        self.bold_level = min(len(larger) + 1, 6)
        lengths = sorted(len(line.text) for line in prose if line.size == self.body)
        # A line this long reaches the right margin (the 90th percentile, not the longest).
        self.full = lengths[int(len(lengths) * 0.9)] * 0.85 if lengths else 0.0
        gaps: Counter[int] = Counter()
        for before, after in itertools.pairwise(prose):
            if before.page == after.page and before.size == after.size == self.body:
                gaps[round(abs(before.y - after.y))] += 1
        self.spacing = float(gaps.most_common(1)[0][0]) if gaps else 0.0
        self.vocabulary = {
            word.lower() for line in prose for word in extraction.WORD.findall(line.text)
        }

    def _large(self, line: _PdfLine) -> bool:
        return (
            self.body > 0
            and line.size >= self.body * HEADING_SIZE_RATIO
            and len(line.text.split()) <= HEADING_MAX_WORDS
        )

    def _find_tables(self) -> dict[int, tuple[int, int, list[list[str]]]]:
        """start line -> (start, end, rows): two or more consecutive lines of two or more cells
        whose columns line up (a wrapped cell's next line joins its row)."""
        tables: dict[int, tuple[int, int, list[list[str]]]] = {}
        lines, index = self.lines, 0
        while index < len(lines):
            first = lines[index]
            columns = [x for x, _ in first.cells]
            if len(columns) < 2:
                index += 1
                continue
            tolerance = max(first.size, 1.0) * 1.5
            rows = [[text for _, text in first.cells]]
            end = index + 1
            while end < len(lines) and lines[end].page == first.page:
                cells = lines[end].cells
                found = [_column(x, columns, tolerance) for x, _ in cells]
                places = [place for place in found if place is not None]
                if len(places) < len(found) or sorted(set(places)) != places:
                    break
                if len(cells) == len(columns):
                    rows.append([text for _, text in cells])
                elif any(places):  # a wrapped cell, not a new paragraph
                    for place, (_, text) in zip(places, cells, strict=True):
                        rows[-1][place] = f"{rows[-1][place]} {text}".strip()
                else:
                    break
                end += 1
            if len(rows) >= 2:
                tables[index] = (index, end, rows)
                index = end
            else:
                index += 1
        return tables

    def _level(self, line: _PdfLine) -> int:
        if self._large(line):
            return self.levels.get(line.size, 0)
        if (
            self.bold_headings
            and line.bold
            and line.size >= self.body * 0.95
            and len(line.text.split()) <= BOLD_HEADING_MAX_WORDS
            and not _SENTENCE_END.search(line.text)
            and line.text.rstrip()[-1:] != ","
            and extraction.WORD.search(line.text)
        ):
            return self.bold_level
        return 0

    def _continues(self, before: _PdfLine, line: _PdfLine) -> bool:
        """Whether `line` goes on the paragraph (or list item) that `before` ended."""
        ended = _SENTENCE_END.search(before.text) is not None
        if before.page != line.page:
            # Across a page break only a sentence cut in two goes on.
            return not ended and line.text[:1].islower()
        if abs(before.size - line.size) > 0.5:
            return False
        gap = abs(before.y - line.y)
        if self.spacing and gap > self.spacing * 1.3 + 1:
            return False
        if not self.spacing and gap > line.size * 2.5:
            return False
        if line.x > before.x + line.size:  # an indented first line
            return False
        return not (ended and len(before.text) < self.full)

    def _within(self, previous: _PdfLine | None, open_kind: str, line: _PdfLine) -> bool:
        """Whether `line` goes on an open paragraph that does not announce a list (a line
        starting "12. " inside a sentence is not an item)."""
        return (
            open_kind == "paragraph"
            and previous is not None
            and not previous.text.endswith(":")
            and self._continues(previous, line)
        )

    def _join(self, text: str, more: str) -> str:
        """Lines of one paragraph joined; a word hyphenated at the line end is made whole
        where the document spells it whole elsewhere, and otherwise keeps its hyphen."""
        cut = _HYPHENATED.search(text)
        if cut and more[:1].islower():
            rest = extraction.WORD.match(more)
            whole = cut[1] + (rest[0] if rest else "")
            if text.endswith("\u00ad") or whole.lower() in self.vocabulary:
                return text[: cut.end(1)] + more
            return text[: cut.end(1)] + "-" + more
        return f"{text} {more}"

    def blocks(self) -> list[tuple[str, str]]:
        blocks: list[tuple[str, str]] = []
        previous: _PdfLine | None = None  # the last line of the open paragraph, item or heading
        open_kind = ""
        index = 0
        while index < len(self.lines):
            line = self.lines[index]
            if index in self.tables:
                _, index, rows = self.tables[index]
                if table := extraction.markdown_table(rows):
                    blocks.append(("table", table))
                previous, open_kind = None, ""
                continue
            index += 1
            level = self._level(line)
            if level:
                merge = (
                    open_kind == f"heading{level}"
                    and previous is not None
                    and previous.page == line.page
                    and previous.size == line.size
                    and abs(previous.y - line.y) <= line.size * 2
                )
                if merge:  # a heading wrapped over two lines
                    text = f"{blocks[-1][1]} {line.text}"
                    if len(text.split()) > HEADING_MAX_WORDS + 1:
                        # A passage set large (an introduction), not a heading.
                        blocks[-1] = ("paragraph", text.lstrip("#").lstrip())
                        previous, open_kind = line, "paragraph"
                        continue
                    blocks[-1] = ("heading", text)
                else:
                    blocks.append(("heading", "#" * level + " " + line.text))
                previous, open_kind = line, f"heading{level}"
                continue
            if bullet := _BULLET.match(line.text):
                blocks.append(("item", "- " + line.text[bullet.end() :]))
                previous, open_kind = line, "item"
            elif _NUMBERED.match(line.text) and (
                open_kind == "item"
                or (line.text[:1].isdigit() and not self._within(previous, open_kind, line))
            ):
                blocks.append(("item", line.text))
                previous, open_kind = line, "item"
            elif (
                open_kind in {"paragraph", "item"}
                and previous
                and (
                    self._continues(previous, line)
                    # A word hyphenated at the line end goes on, whatever the spacing.
                    or (_HYPHENATED.search(previous.text) and line.text[:1].islower())
                )
            ):
                kind, text = blocks[-1]
                blocks[-1] = (kind, self._join(text, line.text))
                previous = line
            else:
                blocks.append(("paragraph", line.text))
                previous, open_kind = line, "paragraph"
        return blocks


def _column(x: float, columns: list[float], tolerance: float) -> int | None:
    for place, column in enumerate(columns):
        if abs(x - column) <= tolerance:
            return place
    return None
