"""Text extraction from uploaded files: PDF, DOCX, DOC, TXT, MD, HTML -> Markdown-ish plain text.

Pure and synchronous: the ingest workflow runs `extract_text` in a thread. Every failure a content
team can act on is an `ExtractionError` whose message says what is wrong in plain words; it ends up
as the document's `error`.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
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


def _pdf(data: bytes) -> str:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # pypdf already tried the empty password; files protected only against editing open.
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise ExtractionError("The PDF is encrypted and cannot be read.")
        pages = [page.extract_text() for page in reader.pages]
    except ExtractionError:
        raise
    except pypdf.errors.FileNotDecryptedError as error:
        raise ExtractionError("The PDF is encrypted and cannot be read.") from error
    except Exception as error:
        # pypdf raises many kinds of errors on damaged files (not only PdfReadError); whatever
        # it is, the cause is the file, and the chained exception keeps the detail for the logs.
        raise ExtractionError("The PDF could not be read (the file may be damaged).") from error
    text = _tidy("\n\n".join(pages), collapse_spaces=True)
    if not text:
        raise ExtractionError("The PDF has no extractable text (it may be scanned images).")
    return text


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
    "html": _html,
    "htm": _html,
}

__all__ = ["ExtractionError", "extract_text", "markdown_table"]
