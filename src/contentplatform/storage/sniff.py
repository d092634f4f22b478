"""Does content look like the file type it claims? Judged by its bytes, never by its name.

`matches_type(head, ...)` needs only the first bytes (say 8 KiB); `matches_type_full(data, ...)`
takes the whole file and can look inside containers (a DOCX is a ZIP with `word/document.xml`).
"""

from __future__ import annotations

import codecs
import io
import re
import zipfile

PDF_MAGIC = b"%PDF-"
ZIP_MAGIC = b"PK\x03\x04"
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # compound file: .doc, .xls, .ppt, .msg
BINARY_MAGICS = (PDF_MAGIC, ZIP_MAGIC, OLE2_MAGIC)

TEXT_TYPES = frozenset({"txt", "md"})
HTML_TYPES = frozenset({"html", "htm"})
FILE_TYPES = frozenset({"pdf", "docx", "doc"}) | TEXT_TYPES | HTML_TYPES

HTML_WINDOW = 1024  # characters in which an HTML file must show its first tag
_HTML_START = re.compile(r"<!doctype\s+html|<(?:html|head|body|p|div)[\s>/]", re.IGNORECASE)
# Control characters that plain text does not contain (tab, LF, VT, FF and CR are fine).
_TEXT_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def _text(data: bytes, *, complete: bool) -> str | None:
    """The decoded text, or None when `data` is not UTF-8 text (BOM allowed)."""
    if data.startswith(BINARY_MAGICS):
        return None  # an all-ASCII PDF decodes fine, yet it is no text file
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    try:
        # A head may end inside a multi-byte character; only the whole file must end cleanly.
        text = decoder.decode(data, final=complete)
    except UnicodeDecodeError:
        return None
    return None if _TEXT_CONTROLS.search(text) else text


def _matches(data: bytes, file_type: str, *, complete: bool) -> bool:
    kind = file_type.lower()
    if kind not in FILE_TYPES:
        raise ValueError(f"unknown file type {file_type!r}")
    if kind == "pdf":
        return data.startswith(PDF_MAGIC)
    if kind == "doc":
        return data.startswith(OLE2_MAGIC)
    if kind == "docx":
        return data.startswith(ZIP_MAGIC) and (not complete or _is_word_document(data))
    text = _text(data, complete=complete)
    if text is None:
        return False
    return kind in TEXT_TYPES or _HTML_START.search(text[:HTML_WINDOW]) is not None


def _is_word_document(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            # Reads only the central directory: nothing is decompressed.
            return "word/document.xml" in archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return False


def matches_type(head: bytes, file_type: str) -> bool:
    """Whether the first bytes of a file fit `file_type` (a DOCX only as far as "is a ZIP")."""
    return _matches(head, file_type, complete=False)


def matches_type_full(data: bytes, file_type: str) -> bool:
    """Whether a whole file fits `file_type`, including a DOCX's inner `word/document.xml`."""
    return _matches(data, file_type, complete=True)
