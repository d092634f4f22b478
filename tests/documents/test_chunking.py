"""Chunking: sizes, overlap, headings kept with their text, tables whole, honest offsets."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from contentplatform.ai.tokens import count_tokens
from contentplatform.documents.chunking import Chunk, chunk_text

WORDS = re.findall(
    r"\w+",
    "soil compost seed water root leaf sun shade frost mulch worm pest bloom prune harvest "
    "garden bed row trellis stake spade hoe rake weed clay sand loam pot tray light",
)
HEADING = re.compile(r"#{1,6} \S")


def prose(rng: random.Random, sentences: int) -> str:
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + "."
        for _ in range(sentences)
    )


def table(rng: random.Random, rows: int) -> str:
    lines = ["| Plant | Spacing | Notes |", "| --- | --- | --- |"]
    lines += [f"| {rng.choice(WORDS)} {n} | {n} cm | {prose(rng, 1)} |" for n in range(rows)]
    return "\n".join(lines)


def document(seed: int) -> str:
    """A Markdown document with nested headings, paragraphs of many sizes, lists and tables."""
    rng = random.Random(seed)
    blocks = [f"# Guide {seed}"]
    for section in range(rng.randint(3, 8)):
        blocks.append(f"{'#' * rng.randint(2, 4)} Section {section}")
        for _ in range(rng.randint(0, 4)):
            kind = rng.random()
            if kind < 0.6:
                blocks.append(prose(rng, rng.randint(1, 12)))
            elif kind < 0.8:
                blocks.append("\n".join(f"- {prose(rng, 1)}" for _ in range(rng.randint(2, 6))))
            else:
                blocks.append(table(rng, rng.randint(2, 8)))
    return "\n\n".join(blocks)


def span(text: str, chunk: Chunk) -> str:
    return text[chunk.char_start : chunk.char_end]


def check_invariants(
    text: str, chunks: list[Chunk], max_tokens: int, *, headings: bool = True
) -> None:
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    covered = [False] * len(text)
    for chunk in chunks:
        assert chunk.token_count == count_tokens(chunk.text) <= max_tokens
        assert chunk.text.endswith(span(text, chunk))
        if chunk.text != span(text, chunk):  # only a table continuation differs
            header = chunk.text[: len(chunk.text) - len(span(text, chunk))]
            assert re.fullmatch(r"\|.*\|\n\| --- .*\|\n", header), header
        assert chunk.text == chunk.text.strip()
        for i in range(chunk.char_start, chunk.char_end):
            covered[i] = True
        # Never a heading last, with text still to come under it.
        last_line = chunk.text.rsplit("\n", 1)[-1]
        if headings and HEADING.match(last_line):
            assert not text[chunk.char_end :].strip(), chunk.text
    # Nothing but whitespace is left out.
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))
    starts = [c.char_start for c in chunks]
    assert starts == sorted(starts)


def test_empty_text_has_no_chunks():
    assert chunk_text("") == []
    assert chunk_text(" \n\n\t ") == []


def test_short_text_is_one_chunk_trimmed():
    text = "\n\n  Water the seedlings every morning.  \n"
    (chunk,) = chunk_text(text)
    assert chunk == Chunk(0, "Water the seedlings every morning.", 6, 4, 38, None)
    assert span(text, chunk) == chunk.text


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("max_tokens", "overlap"), [(60, 10), (120, 20), (512, 64), (90, 0)])
def test_invariants_hold_on_varied_documents(seed, max_tokens, overlap):
    text = document(seed)
    check_invariants(
        text, chunk_text(text, max_tokens=max_tokens, overlap_tokens=overlap), max_tokens
    )


def test_long_prose_is_split_with_overlap():
    text = prose(random.Random(7), 120)
    chunks = chunk_text(text, max_tokens=100, overlap_tokens=20)
    assert len(chunks) > 5
    check_invariants(text, chunks, 100)
    for before, after in itertools.pairwise(chunks):
        shared = before.char_end - after.char_start
        assert shared > 0, "consecutive chunks of one passage overlap"
        assert count_tokens(text[after.char_start : before.char_end]) <= 20
    assert max(c.token_count for c in chunks) > 60  # chunks are filled, not tiny


def test_without_overlap_chunks_do_not_overlap():
    text = prose(random.Random(8), 60)
    chunks = chunk_text(text, max_tokens=80, overlap_tokens=0)
    check_invariants(text, chunks, 80)
    assert all(a.char_end <= b.char_start for a, b in itertools.pairwise(chunks))


def test_heading_stays_with_a_long_section_and_gives_the_path():
    rng = random.Random(3)
    text = f"# Guide\n\n## Watering\n\n{prose(rng, 40)}\n\n### Winter\n\n{prose(rng, 3)}"
    chunks = chunk_text(text, max_tokens=80, overlap_tokens=10)
    check_invariants(text, chunks, 80)
    assert chunks[0].text.startswith("# Guide\n\n## Watering\n\n")
    assert len(chunks[0].text) > len("# Guide\n\n## Watering\n\n")
    assert chunks[0].heading == "Guide > Watering"
    assert chunks[1].heading == "Guide > Watering"
    winter = [c for c in chunks if "### Winter" in c.text]
    assert len(winter) == 1 and not winter[0].text.endswith("### Winter")
    assert chunks[-1].heading in {"Guide > Watering", "Guide > Watering > Winter"}


def test_each_section_keeps_its_own_heading_path():
    # Packed into one chunk, B's and C's text took A's heading (issue 34).
    text = "# A\n\nOne.\n\n## B\n\nTwo.\n\n# C\n\nThree."
    chunks = chunk_text(text, max_tokens=50, overlap_tokens=5)
    assert [(c.heading, c.text) for c in chunks] == [
        ("A", "# A\n\nOne."),
        ("A > B", "## B\n\nTwo."),
        ("C", "# C\n\nThree."),
    ]
    # Headings with no text between them stay together, with the text under the last.
    (chunk,) = chunk_text("# A\n\n## B\n\nTwo.", max_tokens=50, overlap_tokens=5)
    assert chunk.heading == "A > B"


def test_setext_headings_are_headings():
    text = "Guide\n=====\n\nIntro.\n\nInstall\n-------\n\nRun make.\n\n## Use\n\nUse it."
    chunks = chunk_text(text, max_tokens=50, overlap_tokens=5)
    check_invariants(text, chunks, 50, headings=False)
    assert [(c.heading, c.text) for c in chunks] == [
        ("Guide", "Guide\n=====\n\nIntro."),
        ("Guide > Install", "Install\n-------\n\nRun make."),
        ("Guide > Use", "## Use\n\nUse it."),
    ]


def test_hash_lines_in_indented_code_and_escaped_ones_are_not_headings():
    text = "# Shell\n\nRun:\n\n    # not a heading\n    make\n\n\\# nor this one\n\n#hashtag"
    (chunk,) = chunk_text(text, max_tokens=80, overlap_tokens=5)
    assert chunk.text == text and chunk.heading == "Shell"


def test_a_table_that_fits_is_never_split():
    rng = random.Random(5)
    grid = table(rng, 6)
    text = f"# Plants\n\n{prose(rng, 6)}\n\n{grid}\n\n{prose(rng, 6)}"
    assert count_tokens(grid) < 200
    for max_tokens in range(count_tokens(grid) + 3, 260, 7):
        chunks = chunk_text(text, max_tokens=max_tokens, overlap_tokens=8)
        check_invariants(text, chunks, max_tokens)
        assert sum(grid in c.text for c in chunks) == 1, max_tokens


def test_a_table_too_big_for_one_chunk_is_split_by_rows_under_its_header():
    rng = random.Random(6)
    grid = table(rng, 40)
    text = f"## Spacing\n\n{grid}"
    chunks = chunk_text(text, max_tokens=120, overlap_tokens=16)
    check_invariants(text, chunks, 120)
    assert len(chunks) > 3
    rows = grid.split("\n")
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert lines[lines.index(rows[0]) + 1] == rows[1]  # every chunk has the header
        assert all(line in rows for line in lines if line.startswith("|"))  # whole rows only
    assert chunks[0].text.startswith("## Spacing\n\n| Plant")
    seen = [line for c in chunks for line in c.text.split("\n")[2:] if line.startswith("| ")]
    assert [r for r in rows[2:] if r not in seen] == []


def test_headings_and_tables_inside_code_fences_are_code():
    text = "```\n# not a heading\n| not | a table |\n```\n\nAfter the code."
    (chunk,) = chunk_text(text, max_tokens=50, overlap_tokens=5)
    assert chunk.text == text and chunk.heading is None


def test_output_is_deterministic():
    text = document(42)
    assert chunk_text(text, max_tokens=70, overlap_tokens=12) == chunk_text(
        text, max_tokens=70, overlap_tokens=12
    )


def test_huge_heading_line_and_unbroken_text_still_fit():
    # A 300-word "heading" is split like prose, so its parts may end chunks: skip that check.
    text = "# " + "word " * 300 + "\n\n" + "x" * 5000
    chunks = chunk_text(text, max_tokens=64, overlap_tokens=8)
    check_invariants(text, chunks, 64, headings=False)
    assert "".join(c.text for c in chunks).count("x") >= 5000


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError):
        chunk_text("text", max_tokens=0)
    with pytest.raises(ValueError):
        chunk_text("text", max_tokens=10, overlap_tokens=10)
