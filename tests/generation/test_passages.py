"""Retrieved chunks become passages under their own headings; weak matches stay out."""

from __future__ import annotations

import uuid

from contentplatform.documents.index import ChunkHit
from contentplatform.generation import passages


def hit(content: str, heading: str | None = None) -> ChunkHit:
    return ChunkHit(
        chunk_id=uuid.uuid4(),
        document_id=uuid.uuid4(),
        document_name="handbook.md",
        ordinal=0,
        content=content,
        heading=heading,
        score=0.5,
        char_start=0,
        char_end=len(content),
    )


PACKED = hit(
    "# Handbook\n\n## Installation\n\nMount the controller near a tap.\n\n"
    "## Watering schedules\n\nEach zone keeps its own watering schedule.\n\n"
    "### Rain delay\n\nA forecast of rain skips the schedule.\n\n"
    "## Pricing\n\nThe Basic plan costs $9 per month.",
    heading="Handbook",
)


def test_a_chunk_is_split_at_its_headings_each_passage_under_its_full_path() -> None:
    found = [(p.heading, p.text) for p in passages.split(PACKED)]
    assert found == [
        ("Handbook > Installation", "Mount the controller near a tap."),
        ("Handbook > Watering schedules", "Each zone keeps its own watering schedule."),
        ("Handbook > Watering schedules > Rain delay", "A forecast of rain skips the schedule."),
        ("Handbook > Pricing", "The Basic plan costs $9 per month."),
    ]
    assert {p.hit.chunk_id for p in passages.split(PACKED)} == {PACKED.chunk_id}


def test_text_before_the_first_heading_keeps_the_chunks_heading() -> None:
    split = passages.split(hit("continued text\n## Next\nmore", heading="Guide > Intro"))
    assert [(p.heading, p.text) for p in split] == [
        ("Guide > Intro", "continued text"),
        ("Guide > Next", "more"),
    ]


def test_passages_sharing_two_words_of_the_query_are_kept_in_order() -> None:
    kept = passages.relevant([PACKED], "watering schedule rain")
    assert [p.heading for p in kept] == [
        "Handbook > Watering schedules",
        "Handbook > Watering schedules > Rain delay",
    ]


def test_a_passage_holding_a_keyword_is_kept_even_with_no_other_word_of_the_topic() -> None:
    kept = passages.relevant([PACKED], "Saving money in the garden", ["basic plan"])
    assert [p.heading for p in kept] == ["Handbook > Pricing"]


def test_a_one_word_query_needs_one_word() -> None:
    kept = passages.relevant([PACKED], "pricing")
    assert [p.heading for p in kept] == ["Handbook > Pricing"]


def test_when_nothing_matches_well_the_best_passage_is_still_used_unless_asked_not_to() -> None:
    weak = passages.relevant([PACKED], "controller testing widgets")
    assert [p.heading for p in weak] == ["Handbook > Installation"]
    assert passages.relevant([PACKED], "controller testing widgets", at_least_one=False) == []
    assert passages.relevant([], "anything") == []
