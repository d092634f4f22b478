"""The ingestion workflow: processing -> ready | error.

Confirming the upload (or a retry) leaves the document processing and starts this at once.
`begin` reads where the file is; `index` extracts and chunks it (in worker processes), then, in
one transaction, marks the document ready, indexes the chunks and commits the credits. One write
per document: every write waits its turn for SQLite's one writer. Each checks the document first
and stops quietly when it was deleted, superseded by a newer version or retry, or failed
meanwhile (stalled), so late work never overwrites newer work. A failure puts the document in
`error` with a reason a person can act on, and releases the credits held for it. Either end is
told as an event (`document.ready`, `document.failed`) in the transaction that writes it.

Up to `ready` the workflow has no DBOS steps. Every part is idempotent, so a workflow that DBOS
recovers after a crash simply runs again from the start; a step would checkpoint only what is cheap
to redo (the file is extracted again either way) and costs two round trips to the system database.
DBOS still gives the run its id (a second start is a no-op) and recovery after a crash. A run
cancelled as stalled is not interrupted; its last write finds the document failed and changes
nothing.

With embeddings configured, one step follows `ready`: `documents.embed` embeds the document's
chunks (a network call worth checkpointing, retried with backoff while the server is unavailable)
and stores their vectors. The document is ready and searchable by full text before it starts, and
stays so if it fails for good (logged). What it left undone, and the chunks of documents ingested
before embeddings were switched on or while the model was another, the `documents.fill_vectors`
pass fills: on every reconcile pass, in a bounded amount, skipping documents whose ingestion still
runs (its step is at work on them). Several processes may fill the same chunks at once: the
vectors are the same, only the calls are spent twice.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.ai.base import ProviderError
from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.documents import extraction, pipeline, ready, repository, vectors
from contentplatform.documents.models import Document
from contentplatform.events import service as events
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.storage import paths
from contentplatform.storage.store import StorageError

log = logging.getLogger(__name__)

# The error of a document registered (documents.create) but not confirmed within the upload URL's
# lifetime: shown as it is, like `stalled`.
UPLOAD_MISSING = "upload_missing"


def ingest_workflow_id(document: Document) -> str:
    return _ingestion_id(document.id, document.document_version, document.ingest_attempt)


def _ingestion_id(document_id: uuid.UUID, version: int, attempt: int) -> str:
    base = f"ingest:{document_id}:{version}"
    return base if attempt == 0 else f"{base}:{attempt}"


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
        if source is None:
            return "settled"
        await index(*job, source.storage_path, source.file_type, reservation)
    except Superseded:
        await release(uuid.UUID(tenant_id), reservation)
        return "superseded"
    except Exception as error:
        await fail(*job, reservation, reason_for(error))
        return "error"
    if runtime.current().embedder is not None:
        try:
            await embed(tenant_id, document_id)
        except Exception as error:
            # Ready and searchable by full text all the same; the fill pass tries again later.
            log.warning("could not embed document %s: %s", document_id, error)
    return "ready"


# Tries of the embed step, the first pause between them (doubling): about 30 s in all, beside the
# client's own retries of each request.
EMBED_TRIES = 4
EMBED_RETRY_SECONDS = 2.0


def _worth_retrying(error: BaseException) -> bool:
    """A server that refused the request (credentials, model) refuses it again."""
    return not (isinstance(error, ProviderError) and not error.retryable)


@DBOS.step(
    name="documents.embed",
    retries_allowed=True,
    max_attempts=EMBED_TRIES,
    interval_seconds=EMBED_RETRY_SECONDS,
    backoff_rate=2.0,
    should_retry=_worth_retrying,
)
async def embed(tenant_id: str, document_id: str) -> int:
    """Store a vector for each of the document's chunks that has none of the configured model;
    how many. Each try picks up where the last stopped (stored batches stay)."""
    current = runtime.current()
    if current.embedder is None:
        return 0
    return await vectors.fill_document(
        current.db, current.embedder, uuid.UUID(tenant_id), uuid.UUID(document_id)
    )


# The most documents, and chunks (in batches of embeddings_batch_size), one fill pass embeds:
# a pass runs beside the reconciler, so it stays short; the next pass goes on.
FILL_DOCUMENTS_PER_PASS = 20
FILL_BATCHES_PER_PASS = 8
_INGESTING = {"PENDING", "ENQUEUED"}


@durable.maintenance("documents.fill_vectors")
async def fill_vectors(db: Database) -> int:
    """With embeddings configured: drop the vectors of deleted documents, then embed the chunks
    of ready documents that have no vector of the configured model (left by an embed step that
    failed, made before embeddings were switched on, or by another model), skipping documents
    whose ingestion is still running. How many vectors it stored."""
    embedder = runtime.current().embedder
    if embedder is None:
        return 0
    async with db.unit_of_work() as session:
        await vectors.drop_deleted(session)
        work = await vectors.unfilled(
            session, embedder.model, embedder.dimensions, limit=FILL_DOCUMENTS_PER_PASS
        )
    budget = FILL_BATCHES_PER_PASS * embedder.batch_size
    stored = 0
    for document in work:
        if budget <= stored:
            break
        workflow_id = _ingestion_id(
            document.document_id, document.document_version, document.ingest_attempt
        )
        status = await DBOS.get_workflow_status_async(workflow_id)
        if status is not None and status.status in _INGESTING:
            continue
        try:
            stored += await vectors.fill_document(
                db, embedder, document.tenant_id, document.document_id, limit=budget - stored
            )
        except ProviderError as error:
            log.warning("filling vectors stopped until the next pass: %s", error.message)
            break
    if stored:
        log.info("filled %d chunk vectors", stored)
    return stored


def reason_for(error: Exception) -> str:
    if isinstance(error, extraction.ExtractionError):
        return str(error)
    if isinstance(error, StorageError):
        return f"The uploaded file could not be read from storage: {error}"
    if isinstance(error, pipeline.ExtractionCrashed):
        return (
            "Reading the file stopped unexpectedly (it may be too large or malformed to "
            "process); retry it, or upload a smaller or re-saved copy."
        )
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


async def begin(
    tenant_id: uuid.UUID, document_id: uuid.UUID, version: int, attempt: int
) -> repository.Ingestion | None:
    """Where the document's file is, once it is processing. None when this version and attempt
    already ended (a run DBOS recovered after the end, before it recorded it): nothing is left
    to do.

    Confirming an upload (or a retry) leaves the document processing already, so this only
    reads; a document still pending (confirmed by an earlier release, which started the
    workflow from `pending`) is marked processing here."""
    async with runtime.current().db.unit_of_work() as session:
        found = await repository.ingestion(session, tenant_id, document_id)
        if found is None or (found.document_version, found.ingest_attempt) != (version, attempt):
            raise Superseded()
        if found.status in ("ready", "error"):
            return None
        marked = found.status == "pending" and await repository.mark_processing(
            session, tenant_id, document_id, version, attempt, utcnow()
        )
    if marked:
        await _invalidate(tenant_id)
    return found


async def index(
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    version: int,
    attempt: int,
    storage_path: str,
    file_type: str,
    reservation: str,
) -> int:
    """Extract, keep and chunk the text (in a worker process, which reads and writes storage
    itself), then, in one transaction, mark the document ready, index its chunks and commit its
    credits: one write for all of it, shared with the documents that finished meanwhile (each
    transaction waits its turn for SQLite's one writer)."""
    current = runtime.current()
    settings = current.settings
    text_path = paths.derived_text_path(paths.organization_of(storage_path), document_id, version)
    work = pipeline.for_processes(
        settings.ingest_processes, log_level=settings.log_level, logs_as_json=settings.logs_as_json
    )
    chunks = await work.run(
        pipeline.Job(
            storage_url=settings.resolved_storage_url,
            data_dir=str(settings.data_dir),
            source_path=storage_path,
            file_type=file_type,
            text_path=text_path,
            max_tokens=settings.chunk_tokens,
            overlap_tokens=settings.chunk_overlap_tokens,
        )
    )
    # With the documents that finished meanwhile, in one transaction (documents/ready.py).
    if not await ready.write(
        current.db,
        ready.Ready(
            tenant_id,
            document_id,
            version,
            attempt,
            list(chunks),
            text_path,
            uuid.UUID(reservation),
        ),
    ):
        raise Superseded()
    await _invalidate(tenant_id)
    return len(chunks)


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
    # The document first, then the hold: the order `index` takes them in, so the two never
    # wait on each other.
    try:
        document: Document | None = await _current(
            session, tenant_id, document_id, version, attempt
        )
    except Superseded:
        document = None
    if document is not None and document.status == "ready":
        return  # it got there (what failed came after): its credits are spent
    await credits.release(session, tenant_id, uuid.UUID(reservation))
    if document is not None:
        # Told once: a run failed as stalled that fails again later changes only the reason.
        if document.status != "error":
            announce_failed(session, tenant_id, document.id, document.filename, reason)
        document.status = "error"
        document.error = reason


def announce_failed(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    filename: str,
    reason: str,
) -> None:
    events.emit(
        session,
        tenant_id,
        "document.failed",
        resource_id=document_id,
        payload={"document_id": document_id, "filename": filename, "error": reason},
    )


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
                restart=durable.restarter(ingest, ingest_workflow_id(document), *args),
                give_up=_giver_up(args),
                stalled_reason="stalled" if stalled else None,
            )
        )
    return work


@durable.maintenance("documents.fail_missing_uploads")
async def fail_missing_uploads(db: Database) -> int:
    """Fail as `upload_missing` the documents registered longer ago than an upload URL lives
    whose upload was never confirmed: no URL handed out before they were registered still works,
    so they would otherwise stay pending for ever. How many it failed."""
    lifetime = timedelta(seconds=runtime.current().settings.upload_url_ttl_seconds)
    now = utcnow()
    async with db.unit_of_work() as session:
        failed = await repository.fail_never_uploaded(session, now - lifetime, UPLOAD_MISSING, now)
        for tenant_id, document_id, filename in failed:
            announce_failed(session, tenant_id, document_id, filename, UPLOAD_MISSING)
    for tenant_id in {tenant_id for tenant_id, _, _ in failed}:
        await _invalidate(tenant_id)
    if failed:
        log.info("failed %d documents whose upload never came", len(failed))
    return len(failed)


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
