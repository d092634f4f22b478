"""What every format's text extraction shares: the error a content team can act on, words
spelled with plain letters, tidy whitespace, and the Markdown shapes (blocks, literal text,
tables, a table of contents' lines)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable


class ExtractionError(Exception):
    """The file cannot be turned into text; `reason` is meant for the people who uploaded it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# A word: letters only.
WORD = re.compile(r"[^\W\d_]+")


# --- letters ----------------------------------------------------------------------------------
#
# What a search for the plain word must find. A PDF set in TeX stores "file" as "\ufb01le" (one
# glyph, Unicode's ligature ﬁ) and "Möller" as "M\u00a8oller" (the accent drawn on its own);
# Word and web pages hide soft hyphens and zero-width spaces inside words. The index would keep
# them as other words.

# The Latin and Armenian ligatures of Alphabetic Presentation Forms, as their letters (their
# compatibility decomposition, as NFKC gives it). NFKC on the whole text would also change what
# means something ("x\u00b2" to "x2", "\u2153" to "1/3"), so only these.
_LIGATURES = {
    code: unicodedata.normalize("NFKC", chr(code))
    for code in [*range(0xFB00, 0xFB07), *range(0xFB13, 0xFB18)]
}
# Characters that are never seen and split a word in two for the index: soft hyphen, zero-width
# space, zero-width non-joiner, word joiner, zero-width no-break space (a BOM inside the text).
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u2060\ufeff"))
_LETTERS = str.maketrans({**_LIGATURES, **_INVISIBLE})
# A spacing accent before a letter, as TeX's fonts draw them: the accented letter, where Unicode
# has one (diaeresis, acute, circumflex, tilde, caron, breve, ring).
_SPACING_ACCENTS = {
    "\u00a8": "\u0308",
    "\u00b4": "\u0301",
    "\u02c6": "\u0302",
    "\u02dc": "\u0303",
    "\u02c7": "\u030c",
    "\u02d8": "\u0306",
    "\u02da": "\u030a",
}
_ACCENTED = re.compile("([" + "".join(_SPACING_ACCENTS) + "])([^\\W\\d_])")


def _accented(match: re.Match[str]) -> str:
    composed = unicodedata.normalize("NFC", match[2] + _SPACING_ACCENTS[match[1]])
    return composed if len(composed) == 1 else match[0]


def normalize_letters(text: str) -> str:
    """`text` with ligatures as their letters, invisible word-splitting characters dropped and
    TeX's separately drawn accents put back on their letter."""
    return _ACCENTED.sub(_accented, text.translate(_LETTERS))


# --- whitespace -------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_LINE_BREAKS = str.maketrans({"\x0b": "\n", "\x0c": "\n\n", "\u2028": "\n", "\u2029": "\n\n"})
_SPACES = re.compile(r"[^\S\n]+")  # whitespace other than newlines
_BLANK_RUNS = re.compile(r"\n{3,}")


def tidy(text: str, *, collapse_spaces: bool) -> str:
    """Normalize newlines, drop control characters (PostgreSQL text cannot even hold NUL), strip
    line ends and keep at most one blank line. Markdown and plain text keep their inner spacing
    (indentation means something there); extracted text has runs of spaces collapsed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_LINE_BREAKS)
    text = _CONTROL.sub("", text)
    lines = (line.rstrip() for line in text.split("\n"))
    if collapse_spaces:
        lines = (_SPACES.sub(" ", line).strip() for line in lines)
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


def inline(text: str) -> str:
    """Text meant for one line: every run of whitespace becomes one space."""
    return " ".join(text.split())


def join_blocks(blocks: Iterable[tuple[str, str]]) -> str:
    """Join (kind, text) blocks: consecutive list items one per line, others apart by a blank.
    A paragraph's or item's line that Markdown would read as a heading or a code fence (a code
    line "# comment" in a PDF) is escaped, so only real headings are headings."""
    out: list[str] = []
    previous = ""
    for kind, text in blocks:
        if out:
            out.append("\n" if kind == previous == "item" else "\n\n")
        out.append(literal(text) if kind in ("paragraph", "item") else text)
        previous = kind
    return "".join(out)


# What starts a heading or a code fence in CommonMark, and a setext heading's underline.
_MARKDOWN_START = re.compile(r"( {0,3})(#{1,6}(?=[ \t]|$)|```|~~~)")
_UNDERLINE = re.compile(r"( {0,3})(=+|-+)[ \t]*$")


def literal(text: str) -> str:
    """`text` with a backslash before each line start that would make a heading or a code fence
    in Markdown (CommonMark shows the line as written)."""
    lines = text.split("\n")
    for number, line in enumerate(lines):
        found = _MARKDOWN_START.match(line) or (number and _UNDERLINE.match(line))
        if found:
            lines[number] = f"{found[1]}\\{line[len(found[1]) :]}"
    return "\n".join(lines)


# A line of a table of contents: an entry, dot leaders, its page number (arabic or roman).
_TOC_ENTRY = re.compile(r"(?:\.\s?){4,}\s*(?:\d{1,4}|[ivxlc]{1,7})(?:\s|$)", re.IGNORECASE)


def is_toc_entry(line: str) -> bool:
    return _TOC_ENTRY.search(line) is not None


def markdown_table(rows: list[list[str]]) -> str:
    """A Markdown table; the first row is the header (Markdown requires one)."""
    cells = [[inline(cell).replace("|", "\\|") for cell in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in cells]
    lines.insert(1, "|" + " --- |" * width)
    return "\n".join(lines)
