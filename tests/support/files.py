"""Real files of each type, made in the test (no fixtures on disk)."""

from __future__ import annotations

import io

import docx
from fpdf import FPDF


def pdf(*pages: str, title: str = "Field guide") -> bytes:
    document = FPDF()
    document.set_title(title)
    for text in pages:
        document.add_page()
        document.set_font("Helvetica", size=12)
        document.multi_cell(0, 8, text)
    return bytes(document.output())


# Font sizes of structured_pdf: a title, a section and a subsection heading over 11 pt body.
PDF_SIZES = {"title": 20, "section": 16, "subsection": 13}
Block = tuple[str, str | list[str] | list[list[str]]]


def structured_pdf(*blocks: Block) -> bytes:
    """A PDF laid out as a word processor would: ("title" | "section" | "subsection", text) in
    larger bold type, ("bold", text) a bold line at body size, ("paragraph", text) wrapped at the
    margin (a newline in it forces a line break), ("items", [lines]) one line each, ("table",
    [[header...], [row...], ...]) a ruled table with a bold header row, ("page", "") a new page."""
    document = FPDF()
    document.set_title("Structured guide")
    document.add_page()
    for kind, content in blocks:
        if kind == "page":
            document.add_page()
        elif kind in PDF_SIZES:
            assert isinstance(content, str)
            document.set_font("helvetica", "B", PDF_SIZES[kind])
            document.multi_cell(0, PDF_SIZES[kind] * 0.5, content, new_x="LMARGIN", new_y="NEXT")
            document.ln(2)
        elif kind in ("paragraph", "bold"):
            assert isinstance(content, str)
            document.set_font("helvetica", "B" if kind == "bold" else "", 11)
            document.multi_cell(0, 6, content, new_x="LMARGIN", new_y="NEXT")
            document.ln(3)
        elif kind == "items":
            document.set_font("helvetica", "", 11)
            for line in content:
                assert isinstance(line, str)
                document.multi_cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
            document.ln(3)
        elif kind == "table":
            document.set_font("helvetica", "", 11)
            with document.table() as grid:
                for values in content:
                    row = grid.row()
                    for value in values:
                        row.cell(value)
            document.ln(3)
        else:
            raise ValueError(kind)
    return bytes(document.output())


def docx_file(heading: str, paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    document = docx.Document()
    document.add_heading(heading, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def html(title: str, body: str) -> bytes:
    return (
        f"<!doctype html><html><head><title>{title}</title>"
        "<style>body { color: red }</style>"
        "<script>window.secret = 'tracking-code-should-not-appear';</script></head>"
        f"<body><nav>Home | About</nav><main><h1>{title}</h1><p>{body}</p></main>"
        "<script>console.log('also-not-content')</script></body></html>"
    ).encode()


PROSE = (
    "Composting turns kitchen scraps and garden waste into rich soil. A good pile balances "
    "green material such as vegetable peelings with brown material such as dry leaves. Turning "
    "the pile every week lets air in, which keeps the microbes working and the smell down. "
)
