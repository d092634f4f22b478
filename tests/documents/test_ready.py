"""Ingestion's last write for several documents at once (documents/ready.py), on the suite's
database: each document becomes ready with its own chunks and its own credits spent, a
document no longer processing is skipped without holding the others back, and one that fails
fails alone."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import select

from contentplatform.credits import service as credits
from contentplatform.credits.models import CreditReservation
from contentplatform.documents import ready
from contentplatform.documents.models import Document, DocumentChunk
from contentplatform.documents.service import INGEST_KIND
from contentplatform.kit.db import Database
from contentplatform.kit.errors import NotFound
from tests.documents.test_index import add_document, chunks_of, search
from tests.support.orgs import new_tenant


async def processing(db: Database, tenant_id: uuid.UUID, name: str) -> ready.Ready:
    """A document processing its first version, with its credits held, and the write that
    would end its ingestion (one chunk: `name` and a word of its own)."""
    document_id = await add_document(
        db, tenant_id, f"{name}.md", [], status="processing", document_version=1, ingest_attempt=0
    )
    async with db.unit_of_work() as session:
        hold = await credits.reserve(
            session, tenant_id, kind=INGEST_KIND, idempotency_key=str(document_id), amount=1
        )
    return ready.Ready(
        tenant_id, document_id, 1, 0, chunks_of(f"{name} zyx{name}"), f"text/{name}", hold.id
    )


async def state(db: Database, document: ready.Ready) -> tuple[str, int, str]:
    """The document's status, its chunks and its hold's status."""
    async with db.unit_of_work() as session:
        row = await session.get(Document, document.document_id)
        chunks = await session.scalars(
            select(DocumentChunk).where(DocumentChunk.document_id == document.document_id)
        )
        hold = await session.get(CreditReservation, document.reservation)
        assert row is not None and hold is not None
        return row.status, len(chunks.all()), hold.status


def test_documents_finishing_together_are_each_written_and_a_superseded_one_is_skipped(run):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        first, moved_on, third = [
            await processing(db, tenant_id, name) for name in ("alpha", "beta", "gamma")
        ]
        # Retried meanwhile: the write of attempt 0 is no longer wanted.
        async with db.unit_of_work() as session:
            row = await session.get(Document, moved_on.document_id)
            assert row is not None
            row.ingest_attempt = 1

        written = await asyncio.gather(*(ready.write(db, d) for d in (first, moved_on, third)))

        assert written == [True, False, True]
        assert await state(db, first) == ("ready", 1, "committed")
        assert await state(db, third) == ("ready", 1, "committed")
        assert await state(db, moved_on) == ("processing", 0, "held")
        hits = await search(db, tenant_id, "zyxalpha zyxgamma zyxbeta")
        assert {hit.document_id for hit in hits} == {first.document_id, third.document_id}

    run(scenario)


def test_a_document_whose_write_fails_fails_alone(run):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        good, bad = [await processing(db, tenant_id, name) for name in ("delta", "epsilon")]
        bad.reservation = uuid.uuid4()  # no such hold: committing it fails the transaction

        outcomes = await asyncio.gather(
            ready.write(db, good), ready.write(db, bad), return_exceptions=True
        )

        assert outcomes[0] is True
        assert isinstance(outcomes[1], NotFound)
        assert await state(db, good) == ("ready", 1, "committed")
        async with db.unit_of_work() as session:
            row = await session.get(Document, bad.document_id)
            assert row is not None and row.status == "processing"
            assert (
                await session.scalar(
                    select(DocumentChunk.id).where(DocumentChunk.document_id == bad.document_id)
                )
                is None
            )

    run(scenario)


@pytest.mark.parametrize("count", [1, 12])
def test_every_document_of_a_burst_is_written_once(run, count):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        burst = [await processing(db, tenant_id, f"doc{n}") for n in range(count)]
        assert await asyncio.gather(*(ready.write(db, d) for d in burst)) == [True] * count
        for document in burst:
            assert await state(db, document) == ("ready", 1, "committed")
        assert await credits_used(db, tenant_id) == count  # each hold spent once

    run(scenario)


async def credits_used(db: Database, tenant_id: uuid.UUID) -> int:
    async with db.unit_of_work() as session:
        balance = await credits.balance(session, tenant_id)
        return balance.period.used
