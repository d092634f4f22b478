"""The ingestion workflow: pending -> processing -> ready | error, each step checkpointed.

Every step re-reads the document and stops quietly when it was deleted or superseded by a newer
version or retry, so a late step never overwrites newer work. A step that fails puts the document
in `error` with a reason a person can act on, and releases the credits held for it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.documents import chunking, parsing, repository
from contentplatform.documents import index as search
from contentplatform.documents.models import Document
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow
from contentplatform.storage import paths
from contentplatform.storage.store import StorageError

log = logging.getLogger(__name__)


def ingest_workflow_id(document: Document) -> str:
    base = f"ingest:{document.id}:{document.document_version}"
    return base if document.ingest_attempt == 0 else f"{base}:{document.ingest_attempt}"


def cache_scope(tenant_id: uuid.UUID) -> str:
    return f"documents:{tenant_id}"


def arguments(document: Document) -> tuple[str, str, int, int, str]:
    """What the workflow is started with: plain values, as DBOS stores them."""
    return (
        str(document.tenant_id),
        str(document.id),
        document.document_version,
        document.ingest_attempt,
        str(document.ingest_reservation_id),
    )


class Superseded(Exception):
    """The document was deleted, or a newer version or retry took over."""


@DBOS.workflow(name="documents.ingest")
async def ingest(
    tenant_id: str, document_id: str, version: int, attempt: int, reservation: str
) -> str:
    job = (uuid.UUID(tenant_id), uuid.UUID(document_id), version, attempt)
    try:
        source = await begin(*job)
        text_path = await extract(*job, source["storage_path"], source["file_type"])
        await index(*job, text_path)
        await finish(*job, reservation)
        return "ready"
    except Superseded:
        await release(uuid.UUID(tenant_id), reservation)
        return "superseded"
    except Exception as error:
        await fail(*job, reservation, reason_for(error))
        return "error"


def reason_for(error: Exception) -> str:
    if isinstance(error, parsing.ExtractionError):
        return str(error)
    if isinstance(error, StorageError):
        return f"The uploaded file could not be read from storage: {error}"
    log.exception("ingestion failed", exc_info=error)
    return f"Ingestion failed unexpectedly ({type(error).__name__}); retry it or contact support."


async def _current(
    session: AsyncSession, tenant_id: uuid.UUID, document_id: uuid.UUID, version: int, attempt: int
) -> Document:
    document = await repository.get(session, tenant_id, document_id, for_update=True)
    if document is None or (document.document_version, document.ingest_attempt) != (
        version,
        attempt,
    ):
        raise Superseded()
    return document


async def _invalidate(tenant_id: uuid.UUID) -> None:
    await runtime.current().cache.invalidate(cache_scope(tenant_id))


@DBOS.step(name="documents.ingest.begin")
async def begin(
    tenant_id: uuid.UUID, document_id: uuid.UUID, version: int, attempt: int
) -> dict[str, str]:
    async with runtime.current().db.unit_of_work() as session:
        document = await _current(session, tenant_id, document_id, version, attempt)
        document.status = "processing"
        document.error = None
        document.ingest_started_at = utcnow()
        source = {"storage_path": document.storage_path, "file_type": document.file_type}
    await _invalidate(tenant_id)
    return source


@DBOS.step(name="documents.ingest.extract")
async def extract(
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    version: int,
    attempt: int,
    storage_path: str,
    file_type: str,
) -> str:
    """Extract the text and keep it in storage (steps return paths, not megabytes)."""
    store = runtime.current().store
    data = await store.get(storage_path)
    text = await asyncio.to_thread(parsing.extract_text, data, file_type)
    text_path = paths.derived_text_path(paths.organization_of(storage_path), document_id, version)
    await store.put(text_path, text.encode("utf-8"), content_type="text/plain; charset=utf-8")
    return text_path


@DBOS.step(name="documents.ingest.index")
async def index(
    tenant_id: uuid.UUID, document_id: uuid.UUID, version: int, attempt: int, text_path: str
) -> int:
    current = runtime.current()
    text = (await current.store.get(text_path)).decode("utf-8")
    settings = current.settings
    chunks = await asyncio.to_thread(
        chunking.chunk_text,
        text,
        max_tokens=settings.chunk_tokens,
        overlap_tokens=settings.chunk_overlap_tokens,
    )
    async with current.db.unit_of_work() as session:
        document = await _current(session, tenant_id, document_id, version, attempt)
        document.chunk_count = await search.replace_document_chunks(
            session, tenant_id, document_id, chunks
        )
        document.text_path = text_path
        return document.chunk_count


@DBOS.step(name="documents.ingest.finish")
async def finish(
    tenant_id: uuid.UUID, document_id: uuid.UUID, version: int, attempt: int, reservation: str
) -> None:
    async with runtime.current().db.unit_of_work() as session:
        document = await _current(session, tenant_id, document_id, version, attempt)
        document.status = "ready"
        document.error = None
        await credits.commit(session, tenant_id, uuid.UUID(reservation))
    await _invalidate(tenant_id)


@DBOS.step(name="documents.ingest.fail")
async def fail(
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    version: int,
    attempt: int,
    reservation: str,
    reason: str,
) -> None:
    async with runtime.current().db.unit_of_work() as session:
        await mark_failed(session, tenant_id, document_id, version, attempt, reservation, reason)
    await _invalidate(tenant_id)


@DBOS.step(name="documents.ingest.release")
async def release(tenant_id: uuid.UUID, reservation: str) -> None:
    async with runtime.current().db.unit_of_work() as session:
        await credits.release(session, tenant_id, uuid.UUID(reservation))


async def mark_failed(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    version: int,
    attempt: int,
    reservation: str,
    reason: str,
) -> None:
    # The document first, then the hold: the order `finish` takes them in, so the two never
    # wait on each other.
    try:
        document: Document | None = await _current(
            session, tenant_id, document_id, version, attempt
        )
    except Superseded:
        document = None
    await credits.release(session, tenant_id, uuid.UUID(reservation))
    if document is not None:
        document.status = "error"
        document.error = reason


@durable.reconcile_source("documents.ingest")
async def unfinished_ingestions(session: AsyncSession) -> list[durable.Unfinished]:
    """Confirmed documents still pending or processing: restarted if their workflow is missing,
    failed as stalled when processing outlasts the configured limit."""
    stall_after = timedelta(seconds=runtime.current().settings.ingest_stall_seconds)
    now = utcnow()
    work = []
    for document in await repository.unfinished_ingestions(session):
        args = arguments(document)
        stalled = (
            document.status == "processing"
            and document.ingest_started_at is not None
            and now - document.ingest_started_at > stall_after
        )
        work.append(
            durable.Unfinished(
                workflow_id=ingest_workflow_id(document),
                restart=_restarter(ingest_workflow_id(document), args),
                give_up=_giver_up(args),
                stalled_reason="stalled" if stalled else None,
            )
        )
    return work


def _restarter(workflow_id: str, args: tuple[Any, ...]) -> Any:
    async def restart() -> None:
        await durable.start(ingest, workflow_id, *args)

    return restart


def _giver_up(args: tuple[str, str, int, int, str]) -> Any:
    tenant_id, document_id, version, attempt, reservation = args

    async def give_up(session: AsyncSession, reason: str) -> None:
        await mark_failed(
            session,
            uuid.UUID(tenant_id),
            uuid.UUID(document_id),
            version,
            attempt,
            reservation,
            reason,
        )
        await _invalidate(uuid.UUID(tenant_id))

    return give_up
