"""Text extraction from uploaded files: PDF, DOCX, DOC, TXT, MD, HTML -> Markdown-ish plain text.

Pure and synchronous: the ingest workflow runs `extract_text` in a thread. Every failure a content
team can act on is an `ExtractionError` whose message says what is wrong in plain words; it ends up
as the document's `error`.
"""

from __future__ import annotations

import io
import itertools
import math
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import docx
import pypdf
from bs4 import BeautifulSoup
from bs4.element import NavigableString, PreformattedString, Tag
from docx.table import Table
from pypdf import PasswordType


class ExtractionError(Exception):
    """The file cannot be turned into text; `reason` is meant for the people who uploaded it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def extract_text(data: bytes, file_type: str) -> str:
    """The text of a file of `file_type` (its extension, with or without the dot)."""
    kind = file_type.lower().lstrip(".")
    extractor = _EXTRACTORS.get(kind)
    if extractor is None:
        raise ExtractionError(f"Files of type .{kind} are not supported.")
    text = extractor(data)
    if not text:
        raise ExtractionError("The file contains no text.")
    return text


# --- whitespace -------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_LINE_BREAKS = str.maketrans({"\x0b": "\n", "\x0c": "\n\n", "\u2028": "\n", "\u2029": "\n\n"})
_SPACES = re.compile(r"[^\S\n]+")  # whitespace other than newlines
_BLANK_RUNS = re.compile(r"\n{3,}")


def _tidy(text: str, *, collapse_spaces: bool) -> str:
    """Normalize newlines, drop control characters (PostgreSQL text cannot even hold NUL), strip
    line ends and keep at most one blank line. Markdown and plain text keep their inner spacing
    (indentation means something there); extracted text has runs of spaces collapsed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_LINE_BREAKS)
    text = _CONTROL.sub("", text)
    lines = (line.rstrip() for line in text.split("\n"))
    if collapse_spaces:
        lines = (_SPACES.sub(" ", line).strip() for line in lines)
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


def _inline(text: str) -> str:
    """Text meant for one line: every run of whitespace becomes one space."""
    return " ".join(text.split())


def _join_blocks(blocks: Iterable[tuple[str, str]]) -> str:
    """Join (kind, text) blocks: consecutive list items one per line, others apart by a blank."""
    out: list[str] = []
    previous = ""
    for kind, text in blocks:
        if out:
            out.append("\n" if kind == previous == "item" else "\n\n")
        out.append(text)
        previous = kind
    return "".join(out)


def markdown_table(rows: list[list[str]]) -> str:
    """A Markdown table; the first row is the header (Markdown requires one)."""
    cells = [[_inline(cell).replace("|", "\\|") for cell in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in cells]
    lines.insert(1, "|" + " --- |" * width)
    return "\n".join(lines)


# --- PDF --------------------------------------------------------------------------------------
#
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
_WORD = re.compile(r"[^\W\d_]+")
_HYPHENATED = re.compile(r"([^\W\d_]+)[-\u00ad]$")
HEADING_SIZE_RATIO = 1.15  # a size this much above the body's makes a heading
HEADING_MAX_WORDS = 20
BOLD_HEADING_MAX_WORDS = 12


def _pdf(data: bytes) -> str:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # pypdf already tried the empty password; files protected only against editing open.
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise ExtractionError("The PDF is encrypted and cannot be read.")
        lines = [
            line for number, page in enumerate(reader.pages) for line in _pdf_lines(number, page)
        ]
    except ExtractionError:
        raise
    except pypdf.errors.FileNotDecryptedError as error:
        raise ExtractionError("The PDF is encrypted and cannot be read.") from error
    except Exception as error:
        # pypdf raises many kinds of errors on damaged files (not only PdfReadError); whatever
        # it is, the cause is the file, and the chained exception keeps the detail for the logs.
        raise ExtractionError("The PDF could not be read (the file may be damaged).") from error
    text = _tidy(_join_blocks(_PdfLayout(lines).blocks()), collapse_spaces=True)
    if not text:
        raise ExtractionError("The PDF has no extractable text (it may be scanned images).")
    return text


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
        text=_inline("".join(run.text for run in runs)),
        cells=[(x, _inline(text)) for x, text in cells],
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
        self.vocabulary = {word.lower() for line in prose for word in _WORD.findall(line.text)}

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
            and _WORD.search(line.text)
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
            rest = _WORD.match(more)
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
                if table := markdown_table(rows):
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
                open_kind in {"paragraph", "item"} and previous and self._continues(previous, line)
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


# --- DOCX -------------------------------------------------------------------------------------

_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.IGNORECASE)


def _docx_paragraph(paragraph: Any, style: str) -> tuple[str, str] | None:
    text = _inline(paragraph.text)
    if not text:
        return None
    if style.lower() == "title":
        return "heading", f"# {text}"
    if match := _HEADING_STYLE.fullmatch(style):
        return "heading", "#" * min(max(int(match[1]), 1), 6) + " " + text
    if style.lower().startswith("list"):
        return "item", f"- {text}"
    return "paragraph", text


def _docx(data: bytes) -> str:
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as error:
        # A broken zip, a missing part, bad XML or another Office format: all the file's fault.
        raise ExtractionError(
            "The file is not a valid .docx document (it may be damaged or in another format)."
        ) from error
    # `paragraph.style` scans every style of the document on each call (most of the time spent on
    # a DOCX went there); the paragraph's style id, looked up in a map made once, is the same.
    styles = {style.style_id: style.name or "" for style in document.styles}
    blocks: list[tuple[str, str]] = []
    # Paragraphs and tables in body order, so a table stays where the author put it.
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            table = markdown_table([[cell.text for cell in row.cells] for row in block.rows])
            if table:
                blocks.append(("table", table))
        elif found := _docx_paragraph(block, styles.get(block._p.style, "")):
            blocks.append(found)
    return _tidy(_join_blocks(blocks), collapse_spaces=False)


# --- DOC (legacy Word) ------------------------------------------------------------------------


def _doc(data: bytes) -> str:
    antiword = shutil.which("antiword")
    if antiword is None:
        raise ExtractionError(
            "Legacy .doc files need antiword, which is not installed on this server."
        )
    # antiword reads only files, not standard input.
    with tempfile.NamedTemporaryFile(suffix=".doc") as source:
        source.write(data)
        source.flush()
        try:
            # -w 0: one line per paragraph; -m UTF-8.txt: UTF-8 output instead of Latin-1.
            result = subprocess.run(
                [antiword, "-m", "UTF-8.txt", "-w", "0", source.name],
                capture_output=True,
                timeout=120,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise ExtractionError("The .doc file took too long to read.") from error
    if result.returncode != 0:
        raise ExtractionError(
            "The .doc file could not be read (it may be damaged or not a Word document)."
        )
    return _tidy(result.stdout.decode("utf-8", errors="replace"), collapse_spaces=True)


# --- plain text and Markdown ------------------------------------------------------------------


def _plain(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")  # strips a byte-order mark
    except UnicodeDecodeError as error:
        raise ExtractionError("The file is not valid UTF-8 text.") from error
    return _tidy(text, collapse_spaces=False)


# --- HTML -------------------------------------------------------------------------------------

# Never content. iframe/object/embed/canvas hold only fallback text for other media.
_ALWAYS_SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "svg", "iframe", "object", "embed", "canvas"}
)
# Page furniture around the content.
_FURNITURE = frozenset({"nav", "footer", "header", "aside", "form"})
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
# Elements that start a new block; anything else is inline and flows into the current line.
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "blockquote", "body", "dd", "details", "dialog", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "header", "hgroup", "hr", "li", "main",
        "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th",
        "thead", "tr", "ul", "caption", "html",
    }
)  # fmt: skip


class _HtmlText:
    """Walks an element and collects (kind, text) blocks."""

    def __init__(self, skipped: frozenset[str]) -> None:
        self.skipped = skipped
        self.blocks: list[tuple[str, str]] = []
        self.line: list[str | None] = []  # None marks a <br>
        self.item_prefix = ""

    def render(self, element: Tag) -> list[tuple[str, str]]:
        self._walk(element)
        self._flush()
        return self.blocks

    def _flush(self) -> None:
        # A <br> survives as a line break; any other whitespace collapses to single spaces.
        lines: list[str] = []
        current: list[str] = []
        for part in [*self.line, None]:
            if part is None:
                lines.append(_inline("".join(current)))
                current = []
            else:
                current.append(part)
        text = "\n".join(lines).strip()
        self.line = []
        if not text:
            return
        if self.item_prefix:
            self.blocks.append(("item", self.item_prefix + text))
            self.item_prefix = ""
        else:
            self.blocks.append(("paragraph", text))

    def _inline_text(self, element: Tag) -> str:
        """An element's text on one line (a heading, a table cell)."""
        return " ".join(text for _, text in _HtmlText(self.skipped).render(element))

    def _walk(self, element: Tag) -> None:
        for child in element.children:
            if isinstance(child, NavigableString):
                # Comments, CDATA, doctypes and processing instructions are not text.
                if not isinstance(child, PreformattedString):
                    self.line.append(str(child))
                continue
            if not isinstance(child, Tag) or child.name in self.skipped or child.has_attr("hidden"):
                continue
            name = child.name
            if name in _HEADINGS:
                self._flush()
                if text := _inline(self._inline_text(child)):
                    self.blocks.append(("heading", "#" * _HEADINGS[name] + " " + text))
            elif name == "br":
                self.line.append(None)
            elif name == "li":
                self._flush()
                self.item_prefix = "- "
                self._walk(child)
                self._flush()
            elif name == "pre":
                self._flush()
                if code := child.get_text().strip("\n"):
                    self.blocks.append(("code", f"```\n{code}\n```"))
            elif name == "table" and _is_data_table(child):
                self._flush()
                self._table(child)
            elif name in _BLOCK_TAGS:
                self._flush()
                self._walk(child)
                self._flush()
            else:
                self._walk(child)

    def _table(self, table: Tag) -> None:
        caption = table.find("caption")
        if isinstance(caption, Tag) and (text := self._inline_text(caption)):
            self.blocks.append(("paragraph", text))
        rows: list[list[str]] = []
        for row in table.find_all("tr"):
            cells: list[str] = []
            for cell in row.find_all(["th", "td"], recursive=False):
                span = str(cell.get("colspan") or "1")
                # Keep the columns aligned under a merged cell.
                extra = min(int(span), 50) - 1 if span.isdigit() and int(span) > 1 else 0
                cells += [self._inline_text(cell), *[""] * extra]
            rows.append(cells)
        if text := markdown_table(rows):
            self.blocks.append(("table", text))


def _is_data_table(table: Tag) -> bool:
    """Tables used for page layout (nested tables, headings inside, one column) are walked as
    containers; rendering them as Markdown tables would bury the text in cells."""
    if table.find(["table", *_HEADINGS]) is not None:
        return False
    return any(len(row.find_all(["th", "td"], recursive=False)) > 1 for row in table.find_all("tr"))


def _html_roots(soup: BeautifulSoup) -> list[tuple[Tag, frozenset[str]]]:
    """Where to look for the text, best first, each with the elements to skip there."""
    roots: list[tuple[Tag, frozenset[str]]] = []
    main = soup.find("main") or soup.find(True, {"role": "main"})
    articles = [a for a in soup.find_all("article") if a.find_parent("article") is None]
    # Inside <main> or an <article>, a <header> holds the article's title: keep it.
    content_skipped = _ALWAYS_SKIPPED | (_FURNITURE - {"header"})
    if isinstance(main, Tag):
        roots.append((main, content_skipped))
    elif len(articles) == 1:
        roots.append((articles[0], content_skipped))
    body = soup.body or soup
    roots.append((body, _ALWAYS_SKIPPED | _FURNITURE))
    # Some pages put everything in a <form> (ASP.NET) or a <header>: better furniture than nothing.
    roots.append((body, _ALWAYS_SKIPPED))
    return roots


def _html(data: bytes) -> str:
    # Given bytes, BeautifulSoup honours a <meta charset> and otherwise guesses the encoding.
    soup = BeautifulSoup(data, "html.parser")
    for root, skipped in _html_roots(soup):
        text = _tidy(_join_blocks(_HtmlText(skipped).render(root)), collapse_spaces=False)
        if text:
            return text
    raise ExtractionError("The page has no readable text.")


_EXTRACTORS: dict[str, Callable[[bytes], str]] = {
    "pdf": _pdf,
    "docx": _docx,
    "doc": _doc,
    "txt": _plain,
    "text": _plain,
    "md": _plain,
    "markdown": _plain,
    # A web page the website scan imported: its main content, kept as markdown.
    "url": _plain,
    "html": _html,
    "htm": _html,
}

__all__ = ["ExtractionError", "extract_text", "markdown_table"]
