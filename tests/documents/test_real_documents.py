"""Documents nobody here wrote (bench/real_corpus: Debian's own documentation, README there):
their words as a search must find them (no ligatures, no soft hyphens), their real headings (a
PDF's by its fonts, Markdown's setext ones, plain text's underlined, numbered or capital lines)
and no page furniture (tables of contents, page navigation, page numbers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contentplatform.documents.chunking import chunk_text
from contentplatform.documents.extraction import normalize_letters
from contentplatform.documents.parsing import extract_text
from tests.documents.support import Docs
from tests.support.orgs import org_fixture

docs = org_fixture(Docs)

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "real_corpus"
PDFS = sorted(path.name for path in (CORPUS / "pdf").glob("*.pdf"))
# Alphabetic Presentation Forms: ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ and the Armenian ligatures.
LIGATURE = re.compile("[\ufb00-\ufb06\ufb13-\ufb17]")
INVISIBLE = re.compile("[\u00ad\u200b\u200c\u2060\ufeff]")


def real(path: str) -> bytes:
    return (CORPUS / path).read_bytes()


def text_of(path: str) -> str:
    return extract_text(real(path), path.rsplit(".", 1)[1])


# --- letters ------------------------------------------------------------------------------------


def test_letters_are_plain_and_nothing_else_changes() -> None:
    ligatures = "con\ufb01guration \ufb03cient \ufb02ow"
    assert normalize_letters(ligatures) == "configuration fficient flow"
    assert normalize_letters("soft\u00adware zero\u200bwidth") == "software zerowidth"
    # TeX draws the accent apart from its letter; a lone accent or one on no letter stays.
    assert normalize_letters("M\u00a8oller na\u00a8\u0131ve \u00b4 x\u00b4") == (
        "M\u00f6ller na\u00a8\u0131ve \u00b4 x\u00b4"
    )
    # Compatibility forms that mean something are not ligatures: kept.
    assert normalize_letters("x\u00b2 \u2153 \u2122") == "x\u00b2 \u2153 \u2122"


@pytest.mark.parametrize("name", PDFS)
def test_no_word_of_a_real_pdf_keeps_a_ligature(name: str) -> None:
    text = text_of(f"pdf/{name}")
    assert not LIGATURE.findall(text), LIGATURE.findall(text)[:5]
    assert not INVISIBLE.findall(text)


def test_the_ligature_words_come_out_as_plain_words() -> None:
    # Three of the five PDFs set these with ﬁ, ﬂ and ﬃ (567 words in all, issue 34).
    assert "bzip2 compresses files using the Burrows-Wheeler" in text_of("pdf/bzip2-manual.pdf")
    fontconfig = text_of("pdf/fontconfig-user.pdf")
    assert "Fontconfig is a library designed to provide system-wide font configuration" in (
        fontconfig
    )
    assert "efficient" in text_of("pdf/crc-doc.pdf")


def test_a_plain_word_finds_what_a_pdf_set_with_a_ligature(docs: Docs) -> None:
    docs.ingest("fontconfig-user.pdf", real("pdf/fontconfig-user.pdf"))
    found = docs.ok("chat.retrieve", {"query": "configuration file"}, role="member")["data"]
    assert found, "the PDF's ligature words were not found"
    for hit in found:
        where = f"{hit['heading']}\n{hit['content']}".lower()
        assert "configuration" in where or "file" in where, hit
    assert "configuration file" in " ".join(hit["content"] for hit in found).lower()


# --- headings -----------------------------------------------------------------------------------


def test_a_code_line_starting_with_hash_in_a_pdf_is_no_heading() -> None:
    # shared-mime-info's spec shows a generated file whose first line is "# This file was
    # automatically generated ...": it made the top heading of 13 of its 22 chunks.
    text = text_of("pdf/shared-mime-info-spec.pdf")
    chunks = chunk_text(text)
    assert not [c.heading for c in chunks if "automatically generated" in (c.heading or "")]
    assert "\\# This file was automatically generated" in text  # shown as written
    assert {c.heading.split(" > ")[0] for c in chunks if c.heading} == {"Shared MIME-info Database"}


def test_plain_text_headings_are_found_by_their_style() -> None:
    lines = text_of("txt/xz-file-format.txt").split("\n")
    headings = [line for line in lines if line.startswith("#")]
    assert headings[:4] == [  # underlined with "=", then numbered, one level per number
        "# The .xz File Format",
        "## 0. Preface",
        "### 0.1. Notices and Acknowledgements",
        "### 0.2. Getting the Latest Version",
    ]
    assert "##### 2.1.1.1. Header Magic Bytes" in headings
    # Capitals standing alone, under a title underlined with "=".
    usage = [line for line in text_of("txt/libjpeg-turbo-usage.txt").split("\n")]
    assert "## CJPEG DETAILS" in usage and "## HINTS FOR DJPEG" in usage
    # Underlined with "-" (krb5's README).
    assert "# Triple-DES transition" in text_of("txt/krb5-README.txt").split("\n")


def test_real_headings_show_in_retrieved_chunks(docs: Docs) -> None:
    """The issue's acceptance: a setext heading, a plain-text heading and a PDF's real headings,
    as `chat.retrieve` shows them."""
    for path in ("md/redis-README.md", "txt/xz-file-format.txt", "pdf/shared-mime-info-spec.pdf"):
        docs.ingest(path.split("/")[1], real(path))

    def heading_of(query: str, passage: str) -> str:
        found = docs.ok("chat.retrieve", {"query": query, "limit": 10}, role="member")["data"]
        hits = [hit for hit in found if passage in hit["content"]]
        assert hits, [hit["content"][:80] for hit in found]
        return str(hits[0]["heading"])

    # Markdown underlined with "---------" (setext).
    assert heading_of("make distclean dependencies", "This will clean: jemalloc") == (
        "Fixing build problems with dependencies or cached build options"
    )
    # Plain text: numbered titles under one underlined with "=".
    assert heading_of(
        "real uncompressed size of a block", "the only reliable way to determine"
    ) == ("The .xz File Format > 3. Block > 3.1. Block Header > 3.1.4. Uncompressed Size")
    # A PDF's headings, from its fonts.
    assert heading_of(
        "Override.xml precedence packages directory", "Override.xml takes precedence"
    ) == ("Shared MIME-info Database > 2. Unified system > 2.1. Directory layout")


# --- page furniture -----------------------------------------------------------------------------

TOC_ENTRY = re.compile(r"(?:\. ?){4,}\s*\d+")


@pytest.mark.parametrize("name", ["bzip2-manual.pdf", "libtasn1.pdf", "crc-doc.pdf"])
def test_tables_of_contents_are_left_out(name: str) -> None:
    text = text_of(f"pdf/{name}")
    assert not TOC_ENTRY.findall(text), TOC_ENTRY.findall(text)[:3]
    # The entries' titles are still there, as the headings of their sections.
    assert re.search(r"^#+ 1\.? Introduction$", text, re.MULTILINE) or "crc" in name


def test_page_numbers_and_running_headers_are_left_out() -> None:
    lines = text_of("pdf/bzip2-manual.pdf").split("\n")
    assert not [line for line in lines if re.fullmatch(r"\d{1,3}", line.strip())]
    # Its running header, on every page but the title's ...
    assert not [line for line in lines if line.strip() == "Programming with libbzip2"]
    # ... and the title it repeats, set large once on the first page, which stays.
    spec = text_of("pdf/shared-mime-info-spec.pdf").split("\n")
    assert spec[0] == "# Shared MIME-info Database"
    assert spec.count("Shared MIME-info Database") == 0


def test_page_navigation_of_html_manuals_is_left_out() -> None:
    # texinfo's pager (div.header) above and below the text.
    basics = text_of("html/libffi-The-Basics.html")
    assert "Next:" not in basics and "[Index]" not in basics
    assert basics.startswith("### 2.1 The Basics")
    # DocBook's navigation tables and its table of contents.
    intro = text_of("html/valgrind-manual-intro.html")
    assert "Up |" not in intro and "Table of Contents" not in intro
    assert intro.startswith("# 1. Introduction\n\n## 1.1. An Overview of Valgrind")
    assert "Home" not in text_of("html/valgrind-quick-start.html").split("\n")[-1]
