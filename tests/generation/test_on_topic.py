"""Articles stay on their topic (issue 17, "on-topic articles"), tried as a new user would: two
guides on different subjects go in through the API, a coffee guide as a PDF with real headings
and a water guide as a DOCX that says "coffee" in every paragraph; an article on a narrow topic
of the coffee guide (burr grinders, with "coffee" as a keyword, the word that matched everything)
is generated on the offline writer. It is written from the coffee guide alone, under the PDF's
own headings, no sentence appears twice, and the provenance says, section by section, which
passages it was written from, with their scores and the query that found them.

The sentence de-duplication itself (generation/article.py) is tested on its own below.
"""

from __future__ import annotations

import io
import re
from typing import Any

import docx
from bs4 import BeautifulSoup

from contentplatform.generation.article import Part, assemble, without_repeats
from tests.generation.support import Writer, chunk_ids_of
from tests.generation.test_article import source
from tests.support.files import structured_pdf
from tests.support.orgs import org_fixture

writer = org_fixture(Writer)

TITLE = "The Home Coffee Guide"
# The coffee guide's sections: (heading, paragraph).
COFFEE = [
    (
        "Burr grinders",
        "A burr grinder crushes coffee beans between two abrasive surfaces, the burrs, set a "
        "fixed distance apart. Because every particle must pass through the same gap, a burr "
        "grinder gives an even grind, which is the single biggest step up for home coffee. "
        "Blade grinders chop the beans at random and leave dust beside boulders, so the coffee "
        "tastes bitter and sour at once.",
    ),
    (
        "Conical and flat burrs",
        "Conical burrs pair a cone inside a ring and turn slowly, so they stay cool and quiet "
        "and suit most home grinders. Flat burrs are two parallel discs; they grind more "
        "uniformly but spin faster, and the best flat burr grinders cost more. Either burr "
        "shape beats a blade, and steel burrs stay sharp for years of daily coffee.",
    ),
    (
        "Grind size settings",
        "Each grinder has a dial that moves the burrs closer together for a finer grind or "
        "further apart for a coarser one. Espresso needs a fine grind like table salt, pour-over "
        "a medium grind like sand, and a French press a coarse grind like breadcrumbs. Change "
        "the grind setting one step at a time and taste the coffee before moving again.",
    ),
    (
        "Cleaning a burr grinder",
        "Coffee oils build up on the burrs and turn rancid within weeks. Brush the burrs clean "
        "every month, and run a handful of grinder cleaning tablets through the burrs to lift "
        "the oils. Never wash steel burrs in water, because they rust.",
    ),
    (
        "Storing coffee beans",
        "Keep whole coffee beans in an airtight, opaque container at room temperature, away "
        "from light and heat. Buy small bags and finish them within a month of the roast date. "
        "The freezer is only for sealed bags you will not open for weeks.",
    ),
    (
        "Milk for espresso drinks",
        "Whole milk steams into the silkiest foam for a cappuccino or a latte. Steam it to about "
        "sixty degrees, because hotter milk tastes flat and cooked in coffee drinks. Oat milk "
        "made for baristas foams almost as well as whole milk.",
    ),
]
# The water guide's sections: each paragraph says "coffee", as in the issue.
WATER_TITLE = "Water for Coffee"
WATER = [
    (
        "Hardness and scale",
        "Hard water carries calcium and magnesium that leave limescale inside every coffee "
        "machine and kettle. A little hardness helps coffee taste round, but very hard water "
        "blocks a coffee machine's pipes and dulls the coffee. Test strips from any pet shop "
        "measure the hardness of your coffee water in a minute.",
    ),
    (
        "Filtering tap water",
        "A jug filter with an ion-exchange cartridge softens tap water for coffee and removes "
        "chlorine, which makes coffee taste medicinal. Change the cartridge every four weeks, or "
        "the filter adds back what it took out of your coffee water.",
    ),
    (
        "Descaling a coffee machine",
        "Descale a coffee machine every two months with citric acid dissolved in warm water. Run "
        "the descaling solution through the coffee machine, then rinse it with three full tanks "
        "of clean water so no sour taste reaches the next coffee.",
    ),
    (
        "Bottled water for coffee",
        "Bottled spring water with moderate minerals brews balanced coffee, while distilled water "
        "brews flat coffee and slowly damages a coffee machine's boiler. Read the mineral content "
        "on the label before you pour bottled water into the coffee maker.",
    ),
]
TOPIC = "Burr grinders"
KEYWORDS = ["coffee", "burr grinder"]
CONNECTIVES = ("In practice, ", "Beyond that, ", "On top of that, ", "Just as important, ")


def coffee_pdf() -> bytes:
    blocks: list[Any] = [("title", TITLE)]
    for heading, paragraph in COFFEE:
        blocks += [("section", heading), ("paragraph", paragraph)]
    return structured_pdf(*blocks)


def water_docx() -> bytes:
    document = docx.Document()
    document.add_heading(WATER_TITLE, level=1)
    for heading, paragraph in WATER:
        document.add_heading(heading, level=2)
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def flat(text: str) -> str:
    return " ".join(text.split())


def sentences_of(content: str) -> list[str]:
    """The article's sentences as a reader compares them: words only, case folded, without the
    offline writer's connectives."""
    soup = BeautifulSoup(content, "html.parser")
    found = []
    for block in soup.find_all(["p", "li"]):
        for sentence in re.split(r"(?<=[.!?])\s+", flat(block.get_text())):
            for connective in CONNECTIVES:
                sentence = sentence.removeprefix(connective)
            if words := " ".join(re.findall(r"\w+", sentence.casefold())):
                found.append(words)
    return found


def test_an_article_on_a_narrow_topic_stays_on_its_guide_under_its_real_headings(writer, settings):
    coffee = writer.docs.ingest("coffee-guide.pdf", coffee_pdf())
    water = writer.docs.ingest("water-guide.docx", water_docx())
    assert sum(paragraph.count("coffee") for _, paragraph in WATER) >= 10

    run, draft = writer.generate(topic=TOPIC, keywords=KEYWORDS)

    assert run["status"] == "succeeded", run
    provenance = draft["provenance"]
    content = draft["content"]
    coffee_chunks = chunk_ids_of(settings, coffee["id"])
    water_chunks = chunk_ids_of(settings, water["id"])
    assert water_chunks  # the water guide is searchable: it was left out, not missed

    # No passage of the water guide among the sources or any section's passages, nor any of its
    # sentences in the article.
    passages = [p for section in provenance["sections"] for p in section["passages"]]
    assert {s["document_id"] for s in provenance["sources"]} == {coffee["id"]}
    assert {p["document_id"] for p in passages} == {coffee["id"]}
    assert {p["chunk_id"] for p in passages} <= coffee_chunks
    text = flat(BeautifulSoup(content, "html.parser").get_text()).casefold()
    for _, paragraph in WATER:
        for sentence in re.split(r"(?<=[.!?])\s+", paragraph):
            assert sentence.casefold().rstrip(".") not in text, sentence
    assert "limescale" not in text and "descal" not in text

    # On its narrow topic: the sections are the guide's sections on burr grinders.
    headings = [h.get_text() for h in BeautifulSoup(content, "html.parser").find_all("h2")]
    assert headings, content
    assert "Storing Coffee Beans" not in headings and "Milk for Espresso Drinks" not in headings
    assert "milk" not in text and "freezer" not in text

    # No sentence twice.
    written = sentences_of(content)
    assert len(written) >= 5, content
    repeated = {sentence for sentence in written if written.count(sentence) > 1}
    assert not repeated, repeated

    # Each section's provenance: the query it was retrieved with, its passages with scores.
    sections = provenance["sections"]
    assert [s["heading"] for s in sections] == ["Introduction", *headings]
    for section in sections:
        assert section["query"], section
        assert section["passages"], section
        for passage in section["passages"]:
            assert 0 < passage["score"] < 1, passage
            assert isinstance(passage["cited"], bool)
        cited = {p["chunk_id"] for p in section["passages"] if p["cited"]}
        assert cited == set(section["chunk_ids"]), section
    for section in sections[1:]:
        # A section's own retrieval: its heading and the topic (not the broad keyword).
        assert section["query"] == f"{section['heading']} {TOPIC}", section
        assert "coffee" not in section["query"].casefold().split()

    # The PDF's real headings are the passages' headings, and the sections are named after them.
    real = {f"{TITLE} > {heading}" for heading, _ in COFFEE}
    assert {p["heading"] for p in passages} <= real
    assert {s["heading"] for s in provenance["sources"]} <= real
    assert {h.casefold() for h in headings} <= {heading.casefold() for heading, _ in COFFEE}
    for section in sections[1:]:
        assert (
            section["passages"][0]["heading"].casefold()
            == f"{TITLE} > {section['heading']}".casefold()
        )


# --- no sentence twice --------------------------------------------------------------------------


def test_a_sentence_repeated_with_other_case_spacing_or_citation_is_dropped() -> None:
    seen: set[str] = set()
    first = "<p>Grind the beans <strong>just</strong> before brewing. [1] Burrs stay sharp. [2]</p>"
    assert without_repeats(first, seen) == first  # nothing dropped: unchanged

    later = (
        "<p>GRIND the  beans just before brewing! [3] Steel burrs rust in water. [1]</p>"
        "<ul><li>burrs   stay sharp [2, 3]</li><li>Flat burrs cost more.</li></ul>"
    )
    assert without_repeats(later, seen) == (
        "<p>Steel burrs rust in water. [1]</p><ul><li>Flat burrs cost more.</li></ul>"
    )


def test_a_sentence_after_a_connective_is_the_same_sentence() -> None:
    seen: set[str] = set()
    without_repeats("<p>Burrs stay sharp for years.</p>", seen)
    assert without_repeats("<p>In practice, burrs stay sharp for years. [1]</p>", seen) == ""


def test_a_sentence_merely_similar_is_kept() -> None:
    seen: set[str] = set()
    without_repeats("<p>Burrs stay sharp for years. [1]</p>", seen)
    similar = "<p>Steel burrs stay sharp for years. [1] Burrs stay sharp for many years. [2]</p>"
    assert without_repeats(similar, seen) == similar


def test_a_dropped_sentence_leaves_its_marker_to_the_run_it_closed() -> None:
    seen: set[str] = set()
    without_repeats("<p>Coffee oils turn rancid.</p>", seen)
    # One marker after two sentences cites both; the second goes, the citation stays.
    assert without_repeats(
        "<p>Brush the burrs monthly. Coffee oils turn rancid. [1]</p>", seen
    ) == ("<p>Brush the burrs monthly. [1]</p>")


def test_a_part_left_without_a_sentence_is_left_out_of_the_article() -> None:
    parts = [
        Part(kind="intro", heading=None, sources=[1], points=[]),
        Part(kind="section", heading="Burrs", sources=[1], points=[]),
        Part(kind="section", heading="Grind size", sources=[2], points=[]),
    ]
    written = [
        "<p>A burr grinder grinds evenly. [1]</p>",
        "<p>A burr grinder grinds evenly. [1]</p>",
        "<p>Espresso needs a fine grind. [2] A burr grinder grinds evenly. [1]</p>",
    ]
    article = assemble("Burr grinders", parts, written, [source(1), source(2)])

    assert article.content == (
        "<p>A burr grinder grinds evenly.</p>\n"
        '<h2 id="grind-size">Grind size</h2>\n'
        "<p>Espresso needs a fine grind.</p>"
    )
    assert [s.heading for s in article.sections] == ["Introduction", "Grind size"]
    assert article.sections[1].chunk_ids == ["chunk-2"]
