"""The chunk index on the suite's real database: ranking, tenancy, document states, filters,
hostile queries, replacement (the full-text index too) and rebuilding a document's text."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import delete, func, select, text

from contentplatform.documents import index as service
from contentplatform.documents.chunking import Chunk, chunk_text
from contentplatform.documents.models import Document, DocumentChunk
from contentplatform.domains import include_name, metadata
from contentplatform.kit.db import Base, Database
from contentplatform.kit.errors import NotFound
from tests.support.orgs import new_tenant

COMPOST = [
    "Composting turns kitchen scraps and garden waste into rich dark soil.",
    "A compost pile needs green material, brown material, air and water.",
]
ASTRONOMY = [
    "A refracting telescope gathers light with lenses; a reflector uses mirrors.",
    "Saturn's rings are best seen through a telescope on a clear, dark night.",
]
BAKING = ["Sourdough bread rises slowly thanks to wild yeast and lactic bacteria."]


def chunks_of(*paragraphs: str) -> list[Chunk]:
    """One chunk per paragraph, with the offsets chunk_text would give them."""
    out, position = [], 0
    for ordinal, paragraph in enumerate(paragraphs):
        out.append(
            Chunk(ordinal, paragraph, len(paragraph.split()), position, position + len(paragraph))
        )
        position += len(paragraph) + 2
    return out


async def add_document(
    db: Database, tenant_id: uuid.UUID, name: str, paragraphs: list[str], **state: Any
) -> uuid.UUID:
    """A document (ready unless `state` says otherwise) indexed with one chunk per paragraph."""
    document_id = uuid.uuid4()
    async with db.unit_of_work() as session:
        session.add(
            Document(
                id=document_id,
                tenant_id=tenant_id,
                filename=name,
                file_type="md",
                storage_path=f"test/{document_id}/{name}",
                status=state.pop("status", "ready"),
                **state,
            )
        )
        await session.flush()
        await service.replace_document_chunks(
            session, tenant_id, document_id, chunks_of(*paragraphs)
        )
    return document_id


async def search(
    db: Database, tenant_id: uuid.UUID, query: str, **options: Any
) -> list[service.ChunkHit]:
    async with db.unit_of_work() as session:
        return await service.search_chunks(session, tenant_id, query, **options)


async def library(db: Database) -> tuple[uuid.UUID, dict[str, uuid.UUID]]:
    tenant_id = await new_tenant(db)
    ids = {
        "compost": await add_document(db, tenant_id, "compost.md", COMPOST),
        "astronomy": await add_document(db, tenant_id, "stars.pdf", ASTRONOMY),
        "baking": await add_document(db, tenant_id, "bread.docx", BAKING),
    }
    return tenant_id, ids


def test_the_relevant_chunk_ranks_first(run):
    async def scenario(db: Database) -> None:
        tenant_id, ids = await library(db)
        # The chunk holding only the commoner word comes second, or falls below the relative
        # cut (FTS5's IDF of a word in 2 chunks of 5 is smaller than BM25's usual one).
        hits = await search(db, tenant_id, "telescope lenses")
        assert [(h.document_id, h.ordinal) for h in hits] in (
            [(ids["astronomy"], 0)],
            [(ids["astronomy"], 0), (ids["astronomy"], 1)],
        )
        best = hits[0]
        assert best.document_name == "stars.pdf"
        assert best.content == ASTRONOMY[0]
        assert (best.char_start, best.char_end) == (0, len(ASTRONOMY[0]))
        hits = await search(db, tenant_id, "telescope")
        assert {(h.document_id, h.ordinal) for h in hits} == {
            (ids["astronomy"], 0),
            (ids["astronomy"], 1),
        }
        assert 1 > hits[0].score > hits[1].score > 0
        # Stemmed: "composted piles" finds "compost pile"; any word of the query may match.
        hits = await search(db, tenant_id, "How are composted piles watered?")
        assert hits[0].document_id == ids["compost"] and hits[0].ordinal == 1
        assert {h.document_id for h in hits} == {ids["compost"]}

    run(scenario)


def test_limit_and_empty_queries(run):
    async def scenario(db: Database) -> None:
        tenant_id, _ = await library(db)
        # One word of each chunk, each word in that chunk only: they score alike, none is cut.
        words = "kitchen pile lenses rings sourdough"
        assert len(await search(db, tenant_id, words, limit=2)) == 2
        assert len(await search(db, tenant_id, words)) == 5
        for query in ["", "   ", "\n\t", "!?"]:
            assert await search(db, tenant_id, query) == []
        assert await search(db, tenant_id, "telescope", limit=0) == []

    run(scenario)


def test_another_tenants_chunks_never_appear(run):
    async def scenario(db: Database) -> None:
        mine, _ = await library(db)
        theirs = await new_tenant(db)
        secret = await add_document(
            db, theirs, "secret.md", ["Telescope telescope lenses, secret plans."]
        )
        for query in ["telescope", "secret plans", "lenses"]:
            assert secret not in {h.document_id for h in await search(db, mine, query)}
        assert [h.document_id for h in await search(db, theirs, "telescope")] == [secret]
        # Asking for their document by id does not help either.
        assert await search(db, mine, "telescope", document_ids=[secret]) == []
        async with db.unit_of_work() as session:
            with pytest.raises(NotFound):
                await service.replace_document_chunks(session, mine, secret, chunks_of("mine now"))
            assert await service.document_text(session, mine, secret) == ""

    run(scenario)


@pytest.mark.parametrize(
    "state",
    [
        {"status": "pending"},
        {"status": "processing"},
        {"status": "error"},
        {"archived_at": datetime(2025, 1, 1, tzinfo=UTC)},
        {"deleted_at": datetime(2025, 1, 1, tzinfo=UTC)},
    ],
)
def test_only_ready_live_unarchived_documents_are_searched(run, state):
    async def scenario(db: Database) -> None:
        tenant_id, ids = await library(db)
        hidden = await add_document(
            db, tenant_id, "hidden.md", ["Telescope eyepieces and lenses."], **state
        )
        found = {h.document_id for h in await search(db, tenant_id, "telescope")}
        assert found == {ids["astronomy"]}
        assert hidden not in found

    run(scenario)


def test_document_ids_filter(run):
    async def scenario(db: Database) -> None:
        tenant_id, ids = await library(db)
        query = "dark telescope compost bread"
        hits = await search(db, tenant_id, query, document_ids=[ids["compost"], ids["baking"]])
        assert {h.document_id for h in hits} == {ids["compost"], ids["baking"]}
        assert await search(db, tenant_id, query, document_ids=[]) == []
        assert await search(db, tenant_id, query, document_ids=[uuid.uuid4()]) == []

    run(scenario)


HOSTILE = [
    '"',
    '"telescope',
    "*",
    "tele*",
    "NEAR(",
    "NEAR(telescope lenses, 2)",
    "a:b",
    "content:telescope",
    "{content heading}: telescope",
    "document_key:x",
    "(",
    "(telescope))",
    "-",
    "-telescope",
    "AND OR",
    "AND",
    "NOT telescope",
    "telescope OR",
    "^telescope",
    "' OR 1=1 --",
    "telescope; DROP TABLE document_chunks;",
    "\\",
    "\x00telescope",
    "télescope 望远镜 🔭",
    "telescope " * 100,
    "x" * 1000,
    " ".join(f"w{n}" for n in range(300)),
]


def test_hostile_queries_never_fail(run):
    async def scenario(db: Database) -> None:
        tenant_id, ids = await library(db)
        for query in HOSTILE:
            hits = await search(db, tenant_id, query)
            assert all(h.document_id in ids.values() for h in hits), query
        for query in [
            '"telescope',
            "content:telescope",
            "NEAR(telescope lenses, 2)",
            "(telescope))",
        ]:
            assert (await search(db, tenant_id, query))[0].document_id == ids["astronomy"], query

    run(scenario)


async def fts_rows(db: Database, document_id: uuid.UUID) -> int | None:
    """Rows of the document in SQLite's FTS table (None on PostgreSQL, which has none)."""
    if db.dialect != "sqlite":
        return None
    async with db.unit_of_work() as session:
        return await session.scalar(
            text("SELECT count(*) FROM document_chunks_fts WHERE document_chunks_fts MATCH :q"),
            {"q": f"document_key:{document_id.hex}"},
        )


def test_replace_removes_old_chunks_from_the_index_too(run):
    async def scenario(db: Database) -> None:
        tenant_id, ids = await library(db)
        document_id = ids["astronomy"]
        assert await fts_rows(db, document_id) in (None, 2)
        replacement = ["Giraffes browse acacia leaves.", "Zebras graze.", "Lions sleep."]
        async with db.unit_of_work() as session:
            count = await service.replace_document_chunks(
                session, tenant_id, document_id, chunks_of(*replacement)
            )
        assert count == 3
        assert await search(db, tenant_id, "telescope") == []
        assert [h.content for h in await search(db, tenant_id, "giraffes")] == [replacement[0]]
        assert await fts_rows(db, document_id) in (None, 3)
        async with db.unit_of_work() as session:
            await service.remove_document_chunks(session, tenant_id, document_id)
        assert await search(db, tenant_id, "giraffes zebras lions") == []
        assert await fts_rows(db, document_id) in (None, 0)
        # The others are untouched.
        assert (await search(db, tenant_id, "compost"))[0].document_id == ids["compost"]

    run(scenario)


def test_deleting_a_document_row_cascades_to_chunks_and_index(run):
    async def scenario(db: Database) -> None:
        tenant_id, ids = await library(db)
        async with db.unit_of_work() as session:
            await session.execute(delete(Document).where(Document.id == ids["compost"]))
        async with db.unit_of_work() as session:
            left = await session.scalar(
                select(func.count()).where(DocumentChunk.document_id == ids["compost"])
            )
        assert left == 0
        assert await fts_rows(db, ids["compost"]) in (None, 0)
        assert await search(db, tenant_id, "compost") == []

    run(scenario)


def test_a_rollback_leaves_the_old_chunks(run):
    async def scenario(db: Database) -> None:
        tenant_id, ids = await library(db)
        with pytest.raises(RuntimeError):
            async with db.unit_of_work() as session:
                await service.replace_document_chunks(
                    session, tenant_id, ids["baking"], chunks_of("Rye.")
                )
                raise RuntimeError("the step failed")
        assert [h.content for h in await search(db, tenant_id, "sourdough")] == BAKING
        assert await fts_rows(db, ids["baking"]) in (None, 1)

    run(scenario)


def test_document_text_is_rebuilt_from_overlapping_chunks(run):
    source = "\n\n".join(
        [
            "# Field guide",
            " ".join(f"Sentence {n} is about soil, seeds and water." for n in range(80)),
            "## Spacing",
            "| Plant | Spacing |\n| --- | --- |\n"
            + "\n".join(f"| plant {n} | {n} cm apart |" for n in range(60)),
            "Last words.",
        ]
    )
    chunks = chunk_text(source, max_tokens=90, overlap_tokens=15)
    assert any(a.char_end > b.char_start for a, b in itertools.pairwise(chunks))
    assert any(c.text != source[c.char_start : c.char_end] for c in chunks)  # a split table too

    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        document_id = await add_document(db, tenant_id, "guide.md", [])
        async with db.unit_of_work() as session:
            await service.replace_document_chunks(session, tenant_id, document_id, chunks)
        async with db.unit_of_work() as session:
            assert await service.document_text(session, tenant_id, document_id) == source
            hits = await service.search_chunks(session, tenant_id, "plant 42")
            assert "| plant 42 | 42 cm apart |" in hits[0].content
            assert hits[0].content.startswith("| Plant | Spacing |")  # the header came along

    run(scenario)


def test_models_match_the_migration_but_for_the_full_text_index(run):
    """What `alembic check` sees with the domains' `include_name` (the hook env.py uses, fed by
    documents' manifest), and that without it the full-text objects are the only difference."""
    metadata()

    def diffs(connection: Any, hook: Any) -> list[Any]:
        options = {"compare_type": True, "target_metadata": Base.metadata}
        if hook is not None:
            options["include_name"] = hook
        context = MigrationContext.configure(connection, opts=options)
        return [d for d in compare_metadata(context, Base.metadata) if "document_chunks" in repr(d)]

    async def scenario(db: Database) -> None:
        async with db.engine.connect() as connection:
            assert await connection.run_sync(diffs, include_name) == []
            unhooked = await connection.run_sync(diffs, None)
        assert unhooked, "the full-text objects are really there"
        for diff in unhooked:
            assert "document_chunks_fts" in repr(diff) or "search_vector" in repr(diff), diff

    run(scenario)
