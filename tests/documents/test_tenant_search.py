"""Full-text search reads only the tenant's own chunks (issue 36): another tenant's chunks holding
the same words change neither a tenant's results nor their scores, and the per-tenant chunk
statistics the ranking reads stay right through ingestion, re-indexing and deletions."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, func, select

from contentplatform.documents import index as service
from contentplatform.documents.models import Document, DocumentChunk, DocumentChunkStats
from contentplatform.kit.db import Database, utcnow
from contentplatform.tenants.models import Tenant
from tests.documents.support import Docs
from tests.documents.test_index import add_document, chunks_of, search
from tests.support.database import run_on
from tests.support.orgs import new_tenant, org_fixture

docs = org_fixture(Docs)


def paragraphs(word: str, count: int, times: int) -> list[str]:
    return [
        f"Note {n}: " + " ".join([word] * times) + f" filler text number {n}." for n in range(count)
    ]


def test_a_neighbours_chunks_change_neither_results_nor_scores(run):
    """More of the tenant's chunks match than a search ranks closely, so which ones it picks
    must not depend on how common the words are among other tenants' chunks."""

    async def scenario(db: Database) -> None:
        mine = await new_tenant(db)
        # In this tenant `alpha` is the rarer word and its chunks say it twice: they rank first.
        await add_document(db, mine, "alpha.md", paragraphs("alpha", 30, 2))
        await add_document(db, mine, "beta.md", paragraphs("beta", 60, 1))
        queries = ["alpha beta", "beta", "alpha", "filler beta alpha"]
        before = {q: [(h.chunk_id, h.score) for h in await search(db, mine, q)] for q in queries}
        assert {h.document_id for h in await search(db, mine, "alpha beta")} == {
            (await search(db, mine, "alpha"))[0].document_id
        }

        # A neighbour for whom `alpha` is everywhere, `beta` nowhere, in thousands of chunks.
        theirs = await new_tenant(db)
        for number in range(4):
            await add_document(db, theirs, f"theirs-{number}.md", paragraphs("alpha", 600, 3))
        after = {q: [(h.chunk_id, h.score) for h in await search(db, mine, q)] for q in queries}
        assert after == before
        assert all(before.values())
        # And the neighbour finds its own only.
        found = await search(db, theirs, "alpha beta", limit=50)
        assert len(found) == 50
        assert {h.document_name for h in found} <= {f"theirs-{n}.md" for n in range(4)}

    run(scenario)


async def stats_and_truth(
    db: Database, tenant_id: uuid.UUID
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The tenant's maintained row (0, 0 when none) and what its chunks say."""
    async with db.unit_of_work() as session:
        row = (
            await session.execute(
                select(DocumentChunkStats.chunks, DocumentChunkStats.total_length).where(
                    DocumentChunkStats.tenant_id == tenant_id
                )
            )
        ).one_or_none()
        truth = (
            await session.execute(
                select(
                    func.count(),
                    func.coalesce(func.sum(DocumentChunk.char_end - DocumentChunk.char_start), 0),
                ).where(DocumentChunk.tenant_id == tenant_id)
            )
        ).one()
    return (int(row[0]), int(row[1])) if row else (0, 0), (int(truth[0]), int(truth[1]))


def test_the_maintained_chunk_statistics_follow_every_change(run):
    async def scenario(db: Database) -> None:
        mine, theirs = await new_tenant(db), await new_tenant(db)
        first = await add_document(db, mine, "a.md", ["One two three.", "Four five."])
        await add_document(db, theirs, "b.md", ["Theirs and only theirs."] * 3)
        second = await add_document(db, mine, "c.md", ["Six seven eight nine."])
        stats, truth = await stats_and_truth(db, mine)
        assert stats == truth == (3, len("One two three.") + len("Four five.") + 21)
        # Re-indexed with other chunks.
        async with db.unit_of_work() as session:
            await service.replace_document_chunks(
                session, mine, first, chunks_of("Ten.", "Eleven twelve.", "Thirteen.")
            )
        assert (await stats_and_truth(db, mine))[0] == (await stats_and_truth(db, mine))[1]
        assert (await stats_and_truth(db, mine))[0][0] == 4
        # Chunks removed, then the document row deleted (its chunks go by cascade).
        async with db.unit_of_work() as session:
            await service.remove_document_chunks(session, mine, second)
        async with db.unit_of_work() as session:
            await session.execute(delete(Document).where(Document.id == first))
        assert await stats_and_truth(db, mine) == ((0, 0), (0, 0))
        assert (await stats_and_truth(db, theirs))[0] == (3, 3 * len("Theirs and only theirs."))
        # The tenant deleted: its chunks and its row go; the neighbour's stay.
        await add_document(db, mine, "d.md", ["Back again."])
        async with db.unit_of_work() as session:
            await session.execute(delete(Tenant).where(Tenant.id == mine))
            left = await session.scalar(
                select(func.count()).where(DocumentChunkStats.tenant_id == mine)
            )
        assert left == 0
        assert (await stats_and_truth(db, theirs))[0] == (await stats_and_truth(db, theirs))[1]

    run(scenario)


def test_ingestion_through_the_api_keeps_the_statistics(docs, settings):
    for number in range(2):
        docs.ingest(
            f"Handbook {number}.md",
            "\n\n".join(
                f"Paragraph {n} of handbook {number} about burrows." for n in range(40)
            ).encode(),
        )

    async def scenario(db: Database) -> tuple[tuple[int, int], tuple[int, int]]:
        return await stats_and_truth(db, docs.tenant_id)

    stats, truth = run_on(settings, scenario)
    assert stats == truth and stats[0] >= 2


def test_archived_documents_do_not_crowd_a_ready_one_out_of_the_candidates(run):
    """More archived chunks hold the word than the candidates a search scores (200): the ready
    document holding it is still found."""

    async def scenario(db: Database) -> None:
        tenant = await new_tenant(db)
        archived = utcnow()
        for number in range(3):
            await add_document(
                db, tenant, f"old-{number}.md", paragraphs("gazebo", 120, 1), archived_at=archived
            )
        ready = await add_document(db, tenant, "current.md", ["The gazebo plans, revised."])
        assert [hit.document_id for hit in await search(db, tenant, "gazebo")] == [ready]

    run(scenario)
