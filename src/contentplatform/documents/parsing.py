"""Text extraction from uploaded files: PDF, DOCX, DOC, TXT, MD, HTML -> Markdown-ish plain text.

Pure and synchronous: the ingest workflow runs `extract_text` in a thread. Every failure a content
team can act on is an `ExtractionError` whose message says what is wrong in plain words; it ends up
as the document's `error`.

The PDF reader is pdf_text.py, the HTML reader html_text.py, what every reader shares (the
error, letters, whitespace, Markdown shapes) extraction.py.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

import docx
from docx.table import Table

from contentplatform.documents import extraction, html_text, pdf_text


def extract_text(data: bytes, file_type: str) -> str:
    """The text of a file of `file_type` (its extension, with or without the dot), its words
    spelled with plain letters (`normalize_letters`)."""
    kind = file_type.lower().lstrip(".")
    extractor = _EXTRACTORS.get(kind)
    if extractor is None:
        raise extraction.ExtractionError(f"Files of type .{kind} are not supported.")
    text = extraction.normalize_letters(extractor(data))
    if not text.strip():
        raise extraction.ExtractionError("The file contains no text.")
    return text


# --- DOCX -------------------------------------------------------------------------------------

_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.IGNORECASE)


# Word's table of contents: its entries' styles ("toc 1"-"toc 9") and its heading's.
_TOC_STYLE = re.compile(r"toc(?:\s*\d|\s+heading)", re.IGNORECASE)


def _docx_paragraph(paragraph: Any, style: str) -> tuple[str, str] | None:
    text = extraction.inline(paragraph.text)
    if not text or _TOC_STYLE.fullmatch(style) or extraction.is_toc_entry(text):
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
        raise extraction.ExtractionError(
            "The file is not a valid .docx document (it may be damaged or in another format)."
        ) from error
    # `paragraph.style` scans every style of the document on each call (most of the time spent on
    # a DOCX went there); the paragraph's style id, looked up in a map made once, is the same.
    styles = {style.style_id: style.name or "" for style in document.styles}
    blocks: list[tuple[str, str]] = []
    # Paragraphs and tables in body order, so a table stays where the author put it.
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            table = extraction.markdown_table(
                [[cell.text for cell in row.cells] for row in block.rows]
            )
            if table:
                blocks.append(("table", table))
        elif found := _docx_paragraph(block, styles.get(block._p.style, "")):
            blocks.append(found)
    return extraction.tidy(extraction.join_blocks(blocks), collapse_spaces=False)


# --- DOC (legacy Word) ------------------------------------------------------------------------


def _doc(data: bytes) -> str:
    antiword = shutil.which("antiword")
    if antiword is None:
        raise extraction.ExtractionError(
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
            raise extraction.ExtractionError("The .doc file took too long to read.") from error
    if result.returncode != 0:
        raise extraction.ExtractionError(
            "The .doc file could not be read (it may be damaged or not a Word document)."
        )
    return extraction.tidy(result.stdout.decode("utf-8", errors="replace"), collapse_spaces=True)


# --- plain text and Markdown ------------------------------------------------------------------


def _plain(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")  # strips a byte-order mark
    except UnicodeDecodeError as error:
        raise extraction.ExtractionError("The file is not valid UTF-8 text.") from error
    return extraction.tidy(text, collapse_spaces=False)


def _plain_text(data: bytes) -> str:
    """A .txt file as Markdown: its headings found (`_TextHeadings`), its tables of contents left
    out, everything else as written."""
    return _TextHeadings(_plain(data).split("\n")).markdown()


# Plain text's heading styles. A rule: a line of one repeated character; a numbered title
# ("2.1. Stream", "3 Block"); a line in capitals ("SYNOPSIS", "BUILD REQUIREMENTS").
_RULE = re.compile(r" {0,3}([=\-~^*+#])\1{2,}[ \t]*")
_NUMBERED_TITLE = re.compile(r"((?:\d{1,3}\.)*\d{1,3})\.?[ \t]+(\S.*)")
_SENTENCE_MARK = re.compile(r"[.:;?!,]$")
TEXT_HEADING_MAX_WORDS = 10


class _TextHeadings:
    """Plain text's headings: a short line underlined (or over- and underlined) with a rule, a
    numbered title or a line in capitals standing alone between blank lines. Each style is a
    level in the order styles first appear (as reStructuredText reads its own); a numbered title
    goes one level deeper per number."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.styles: list[str] = []

    def markdown(self) -> str:
        out: list[str] = []
        lines, index = self.lines, 0
        while index < len(lines):
            line = lines[index]
            found = self._heading(index)
            if found is not None:
                style, title, used = found
                out.append("#" * self._level(style) + " " + title)
                index += used
                continue
            if not extraction.is_toc_entry(line):
                # Text that Markdown would take for a heading is text here.
                after_text = bool(out) and bool(out[-1].strip()) and not out[-1].startswith("#")
                escaped = extraction.literal(f"x\n{line}" if after_text else line)
                out.append(escaped[2:] if after_text else escaped)
            index += 1
        return extraction.tidy("\n".join(out), collapse_spaces=False)

    def _blank(self, index: int) -> bool:
        return not 0 <= index < len(self.lines) or not self.lines[index].strip()

    def _title(self, line: str) -> str | None:
        """The line as a heading's title, if it could be one: short, not indented as code."""
        text = line.strip()
        if (
            not text
            or len(line) - len(line.lstrip()) > 3
            or len(text.split()) > TEXT_HEADING_MAX_WORDS
            or _RULE.fullmatch(text)
            or not extraction.WORD.search(text)
        ):
            return None
        return text

    def _heading(self, index: int) -> tuple[str, str, int] | None:
        """(style, title, lines used) when a heading starts at `index`."""
        lines = self.lines
        line = lines[index]
        rule = _RULE.fullmatch(line)
        if rule and index + 2 < len(lines) and self._blank(index - 1):
            # Over- and underlined: the rules may be longer than the title.
            title = self._title(lines[index + 1])
            under = _RULE.fullmatch(lines[index + 2])
            if title and under and under[1] == rule[1]:
                return f"over{rule[1]}", title, 3
        title = self._title(line)
        if title is None or not self._blank(index - 1):
            return None
        if index + 1 < len(lines) and (under := _RULE.fullmatch(lines[index + 1])):
            # Underlined: the rule about as long as the title.
            if len(title) / 2 <= len(under[0].strip()) <= len(title) * 2 + 2:
                return f"under{under[1]}", title, 2
            return None
        if not self._blank(index + 1) or _SENTENCE_MARK.search(title):
            return None
        if (numbered := _NUMBERED_TITLE.fullmatch(title)) and numbered[2][:1].isupper():
            return f"number{numbered[1].count('.') + 1}", title, 1
        letters = [c for c in title if c.isalpha()]
        if len(letters) >= 3 and all(c.isupper() for c in letters):
            return "capitals", title, 1
        return None

    def _level(self, style: str) -> int:
        if style not in self.styles:
            self.styles.append(style)
        return min(self.styles.index(style) + 1, 6)


_EXTRACTORS: dict[str, Callable[[bytes], str]] = {
    "pdf": pdf_text.extract,
    "docx": _docx,
    "doc": _doc,
    "txt": _plain_text,
    "text": _plain_text,
    "md": _plain,
    "markdown": _plain,
    # A web page the website scan imported: its main content, kept as markdown.
    "url": _plain,
    "html": html_text.extract,
    "htm": html_text.extract,
}

__all__ = ["extract_text"]
