"""Ingestion's last write, for many documents at once: marked ready (and `document.ready`
emitted), chunks indexed, credits committed.

On SQLite every write waits its turn for the one writer, and documents finish extracting while
the writer is busy with others (confirms, earlier documents). So the documents that finished
meanwhile are written together, in one transaction: one insert of all their chunks, one commit,
one turn. The first document to finish writes alone at once; those that finish while it writes
go in the next transaction, and so on: batching costs no waiting.

A document that is no longer processing at its version and attempt (deleted, superseded, failed
as stalled) is skipped, not the others. When a transaction fails, each of its documents is
written again on its own, so one document's failure is its own.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any

from contentplatform.credits import service as credits
from contentplatform.documents import index as search
from contentplatform.documents import repository
from contentplatform.documents.chunking import Chunk
from contentplatform.events import service as events
from contentplatform.kit.db import Database


def _future() -> asyncio.Future[bool]:
    return asyncio.get_running_loop().create_future()


@dataclass
class Ready:
    """One document's last write, and whether the document was still processing (it became
    ready) once it is written."""

    tenant_id: uuid.UUID
    document_id: uuid.UUID
    version: int
    attempt: int
    chunks: list[Chunk]
    text_path: str
    reservation: uuid.UUID
    # Made on the loop of the workflow that awaits it.
    written: asyncio.Future[bool] = field(default_factory=_future)


@dataclass
class _Queue:
    waiting: list[Ready] = field(default_factory=list)
    writer: asyncio.Task[None] | None = None


# A queue per event loop and database: DBOS runs some workflows on a loop of its own, and a
# future is only ever settled on the loop that awaits it.
_queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Database, _Queue]] = (
    weakref.WeakKeyDictionary()
)


async def write(db: Database, document: Ready) -> bool:
    """Mark the document ready, index its chunks and commit its credits; False when it is no
    longer processing at its version and attempt (nothing of it was written)."""
    queue = _queues.setdefault(asyncio.get_running_loop(), {}).setdefault(db, _Queue())
    queue.waiting.append(document)
    if queue.writer is None:
        queue.writer = asyncio.create_task(_write_waiting(db, queue))
    # Shielded: a workflow cancelled meanwhile leaves the others' transaction alone.
    return await asyncio.shield(document.written)


async def _write_waiting(db: Database, queue: _Queue) -> None:
    try:
        while queue.waiting:
            batch, queue.waiting = queue.waiting, []
            try:
                _settle(batch, await _write_together(db, batch))
            except Exception:
                for document in batch:
                    try:
                        _settle([document], await _write_together(db, [document]))
                    except Exception as error:
                        _fail(document, error)
    finally:
        queue.writer = None


async def _write_together(db: Database, batch: list[Ready]) -> list[bool]:
    async with db.unit_of_work() as session:
        # Each document first: only one still processing its version and attempt becomes ready
        # (one failed as stalled meanwhile stays failed, its credits released).
        filenames = [
            await repository.mark_ready(
                session,
                document.tenant_id,
                document.document_id,
                document.version,
                document.attempt,
                chunk_count=len(document.chunks),
                text_path=document.text_path,
            )
            for document in batch
        ]
        ready = [filename is not None for filename in filenames]
        written = [document for document, ok in zip(batch, ready, strict=True) if ok]
        for document, filename in zip(batch, filenames, strict=True):
            if filename is not None:
                events.emit(
                    session,
                    document.tenant_id,
                    "document.ready",
                    resource_id=document.document_id,
                    payload={
                        "document_id": document.document_id,
                        "filename": filename,
                        "version": document.version,
                        "chunk_count": len(document.chunks),
                    },
                )
        await search.replace_chunks_of(
            session,
            [
                search.Indexing(
                    document.tenant_id,
                    document.document_id,
                    document.chunks,
                    # Only a document's first version, ingested once, was never indexed before.
                    first=(document.version, document.attempt) == (1, 0),
                )
                for document in written
            ],
        )
        for document in written:
            await credits.commit(
                session,
                document.tenant_id,
                document.reservation,
                spent=credits.Spent(
                    resource_type="document", resource_id=str(document.document_id)
                ),
            )
    return ready


def _settle(batch: list[Ready], ready: list[bool]) -> None:
    for document, ok in zip(batch, ready, strict=True):
        if not document.written.done():
            document.written.set_result(ok)


def _fail(document: Ready, error: Any) -> None:
    if not document.written.done():
        document.written.set_exception(error)
