"""Full-text ranking on the suite's real database (issue 17): field weights (a word in a chunk's
heading path counts more than in its text), the cut relative to the best score, near-duplicate
passages merged, and the primary knowledge document first on ties."""

from __future__ import annotations

import uuid

from contentplatform.documents import index as service
from contentplatform.documents.chunking import Chunk
from contentplatform.documents.models import Document
from contentplatform.kit.db import Database
from tests.documents.test_index import add_document, search
from tests.support.orgs import new_tenant

FILLER = [
    "Sourdough bread rises slowly thanks to wild yeast and lactic bacteria.",
    "A refracting telescope gathers light with lenses; a reflector uses mirrors.",
    "Composting turns kitchen scraps and garden waste into rich dark soil.",
    "Saturn's rings are best seen through a clear sky on a dark night.",
]


async def add_chunks(
    db: Database, tenant_id: uuid.UUID, name: str, chunks: list[tuple[str | None, str]]
) -> uuid.UUID:
    """A ready document of (heading, text) chunks."""
    document_id = uuid.uuid4()
    async with db.unit_of_work() as session:
        session.add(
            Document(
                id=document_id,
                tenant_id=tenant_id,
                filename=name,
                file_type="md",
                storage_path=f"test/{document_id}/{name}",
                status="ready",
            )
        )
        await session.flush()
        position, built = 0, []
        for ordinal, (heading, text) in enumerate(chunks):
            end = position + len(text)
            built.append(Chunk(ordinal, text, len(text.split()), position, end, heading))
            position = end + 2
        await service.replace_document_chunks(session, tenant_id, document_id, built)
    return document_id


def test_a_word_in_the_heading_path_counts_more_than_in_the_text(run):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        document_id = await add_chunks(
            db,
            tenant_id,
            "garden.md",
            [
                # Same length, the word once each: in the text here...
                ("Soil", "Mulch keeps the roots cool; watering twice a week is plenty."),
                # ... and in the heading path there.
                ("Garden > Watering", "Mulch keeps the roots cool; soak twice a week is plenty."),
                *((None, text) for text in FILLER),
            ],
        )
        hits = await search(db, tenant_id, "watering")
        assert [(h.document_id, h.ordinal) for h in hits] == [(document_id, 1), (document_id, 0)]
        assert 1 > hits[0].score > hits[1].score > 0

    run(scenario)


def test_hits_far_below_the_best_are_cut(run):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        await add_document(
            db,
            tenant_id,
            "telescopes.md",
            [
                "A telescope mount tracks the sky; an equatorial mount follows one axis.",
                *(f"A telescope {n} is described here in some detail." for n in range(8)),
            ],
        )
        # Every chunk holds "telescope"; only one the rare words: it alone stays.
        hits = await search(db, tenant_id, "telescope equatorial mount axis")
        assert [h.ordinal for h in hits] == [0]
        # A query of the common word alone matches all alike: none is cut.
        assert len(await search(db, tenant_id, "telescope", limit=20)) == 9

    run(scenario)


def test_the_same_passage_twice_is_returned_once(run):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        sentence = "Prune roses in late winter, just above an outward-facing bud."
        first = await add_document(db, tenant_id, "roses.md", [sentence, *FILLER])
        # The same text again, in other case, punctuation and spacing, in another document.
        await add_document(
            db,
            tenant_id,
            "copy.md",
            ["prune ROSES in late winter -- just above an outward facing bud"],
        )
        hits = await search(db, tenant_id, "when to prune roses")
        assert len(hits) == 1
        assert hits[0].document_id == first or hits[0].content.startswith("prune ROSES")

    run(scenario)


def test_the_primary_document_comes_first_on_ties(run):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        text = "Hedgehogs eat slugs, beetles and {} in the garden at night."
        # Equal scores: same length, same words but one that matches no query word.
        ids = [
            await add_document(db, tenant_id, f"{name}.md", [text.format(name), *FILLER])
            for name in ("worms", "grubs", "moths")
        ]
        # Whichever sorts last among equals is made primary.
        before = await search(db, tenant_id, "hedgehogs slugs")
        assert {h.document_id for h in before} == set(ids)
        assert len({round(h.score, 9) for h in before}) == 1
        last = before[-1].document_id
        async with db.unit_of_work() as session:
            document = await session.get(Document, last)
            assert document is not None
            document.is_primary = True
        after = await search(db, tenant_id, "hedgehogs slugs")
        assert after[0].document_id == last
        assert [h.document_id for h in after[1:]] == [h.document_id for h in before[:-1]]

    run(scenario)


def test_another_organizations_documents_do_not_move_the_ranking(run):
    async def scenario(db: Database) -> None:
        chunks = [
            ("Garden > Watering", "Water tomatoes deeply at the roots, early in the morning."),
            ("Garden > Soil", "Tomatoes like soil rich in compost; water after planting."),
            (None, "Tomato blight spreads in wet weather; water the soil, not the leaves."),
            *((None, text) for text in FILLER),
        ]
        tenant_id = await new_tenant(db)
        await add_chunks(db, tenant_id, "garden.md", chunks)
        query = "watering tomatoes roots"
        before = [(h.ordinal, h.score) for h in await search(db, tenant_id, query, limit=10)]
        assert before
        # Another organization with many documents on the same words, some very common there.
        other = await new_tenant(db)
        for n in range(12):
            await add_chunks(
                db,
                other,
                f"farm-{n}.md",
                [
                    ("Watering", "Watering watering roots roots roots tomatoes."),
                    (None, f"Farm {n}: roots and tomatoes, watering daily."),
                ],
            )
        after = [(h.ordinal, h.score) for h in await search(db, tenant_id, query, limit=10)]
        assert after == before

    run(scenario)
