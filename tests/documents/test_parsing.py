"""Text extraction from real files made in the test: PDF (fpdf2, pypdf), DOCX (python-docx),
HTML, text. Failures must read as reasons a content team can act on."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import docx
import pypdf
import pytest
from fpdf import FPDF

from contentplatform.documents.extraction import ExtractionError
from contentplatform.documents.parsing import extract_text


def make_pdf(*pages: list[tuple[str, str]]) -> bytes:
    """Each page: (style, text) lines; style "B" lines are large and bold, like headings."""
    document = FPDF()
    for lines in pages:
        document.add_page()
        for style, text in lines:
            document.set_font("helvetica", style, 18 if style else 12)
            document.multi_cell(0, 9, text, new_x="LMARGIN", new_y="NEXT")
    return bytes(document.output())


TWO_PAGES = make_pdf(
    [
        ("B", "Soil Health Handbook"),
        ("", "Composting turns kitchen scraps into rich soil for the vegetable garden."),
    ],
    [("", "Crop rotation keeps pests guessing and the soil balanced.")],
)


def encrypted(data: bytes, user_password: str, owner_password: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(data))
    writer.encrypt(user_password, owner_password, algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def failure(data: bytes, file_type: str) -> str:
    with pytest.raises(ExtractionError) as raised:
        extract_text(data, file_type)
    assert raised.value.reason == str(raised.value)
    return raised.value.reason


# --- PDF ----------------------------------------------------------------------------------------


def test_pdf_pages_in_order_with_the_heading_line():
    text = extract_text(TWO_PAGES, "pdf")
    # The large bold line is a heading (tests/documents/test_pdf_structure.py has the rest).
    heading, first, second = text.split("\n\n")  # blocks are apart by a blank line
    assert heading == "# Soil Health Handbook"
    assert first == "Composting turns kitchen scraps into rich soil for the vegetable garden."
    assert second == "Crop rotation keeps pests guessing and the soil balanced."


def test_pdf_with_a_user_password_is_refused_clearly():
    data = encrypted(TWO_PAGES, "secret", "owner")
    assert failure(data, "pdf") == "The PDF is encrypted and cannot be read."


def test_pdf_locked_only_against_editing_is_read():
    data = encrypted(TWO_PAGES, "", "owner")
    assert "Crop rotation" in extract_text(data, "pdf")


def test_pdf_without_text_is_refused_clearly():
    document = FPDF()
    document.add_page()
    document.rect(20, 20, 100, 60, style="F")  # a drawing, as a scan would be an image
    data = bytes(document.output())
    assert failure(data, "pdf") == "The PDF has no extractable text (it may be scanned images)."


@pytest.mark.parametrize("data", [b"", b"%PDF-1.7\nnot really", TWO_PAGES[: len(TWO_PAGES) // 3]])
def test_damaged_pdf_is_refused_clearly(data):
    assert failure(data, "pdf") in {
        "The PDF could not be read (the file may be damaged).",
        "The PDF has no extractable text (it may be scanned images).",
    }


# --- DOCX ---------------------------------------------------------------------------------------


def make_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Employee Handbook", 0)  # the Title style
    document.add_paragraph("Welcome  to   the team.")
    document.add_heading("Benefits", 1)
    document.add_paragraph("Everyone gets the following:")
    document.add_paragraph("Health insurance", style="List Bullet")
    document.add_paragraph("Pension | plan", style="List Bullet")
    table = document.add_table(rows=3, cols=2)
    for r, row in enumerate([["Plan", "Cost"], ["Basic", "$10"], ["Family", "$25"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_heading("Leave policy", 2)
    document.add_paragraph("Ask your manager two weeks ahead.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_docx_headings_paragraphs_lists_and_tables_in_body_order():
    assert extract_text(make_docx(), "docx") == (
        "# Employee Handbook\n\n"
        "Welcome to the team.\n\n"
        "# Benefits\n\n"
        "Everyone gets the following:\n\n"
        "- Health insurance\n"
        "- Pension | plan\n\n"
        "| Plan | Cost |\n"
        "| --- | --- |\n"
        "| Basic | $10 |\n"
        "| Family | $25 |\n\n"
        "## Leave policy\n\n"
        "Ask your manager two weeks ahead."
    )


def test_damaged_docx_is_refused_clearly():
    reason = "The file is not a valid .docx document (it may be damaged or in another format)."
    assert failure(b"PK\x03\x04 truncated zip", "docx") == reason
    assert failure(TWO_PAGES, "docx") == reason


# --- DOC ----------------------------------------------------------------------------------------


def fake_antiword(directory: Path, script: str) -> None:
    """An `antiword` on PATH that behaves as the real one does for the test's purpose."""
    path = directory / "antiword"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_doc_without_antiword_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = failure(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512, "doc")
    assert reason == "Legacy .doc files need antiword, which is not installed on this server."


def test_doc_is_read_with_antiword(monkeypatch, tmp_path):
    # Real antiword prints the document's text; this one prints the file it was given.
    fake_antiword(tmp_path, 'for last; do :; done; cat "$last"')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert extract_text(b"Minutes of the   meeting\r\n\r\nAgreed.", "doc") == (
        "Minutes of the meeting\n\nAgreed."
    )


def test_doc_antiword_failure_is_explained(monkeypatch, tmp_path):
    fake_antiword(tmp_path, 'echo "is not a Word Document." >&2; exit 1')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert failure(b"plain bytes", "doc") == (
        "The .doc file could not be read (it may be damaged or not a Word document)."
    )


# --- text and Markdown --------------------------------------------------------------------------


def test_utf8_text_with_multibyte_characters_bom_and_crlf():
    data = "\ufeffGrüße aus Köln — 東京 🌱\r\nline two\r\n\r\n\r\n\r\nend\x00  ".encode()
    assert extract_text(data, "txt") == "Grüße aus Köln — 東京 🌱\nline two\n\nend"


def test_markdown_keeps_its_indentation():
    source = "# Setup\n\n```\ndef main():\n    return 1\n```\n\n- item\n  - nested\n"
    assert extract_text(source.encode(), ".MD") == source.strip()


def test_invalid_utf8_is_refused_clearly():
    assert failure("café".encode("latin-1"), "txt") == "The file is not valid UTF-8 text."
    assert failure(b"\xff\xfeh\x00i\x00", "md") == "The file is not valid UTF-8 text."


@pytest.mark.parametrize("data", [b"", b"   \r\n\t\n", b"\xef\xbb\xbf"])
def test_empty_text_is_refused(data):
    assert failure(data, "txt") == "The file contains no text."


def test_unsupported_type_is_refused():
    assert failure(b"MZ", "exe") == "Files of type .exe are not supported."


# --- HTML ---------------------------------------------------------------------------------------

PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Ignored title</title>
<style>body { color: red }</style><script>window.tracking = "SECRET-SCRIPT";</script></head>
<body>
<header><div class="logo">ACME SITE HEADER</div></header>
<nav><a href="/">Home</a> <a href="/about">NAV LINK</a></nav>
<main>
  <article>
    <header><h1>Growing   Tomatoes</h1><p>By Ann &amp; Bob</p></header>
    <!-- an editor's COMMENT -->
    <p>Tomatoes love <b>sun</b> and
       warm soil.<br>Water them deeply.</p>
    <h2>What you need</h2>
    <ul><li>Seeds</li><li>Stakes <em>and</em> twine</li></ul>
    <noscript>NOSCRIPT TEXT</noscript>
    <template><p>TEMPLATE TEXT</p></template>
    <svg><text>SVG TEXT</text></svg>
    <table>
      <thead><tr><th>Variety</th><th>Days</th></tr></thead>
      <tbody><tr><td>Roma</td><td>75</td></tr><tr><td>Cherry | small</td><td>65</td></tr></tbody>
    </table>
    <aside>ASIDE PROMO</aside>
    <form><label>FORM LABEL</label><input name="q"></form>
    <footer>ARTICLE FOOTER</footer>
  </article>
</main>
<p>OUTSIDE MAIN</p>
<footer>PAGE FOOTER</footer>
<script>console.log("SECRET-SCRIPT-2")</script>
</body></html>"""


def test_html_main_article_as_markdown():
    assert extract_text(PAGE, "html") == (
        "# Growing Tomatoes\n\n"
        "By Ann & Bob\n\n"
        "Tomatoes love sun and warm soil.\n"
        "Water them deeply.\n\n"
        "## What you need\n\n"
        "- Seeds\n"
        "- Stakes and twine\n\n"
        "| Variety | Days |\n"
        "| --- | --- |\n"
        "| Roma | 75 |\n"
        "| Cherry \\| small | 65 |"
    )


def test_html_without_main_drops_page_furniture():
    page = b"""<html><body><header><h1>SITE</h1></header><nav>NAV</nav>
    <div><h3>Opening hours</h3><p>Monday to Friday</p><ol><li>9 to 5</li></ol></div>
    <aside>ASIDE</aside><footer>FOOTER</footer></body></html>"""
    assert extract_text(page, "htm") == "### Opening hours\n\nMonday to Friday\n\n- 9 to 5"


def test_html_inside_one_big_form_is_still_read():
    page = b"<html><body><form id='aspnetForm'><h1>Notice</h1><p>Read me.</p></form></body></html>"
    assert extract_text(page, "html") == "# Notice\n\nRead me."


def test_html_layout_tables_are_not_markdown_tables():
    page = b"""<html><body><table><tr><td><h2>Welcome</h2>
    <table><tr><td>Left</td><td>Right</td></tr></table></td></tr></table></body></html>"""
    assert extract_text(page, "html") == "## Welcome\n\n| Left | Right |\n| --- | --- |"


def test_html_declared_charset_is_honoured():
    page = '<html><head><meta charset="iso-8859-1"></head><body><p>Café crème</p></body></html>'
    assert extract_text(page.encode("latin-1"), "html") == "Café crème"


def test_html_without_text_is_refused():
    page = b"<html><head><script>x()</script></head><body><nav>Only nav</nav> </body></html>"
    assert extract_text(page, "html") == "Only nav"  # better furniture than nothing
    assert failure(b"<html><body><script>x()</script></body></html>", "html") == (
        "The page has no readable text."
    )
