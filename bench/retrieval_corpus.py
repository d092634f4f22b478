"""The retrieval bench's corpus: CPython's own documentation topics (`pydoc_data.topics`, in the
standard library of every Python), as Markdown, HTML, DOCX and PDF made from the same text.

Each topic becomes one document. Its text is the reST-like plain text pydoc prints: a title
underlined with `*`, sections underlined with `=` or `-`, paragraphs wrapped at ~70 columns and
indented blocks (grammar, code, notes). `parse_topic` turns it into blocks (headings with their
level, paragraphs reflowed into one line, preformatted blocks kept as they are); each writer
renders those blocks in its format: real headings everywhere (`#`, `<h1>`, DOCX Heading styles,
and in the PDF a bigger bold font), so a heading-aware extraction can be measured.

`normalize` is how the bench compares an answer sentence with a chunk: NFKC, typographic quotes
and dashes folded to ASCII, case folded, and everything but letters and digits dropped, so line
wrapping, reflowing, hyphenation at a line end and the PDF's Latin-1 substitutions do not matter.
"""

from __future__ import annotations

import html
import io
import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from pydoc_data.topics import topics
from typing import NamedTuple

import docx
from fpdf import FPDF

KINDS = ("md", "html", "docx", "pdf")
QUESTIONS_FILE = Path(__file__).resolve().parent / "retrieval_questions.json"
_UNDERLINE = re.compile(r"^([*=\-~^])\1{2,}$")
_LEVEL = {"*": 1, "=": 2, "-": 3, "~": 3, "^": 3}
# The PDF's core fonts are Latin-1: what the topics hold beyond it, as ASCII.
_ASCII = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2026": "...",
        "\u2013": "-",
        "\u2014": "--",
        "\u2212": "-",
        "\u2192": "->",
        "\u2264": "<=",
        "\u2265": ">=",
        "\u00a0": " ",
    }
)
_NOT_WORD = re.compile(r"[^0-9a-z]+")


def normalize(text: str) -> str:
    """Letters and digits only, case folded (see the module's docstring)."""
    folded = unicodedata.normalize("NFKC", text).translate(_ASCII).casefold()
    return _NOT_WORD.sub("", folded)


class Question(NamedTuple):
    """A question as a user would ask it, the topic it was written from, and the exact sentence
    of that topic that answers it. The sentence may also occur in other topics (`compound`
    repeats every compound statement, `specialnames` the special methods): a chunk of any
    document holding it is a hit."""

    topic: str
    question: str
    answer: str


def load_questions(path: Path = QUESTIONS_FILE) -> list[Question]:
    return [Question(**each) for each in json.loads(path.read_text(encoding="utf-8"))]


def answerable(questions: list[Question]) -> list[Question]:
    """The questions whose answer is in this Python's topics (they change between versions;
    the sentences were taken from CPython 3.11's)."""
    texts = {name: normalize(topic_text(name)) for name in topic_names()}
    return [q for q in questions if normalize(q.answer) in texts.get(q.topic, "")]


@dataclass(frozen=True)
class Block:
    kind: str  # "heading", "paragraph" or "pre"
    text: str
    level: int = 0  # headings: 1 (the title), 2, 3


def parse_topic(text: str) -> list[Block]:
    lines = text.splitlines()
    blocks: list[Block] = []
    paragraph: list[str] = []
    pre: list[str] = []

    def flush() -> None:
        if paragraph:
            blocks.append(Block("paragraph", " ".join(line.strip() for line in paragraph)))
            paragraph.clear()
        if pre:
            while pre and not pre[-1].strip():
                pre.pop()
            if pre:
                blocks.append(Block("pre", "\n".join(line[3:] for line in pre)))
            pre.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        following = lines[index + 1] if index + 1 < len(lines) else ""
        underline = _UNDERLINE.match(following.strip())
        if line.strip() and not line.startswith(" ") and underline and len(following) >= 3:
            flush()
            blocks.append(Block("heading", line.strip(), _LEVEL[underline.group(1)]))
            index += 2
            continue
        if line.startswith("   ") and not paragraph:
            pre.append(line)
        elif not line.strip():
            if pre:
                pre.append(line)
            else:
                flush()
        else:
            if pre:
                flush()
            paragraph.append(line)
        index += 1
    flush()
    if not blocks or blocks[0].kind != "heading":
        blocks.insert(0, Block("heading", "Python topic", 1))
    return blocks


def topic_names() -> list[str]:
    """Every topic once: of two with the same text ("if" and "else"), the first by name (the
    service would take the second upload for the first document again)."""
    first: dict[str, str] = {}
    for name in sorted(topics):
        first.setdefault(str(topics[name]), name)
    return sorted(first.values())


def topic_text(name: str) -> str:
    return str(topics[name])


# --- writers -----------------------------------------------------------------------------------


def to_markdown(blocks: list[Block]) -> bytes:
    out: list[str] = []
    for block in blocks:
        if block.kind == "heading":
            out.append("#" * block.level + " " + block.text)
        elif block.kind == "pre":
            out.append("```\n" + block.text + "\n```")
        else:
            out.append(block.text)
    return ("\n\n".join(out) + "\n").encode()


def to_html(blocks: list[Block]) -> bytes:
    body: list[str] = []
    for block in blocks:
        text = html.escape(block.text, quote=False)
        if block.kind == "heading":
            body.append(f"<h{block.level}>{text}</h{block.level}>")
        elif block.kind == "pre":
            body.append(f"<pre>{text}</pre>")
        else:
            body.append(f"<p>{text}</p>")
    title = html.escape(blocks[0].text)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>"
        + title
        + "</title></head><body><main><article>\n"
        + "\n".join(body)
        + "\n</article></main></body></html>\n"
    ).encode()


def to_docx(blocks: list[Block]) -> bytes:
    document = docx.Document()
    for block in blocks:
        if block.kind == "heading":
            document.add_heading(block.text, block.level)  # Heading 1, 2, 3
        elif block.kind == "pre":
            paragraph = document.add_paragraph()
            run = paragraph.add_run(block.text)
            run.font.name = "Courier New"
        else:
            document.add_paragraph(block.text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _latin1(text: str) -> str:
    return text.translate(_ASCII).encode("latin-1", "replace").decode("latin-1")


def to_pdf(blocks: list[Block]) -> bytes:
    """Headings in bold Helvetica (20, 15, 12 pt by level), prose in 10 pt Helvetica, the
    indented blocks in 9 pt Courier."""
    pdf = FPDF()
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    for block in blocks:
        text = _latin1(block.text)
        if block.kind == "heading":
            size = {1: 20, 2: 15}.get(block.level, 12)
            pdf.ln(2)
            pdf.set_font("helvetica", "B", size)
            pdf.multi_cell(0, size * 0.5, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
        elif block.kind == "pre":
            pdf.set_font("courier", size=9)
            for line in text.split("\n"):
                pdf.multi_cell(0, 4.2, line or " ", new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        else:
            pdf.set_font("helvetica", size=10)
            pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    return bytes(pdf.output())


WRITERS = {"md": to_markdown, "html": to_html, "docx": to_docx, "pdf": to_pdf}


def build(
    directory: Path, kinds: tuple[str, ...] = KINDS, names: list[str] | None = None
) -> dict[str, list[Path]]:
    """Write each topic in each kind under `directory/<kind>/<topic>.<kind>`; returns
    {kind: [path, ...]}."""
    files: dict[str, list[Path]] = {}
    for kind in kinds:
        (directory / kind).mkdir(parents=True, exist_ok=True)
        files[kind] = []
        for name in names if names is not None else topic_names():
            path = directory / kind / f"{name}.{kind}"
            path.write_bytes(WRITERS[kind](parse_topic(topic_text(name))))
            files[kind].append(path)
    return files
