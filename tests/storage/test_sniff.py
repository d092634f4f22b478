"""File types are judged by content: real PDF, DOCX, OLE2, text and HTML bytes, and impostors."""

from __future__ import annotations

import io
import zipfile

import docx
import pytest
from fpdf import FPDF

from contentplatform.storage.sniff import matches_type, matches_type_full


def make_pdf(compress: bool = True) -> bytes:
    pdf = FPDF()
    pdf.set_compression(compress)
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Hello, storage.")
    return bytes(pdf.output())


def make_ascii_pdf() -> bytes:
    """An uncompressed PDF without its binary marker comment: every byte is ASCII."""
    data = make_pdf(compress=False)
    head, _, rest = data.partition(b"\n")
    marker, _, body = rest.partition(b"\n")
    assert marker.startswith(b"%") and not marker.isascii()
    ascii_pdf = head + b"\n" + body
    assert ascii_pdf.isascii()
    return ascii_pdf


def make_docx() -> bytes:
    document = docx.Document()
    document.add_paragraph("Hello, storage.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def make_zip(name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, "<x/>")
    return buffer.getvalue()


# The first sector of an OLE2 compound file (as .doc files start): signature, then zeros.
OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504

FILES: dict[str, bytes] = {
    "pdf": make_pdf(),
    "ascii_pdf": make_ascii_pdf(),  # valid UTF-8, yet a PDF and no text file
    "docx": make_docx(),
    "zip": make_zip("hello.txt"),
    "ole2": OLE2,
    "text": b"Plain notes.\nSecond line\twith a tab.\r\n",
    "text_bom": "\ufeffNotes with a BOM.".encode(),
    "unicode": "Ünïcödé \u2013 文件 \u2013 🚀\n".encode(),
    "markdown": b"# Title\n\nSome *markdown* with `code`.\n",
    "html": b"<!DOCTYPE html>\n<html><head><title>x</title></head><body><p>Hi</p></body></html>",
    "html_fragment": b"\n  <div class='x'>Fragment</div>",
    "html_p": b"<P>Shouting paragraph</P>",
    "html_comment_first": b"<!-- generated -->\n<html lang='en'><body>x</body></html>",
    "latin1": "Café crème".encode("latin-1"),
    "nul_text": b"looks like text\x00but is not",
    "control_text": b"escape \x1b[31m sequences",
    "empty": b"",
}

# Which of the files each type accepts; every other file must be refused.
ACCEPTS = {
    "pdf": {"pdf", "ascii_pdf"},
    "docx": {"docx"},
    "doc": {"ole2"},
    "txt": {
        "text",
        "text_bom",
        "unicode",
        "markdown",
        "html",
        "html_fragment",
        "html_p",
        "html_comment_first",
        "empty",
    },
    "html": {"html", "html_fragment", "html_p", "html_comment_first"},
}
ACCEPTS["md"] = ACCEPTS["txt"]
ACCEPTS["htm"] = ACCEPTS["html"]


@pytest.mark.parametrize("file_type", sorted(ACCEPTS))
@pytest.mark.parametrize("name", sorted(FILES))
def test_matches_type_full(name: str, file_type: str) -> None:
    assert matches_type_full(FILES[name], file_type) is (name in ACCEPTS[file_type])


@pytest.mark.parametrize("file_type", sorted(ACCEPTS))
@pytest.mark.parametrize("name", sorted(FILES))
def test_matches_type_on_the_head(name: str, file_type: str) -> None:
    # The head of a file cannot tell a DOCX from any other ZIP; everything else it can.
    accepted = ACCEPTS[file_type] | ({"zip"} if file_type == "docx" else set())
    assert matches_type(FILES[name][:512], file_type) is (name in accepted)


def test_head_may_end_inside_a_character() -> None:
    data = "é".encode() * 10
    assert matches_type(data[:5], "txt")  # cut in the middle of the third 'é'
    assert not matches_type_full(data[:5], "txt")


def test_html_must_show_itself_near_the_start() -> None:
    late = b"x" * 2000 + b"<html><body>late</body></html>"
    assert matches_type_full(late, "txt")
    assert not matches_type_full(late, "html")
    assert not matches_type_full(b"a <paragraph> of prose", "html")


def test_broken_docx_is_refused() -> None:
    data = FILES["docx"]
    assert not matches_type_full(data[: len(data) // 2], "docx")  # no central directory


def test_type_names_are_case_insensitive_and_unknown_ones_are_errors() -> None:
    assert matches_type_full(FILES["pdf"], "PDF")
    with pytest.raises(ValueError):
        matches_type_full(FILES["pdf"], "exe")
