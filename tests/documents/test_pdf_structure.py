"""Structure recovered from PDFs (headings from font size and weight, paragraphs reflowed,
tables, lists) and kept by the chunker: tables whole with their header row, lists with their
lead-in sentence (for every document type: the chunker is shared)."""

from __future__ import annotations

import re

import pytest

from contentplatform.ai.tokens import count_tokens
from contentplatform.documents import index as search
from contentplatform.documents.chunking import Chunk, chunk_text
from contentplatform.documents.parsing import extract_text
from tests.documents.support import Docs, run
from tests.support.files import structured_pdf
from tests.support.orgs import org_fixture

docs = org_fixture(Docs)

INTRO = (
    "Good coffee at home needs little equipment but some care. This guide walks through "
    "grinding, brewing and storage, in the order a morning cup meets them, and says why each "
    "step matters for the taste in the cup."
)
GRINDING = (
    "The grind decides how fast water pulls flavour out of the coffee. Too fine and the cup "
    "turns bitter, too coarse and it tastes thin and sour. Grind just before brewing, because "
    "ground coffee loses its aroma within minutes of meeting the air."
)
BURRS = (
    "Burr grinders crush beans between two abrasive surfaces, so the particles come out the "
    "same size. A blade grinder chops at random and leaves dust beside boulders, which brews "
    "unevenly. Conical burrs run slower and quieter than flat burrs and heat the beans less."
)
BREWING = (
    "Brewing is where patience pays. Heat the water to just off the boil and wet the grounds "
    "first, so they release their gas before the main pour. Before you start, gather the tools. "
    "You will need:"
)
ITEMS = ["- a scale that reads grams", "- a gooseneck kettle", "- beans ground medium fine"]
TABLE = [
    ["Method", "Grind", "Ratio"],
    ["Espresso", "Fine", "1:2"],
    ["Pour over", "Medium fine", "1:16"],
    ["French press", "Coarse", "1:12"],
    ["Cold brew", "Extra coarse", "1:8"],
]
STORAGE = (
    "Keep beans in an opaque airtight container at room temperature. The freezer works for "
    "long storage if the beans are portioned first and never thawed twice."
)

GUIDE = structured_pdf(
    ("title", "Coffee at home"),
    ("paragraph", INTRO),
    ("section", "Grinding"),
    ("paragraph", GRINDING),
    ("subsection", "Burr grinders"),
    ("paragraph", BURRS),
    ("section", "Brewing"),
    ("paragraph", BREWING),
    ("items", ITEMS),
    ("subsection", "Ratios"),
    ("table", TABLE),
    ("page", ""),
    ("section", "Storage"),
    ("paragraph", STORAGE),
)

PATHS = {
    INTRO: "Coffee at home",
    GRINDING: "Coffee at home > Grinding",
    BURRS: "Coffee at home > Grinding > Burr grinders",
    BREWING: "Coffee at home > Brewing",
    STORAGE: "Coffee at home > Storage",
}


def holding(chunks: list[Chunk], text: str) -> list[Chunk]:
    return [chunk for chunk in chunks if text in chunk.text]


def check_offsets(text: str, chunks: list[Chunk], max_tokens: int) -> None:
    """The chunker's promises: within size, honest offsets, nothing left out."""
    covered = [False] * len(text)
    for chunk in chunks:
        assert chunk.token_count == count_tokens(chunk.text) <= max_tokens
        assert chunk.text.endswith(text[chunk.char_start : chunk.char_end])
        for i in range(chunk.char_start, chunk.char_end):
            covered[i] = True
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))


# --- headings and paragraphs ---------------------------------------------------------------------


def test_headings_come_from_font_size_ranked_into_levels():
    text = extract_text(GUIDE, "pdf")
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == [
        "# Coffee at home",
        "## Grinding",
        "### Burr grinders",
        "## Brewing",
        "### Ratios",
        "## Storage",
    ]


def test_paragraphs_are_reflowed_into_one_line_each():
    lines = extract_text(GUIDE, "pdf").splitlines()
    # fpdf2 wrapped each paragraph over several lines; each comes back whole, as written.
    for paragraph in (INTRO, GRINDING, BURRS, BREWING, STORAGE):
        assert paragraph in lines


def path_where(text: str, chunk: Chunk) -> str:
    """The heading path in effect where the chunk's own text starts (after its leading
    headings): what the chunker promises as `heading`."""
    lines = chunk.text.split("\n")
    lead = 0
    while lead < len(lines) and (lines[lead].startswith("#") or not lines[lead]):
        lead += 1
    position = chunk.char_start + len("\n".join(lines[:lead]))
    path: list[tuple[int, str]] = []
    for found in re.finditer(r"^(#+) (.*)$", text[:position], re.MULTILINE):
        while path and path[-1][0] >= len(found[1]):
            path.pop()
        path.append((len(found[1]), found[2]))
    return " > ".join(title for _, title in path)


@pytest.mark.parametrize("max_tokens", [40, 64, 120, 512])
def test_chunks_of_a_pdf_carry_its_real_heading_path(max_tokens):
    text = extract_text(GUIDE, "pdf")
    chunks = chunk_text(text, max_tokens=max_tokens, overlap_tokens=8)
    check_offsets(text, chunks, max_tokens)
    for chunk in chunks:
        assert chunk.heading == path_where(text, chunk), chunk.text
    assert chunks[0].heading == "Coffee at home"
    if max_tokens == 40:  # small chunks: every section's text starts a chunk under its path
        headed = {chunk.heading for chunk in chunks}
        assert headed >= {*PATHS.values(), "Coffee at home > Brewing > Ratios"}
        assert headed <= {*PATHS.values(), "Coffee at home > Brewing > Ratios"}


def test_a_bold_short_line_at_body_size_is_the_lowest_heading():
    text = extract_text(
        structured_pdf(
            ("title", "Coffee at home"),
            ("section", "Grinding"),
            ("paragraph", GRINDING),
            ("bold", "Cleaning the grinder"),
            ("paragraph", BURRS),
            ("bold", "Never wash burrs in water."),  # a sentence in bold is not a heading
            ("paragraph", STORAGE),
        ),
        "pdf",
    )
    blocks = text.split("\n\n")
    assert blocks == [
        "# Coffee at home",
        "## Grinding",
        GRINDING,
        "### Cleaning the grinder",
        BURRS,
        "Never wash burrs in water.",
        STORAGE,
    ]
    (chunk,) = holding(chunk_text(text, max_tokens=60, overlap_tokens=0), "Burr grinders crush")
    assert chunk.heading == "Coffee at home > Grinding > Cleaning the grinder"


def test_a_body_set_in_bold_makes_no_bold_headings():
    text = extract_text(
        structured_pdf(
            ("section", "Grinding"),
            ("bold", GRINDING),
            ("bold", "Short bold line"),
            ("bold", BURRS),
        ),
        "pdf",
    )
    assert [line for line in text.splitlines() if line.startswith("#")] == ["# Grinding"]
    assert "\n\nShort bold line\n\n" in text


def test_words_hyphenated_at_a_line_end_are_joined_where_safe():
    text = extract_text(
        structured_pdf(
            ("title", "Extraction"),
            # Forced line breaks after the hyphens, as a typesetter hyphenates.
            ("paragraph", "Burr grinders give an even extrac-\ntion of the coffee."),
            ("paragraph", "Even extraction tastes sweet, as is well-\nknown among baristas."),
        ),
        "pdf",
    )
    # "extraction" is spelled whole elsewhere in the document: the hyphen was the typesetter's.
    assert "Burr grinders give an even extraction of the coffee." in text
    # "wellknown" is not: the hyphen is kept, and so is the word whole.
    assert "Even extraction tastes sweet, as is well-known among baristas." in text


# --- tables and lists ----------------------------------------------------------------------------


def test_a_pdf_table_becomes_a_markdown_table_with_its_header_row():
    text = extract_text(GUIDE, "pdf")
    rows = ["| " + " | ".join(row) + " |" for row in TABLE]
    table = "\n".join([rows[0], "| --- | --- | --- |", *rows[1:]])
    assert f"### Ratios\n\n{table}\n\n## Storage" in text


TABLE_TOKENS = 70  # about (count_tokens of the Markdown table): it fits from here up


@pytest.mark.parametrize("max_tokens", range(TABLE_TOKENS + 12, 240, 9))
def test_a_pdf_table_lands_whole_in_one_chunk(max_tokens):
    text = extract_text(GUIDE, "pdf")
    chunks = chunk_text(text, max_tokens=max_tokens, overlap_tokens=8)
    check_offsets(text, chunks, max_tokens)
    (chunk,) = holding(chunks, "| Method | Grind | Ratio |")
    for row in TABLE[1:]:
        assert "| " + " | ".join(row) + " |" in chunk.text
    assert chunk.heading == path_where(text, chunk)


def test_a_pdf_list_comes_out_as_items_after_its_lead_in():
    text = extract_text(GUIDE, "pdf")
    assert BREWING + "\n\n" + "\n".join(ITEMS) + "\n\n### Ratios" in text


@pytest.mark.parametrize("max_tokens", range(30, 140, 7))
def test_a_pdf_list_stays_with_its_lead_in_sentence(max_tokens):
    text = extract_text(GUIDE, "pdf")
    chunks = chunk_text(text, max_tokens=max_tokens, overlap_tokens=8)
    check_offsets(text, chunks, max_tokens)
    (chunk,) = [c for c in chunks if "You will need:" in c.text]
    assert all(item in chunk.text for item in ITEMS), chunk.text
    assert chunk.heading == path_where(text, chunk)


# The chunker is shared: a Markdown (or DOCX, HTML) list keeps its lead-in the same way.
LONG = " ".join(
    f"Sentence {n} of the section says something about water and beans." for n in range(30)
)
MARKDOWN = (
    "# Guide\n\n## Brewing\n\n"
    f"{LONG} Before brewing, gather these:\n\n"
    "- a scale\n- a kettle\n  that pours slowly\n- a timer\n\n"
    f"{LONG}\n\nAfterwards:\n1. rinse the filter\n2. discard the grounds\n\nThe end."
)


@pytest.mark.parametrize("max_tokens", range(30, 260, 11))
def test_a_markdown_list_stays_with_its_lead_in(max_tokens):
    chunks = chunk_text(MARKDOWN, max_tokens=max_tokens, overlap_tokens=8)
    check_offsets(MARKDOWN, chunks, max_tokens)
    (first,) = [c for c in chunks if "gather these:" in c.text]
    assert (
        "Before brewing, gather these:\n\n- a scale\n- a kettle\n  that pours slowly\n- a timer"
        in (first.text)
    )
    (second,) = [c for c in chunks if "Afterwards:" in c.text]
    assert "Afterwards:\n1. rinse the filter\n2. discard the grounds" in second.text
    assert first.heading == second.heading == "Guide > Brewing"


def test_a_list_too_long_for_one_chunk_is_split_between_items_under_its_lead_in():
    items = [f"- step {n}: pour a little water over the grounds and wait" for n in range(40)]
    text = "## Pour over\n\nPour in stages, like this:\n\n" + "\n".join(items)
    chunks = chunk_text(text, max_tokens=60, overlap_tokens=8)
    check_offsets(text, chunks, 60)
    assert len(chunks) > 3
    seen: list[str] = []
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert "Pour in stages, like this:" in lines  # every part has the lead-in
        assert all(line in items for line in lines if line.startswith("- "))  # whole items
        seen += [line for line in lines if line.startswith("- ")]
    assert seen == items  # each item once, in order
    assert all(chunk.heading == "Pour over" for chunk in chunks)


def test_a_colon_line_without_items_after_it_is_plain_prose():
    text = f"Note:\n\n{LONG}\n\n- an item that has no lead-in"
    chunks = chunk_text(text, max_tokens=40, overlap_tokens=0)
    check_offsets(text, chunks, 40)
    assert re.fullmatch(r"Note:\n\nSentence 0.*", chunks[0].text, re.DOTALL)


# --- through the service -------------------------------------------------------------------------


def test_table_tokens_is_right():
    text = extract_text(GUIDE, "pdf")
    table = text[text.index("| Method") : text.index("\n\n## Storage")]
    assert abs(count_tokens(table) - TABLE_TOKENS) <= 10


# Sections of about 300 tokens each: at the service's 512-token chunks, each starts a chunk.
LONG_GUIDE = structured_pdf(
    ("title", "Coffee at home"),
    *[("paragraph", INTRO)] * 6,
    ("section", "Grinding"),
    *[("paragraph", GRINDING)] * 6,
    ("subsection", "Burr grinders"),
    *[("paragraph", BURRS)] * 6,
    ("section", "Storage"),
    *[("paragraph", STORAGE)] * 6,
)


def test_an_ingested_pdf_is_searchable_under_its_real_headings(docs, settings):
    document = docs.ingest("Coffee at home.pdf", LONG_GUIDE)
    assert document["chunk_count"] > 0

    async def scenario(db):
        async with db.unit_of_work() as session:
            return await search.search_chunks(session, docs.tenant_id, "conical burrs blade")

    hits = run(settings, scenario)
    assert hits and hits[0].document_id.hex == document["id"].replace("-", "")
    assert hits[0].heading == "Coffee at home > Grinding > Burr grinders"
    assert "Burr grinders crush beans" in hits[0].content


def test_a_wrapped_heading_is_one_heading_and_large_passages_stay_prose():
    long_heading = (
        "Grinding coffee at home without a burr grinder, a scale or any other special tools"
    )
    text = extract_text(
        structured_pdf(
            ("title", "Coffee at home"),
            ("section", long_heading),  # 16 pt over two lines
            ("subsection", INTRO),  # a 13 pt introduction over several lines: not a heading
            ("paragraph", "The grinder has settings from 1 to\n12. Start in the middle."),
            ("items", ["1. Weigh the beans.", "2. Grind them."]),
        ),
        "pdf",
    )
    assert text.split("\n\n") == [
        "# Coffee at home",
        f"## {long_heading}",
        INTRO,
        "The grinder has settings from 1 to 12. Start in the middle.",
        "1. Weigh the beans.\n2. Grind them.",
    ]
