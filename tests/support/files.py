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
