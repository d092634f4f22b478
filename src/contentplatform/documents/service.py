"""The rules of knowledge documents (the web pages the website scan imports: page_imports.py).
Never commits: the caller's unit of work does."""

from __future__ import annotations

import hashlib
import os
import uuid

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.billing import service as billing
from contentplatform.core.runtime import Runtime
from contentplatform.credits import service as credits
from contentplatform.documents import durable as documents_durable
from contentplatform.documents import index as search
from contentplatform.documents import repository, schemas
from contentplatform.documents.errors import (
    DocumentNotFound,
    DocumentNotReady,
    DocumentNotRetryable,
    FilenameRefused,
    FileTooLarge,
    FileTypeMismatch,
    NothingUploaded,
    SecondPrimaryDocument,
    StoragePathTaken,
    UploadExpired,
)
from contentplatform.documents.models import Document
from contentplatform.kit import durable, errors
from contentplatform.kit.cache import ScopedCache
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.errors import Conflict, FieldError
from contentplatform.storage import paths, sniff
from contentplatform.storage.store import StorageError
from contentplatform.tenants import service as tenants

INGEST_KIND = "documents.ingest"
CONTENT_LIMIT_BYTES = 250_000
CONTENT_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "doc": "application/msword",
    "txt": "text/plain; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "htm": "text/html; charset=utf-8",
}
# The extensions a document of each type may carry; the first is added when a name has none.
EXTENSIONS = {
    "pdf": (".pdf",),
    "docx": (".docx",),
    "doc": (".doc",),
    "txt": (".txt",),
    "md": (".md", ".markdown"),
    "html": (".html", ".htm"),
    "htm": (".htm", ".html"),
}


def ingest_cost(size_bytes: int) -> int:
    """Credits to ingest a file, from the one price table (one per started megabyte)."""
    return credits.price(INGEST_KIND, content_length=size_bytes).amount


def _confirmed(document: Document, *, unchanged: bool) -> schemas.ConfirmedDocument:
    record = schemas.Document.model_validate(document)
    return schemas.ConfirmedDocument(**record.model_dump(), unchanged=unchanged)


def changed(session: AsyncSession, cache: ScopedCache, tenant_id: uuid.UUID) -> None:
    """Retire the tenant's cached lists once this change is committed."""

    async def invalidate() -> None:
        await cache.invalidate(documents_durable.cache_scope(tenant_id))

    after_commit(session, invalidate)


async def require(session: AsyncSession, tenant: TenantAccess, document_id: uuid.UUID) -> Document:
    document = await repository.get(session, tenant.tenant_id, document_id)
    return errors.require(document, DocumentNotFound, document_id)


# --- reading ----------------------------------------------------------------------------------


def cache_scope(tenant_id: uuid.UUID) -> str:
    """What every change to the tenant's documents retires from the cache (`changed`): its
    cached lists (the declaration of documents.list caches them)."""
    return documents_durable.cache_scope(tenant_id)


async def list_documents(
    session: AsyncSession, tenant: TenantAccess, query: schemas.ListDocumentsInput
) -> schemas.DocumentPage:
    rows, total = await repository.page(session, tenant.tenant_id, query)
    return schemas.DocumentPage(data=rows, total=total, limit=query.limit, offset=query.offset)


async def document_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """How many documents the tenant keeps (archived ones too): what the plan's `documents`
    limit counts."""
    count, _ = await repository.footprint(session, tenant_id)
    return count


@billing.counts_storage("documents")
async def stored_bytes(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """The bytes of the tenant's documents (archived ones too), for `storage_bytes`."""
    _, stored = await repository.footprint(session, tenant_id)
    return stored


async def room_for(
    session: AsyncSession, tenant_id: uuid.UUID, *, documents: int, size_bytes: int
) -> None:
    """Refuse a write that takes the tenant past its plan's documents or storage (403).

    The plan read once, the documents counted only when it has such a limit; storage counts
    every domain's bytes (media too)."""
    limits = await billing.plan_limits(session, tenant_id)
    if limits.documents is None and limits.storage_bytes is None:
        return
    if documents and limits.documents is not None:
        await billing.check_limit(
            session, tenant_id, "documents", await document_count(session, tenant_id), documents
        )
    await billing.check_storage(session, tenant_id, size_bytes)


async def stats(session: AsyncSession, tenant: TenantAccess) -> schemas.DocumentStats:
    counts = await repository.count_by_status(session, tenant.tenant_id)
    by_status = {status: counts.get(status, 0) for status in schemas.STATUSES}
    return schemas.DocumentStats(total=sum(counts.values()), **by_status)


async def content(
    session: AsyncSession, runtime: Runtime, tenant: TenantAccess, document_id: uuid.UUID
) -> schemas.DocumentContent:
    document = await require(session, tenant, document_id)
    text, problem = "", None
    if document.text_path:
        try:
            text = (await runtime.store.get(document.text_path)).decode("utf-8")
        except (StorageError, UnicodeDecodeError) as error:
            problem = f"The stored text could not be read ({error}); rebuilt from its chunks."
            text = await search.document_text(session, tenant.tenant_id, document.id)
    elif document.status == "error":
        problem = document.error or "Ingestion failed."
    else:
        problem = "The document has not been ingested yet."
    return schemas.DocumentContent(
        id=document.id,
        filename=document.filename,
        file_type=document.file_type,
        status=document.status,
        content=truncate_utf8(text, CONTENT_LIMIT_BYTES),
        contentError=problem,
    )


def truncate_utf8(text: str, limit: int) -> str:
    """At most `limit` bytes of UTF-8, never cutting a character in half."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


# --- writing ----------------------------------------------------------------------------------


async def create(
    session: AsyncSession,
    cache: ScopedCache,
    tenant: TenantAccess,
    data: schemas.CreateDocumentInput,
) -> schemas.Document:
    """Register a document for an object path; it is ingested once the upload is confirmed."""
    storage_path = paths.validate_storage_path(data.storage_path, tenant.org_id)
    existing = await repository.by_storage_path(session, tenant.tenant_id, storage_path)
    if existing is not None:
        raise StoragePathTaken(f"Document {existing.id} already uses this storagePath.")
    await room_for(session, tenant.tenant_id, documents=1, size_bytes=0)
    document = Document(
        id=uuid.uuid4(),
        tenant_id=tenant.tenant_id,
        filename=data.filename,
        file_type=data.file_type,
        storage_path=storage_path,
        source="upload",
        source_metadata={},
        status="pending",
    )
    session.add(document)
    await flush_or_conflict(
        session, StoragePathTaken("Another request just registered this storagePath.")
    )
    changed(session, cache, tenant.tenant_id)
    return schemas.Document.model_validate(document)


async def create_upload_url(
    runtime: Runtime, tenant: TenantAccess, data: schemas.CreateUploadUrlInput, base_url: str
) -> schemas.UploadUrl:
    limit = runtime.settings.max_upload_bytes
    if data.content_length > limit:
        raise FileTooLarge(
            f"The file is {data.content_length} bytes; the most this service accepts is {limit}.",
            errors=[FieldError("contentLength", f"must be at most {limit}")],
        )
    storage_path = paths.new_upload_path(tenant.org_id, data.filename)
    target = await runtime.store.upload_url(
        storage_path,
        content_type=CONTENT_TYPES[data.file_type],
        content_length=data.content_length,
        expires_in=runtime.settings.upload_url_ttl_seconds,
        base_url=base_url,
    )
    return schemas.UploadUrl(
        storage_path=storage_path,
        upload_url=target.url,
        method="PUT",
        headers=target.headers,
        expires_at=target.expires_at,
    )


async def confirm_upload(
    session: AsyncSession, runtime: Runtime, tenant: TenantAccess, data: schemas.ConfirmUploadInput
) -> schemas.ConfirmedDocument:
    """Check what was uploaded, de-duplicate it, reserve credits and start its ingestion."""
    storage_path = paths.validate_storage_path(data.storage_path, tenant.org_id)
    content = await _uploaded_bytes(runtime, storage_path, data.file_type)
    content_hash = hashlib.sha256(content).hexdigest()
    # One confirmation per tenant at a time, so racing confirms of the same content agree on
    # one document instead of each making its own.
    await tenants.lock_tenant(session, tenant.tenant_id)

    duplicate, document = await repository.by_content_hash_or_storage_path(
        session, tenant.tenant_id, content_hash, storage_path
    )
    if duplicate is not None:
        return _confirmed(duplicate, unchanged=True)

    stored_before = (document.size_bytes or 0) if document is not None else 0
    await room_for(
        session,
        tenant.tenant_id,
        documents=1 if document is None else 0,
        size_bytes=len(content) - stored_before,
    )
    if document is None:
        document = Document(
            id=uuid.uuid4(),
            tenant_id=tenant.tenant_id,
            storage_path=storage_path,
            source="upload",
            source_metadata={},
            document_version=1,
            ingest_attempt=0,
        )
        session.add(document)
    elif _upload_expired(document):
        raise UploadExpired(
            f"Document {document.id} was registered at this storagePath but no upload was "
            "confirmed within the upload URL's lifetime, so it failed as upload_missing. "
            "Delete it, then confirm the upload again to make a new document."
        )
    elif document.content_hash is not None:
        # Other content at a known path: the next version of the same document.
        document.document_version += 1
        document.ingest_attempt = 0
    document.filename = data.filename
    document.file_type = data.file_type
    document.content_hash = content_hash
    document.size_bytes = len(content)
    document.chunk_count = 0
    document.text_path = None
    await _start_ingestion(session, runtime, tenant, document)
    await flush_or_conflict(
        session,
        StoragePathTaken("Another upload to this storagePath is being confirmed; try again."),
    )
    return _confirmed(document, unchanged=False)


async def retry_ingestion(
    session: AsyncSession, runtime: Runtime, tenant: TenantAccess, document_id: uuid.UUID
) -> None:
    document = await require(session, tenant, document_id)
    if document.status != "error":
        raise DocumentNotRetryable(
            f"Only a document in error can be retried; this one is {document.status}."
        )
    if _upload_expired(document):
        raise DocumentNotRetryable(
            "This document's upload never came (upload_missing); delete it and upload the file "
            "again."
        )
    if document.content_hash is None:
        raise DocumentNotRetryable("This document was never uploaded; confirm its upload first.")
    document.ingest_attempt += 1
    await _start_ingestion(session, runtime, tenant, document)


def _upload_expired(document: Document) -> bool:
    """Registered, never confirmed, and failed for it once the upload URL's lifetime passed."""
    return (
        document.content_hash is None
        and document.status == "error"
        and document.error == documents_durable.UPLOAD_MISSING
    )


async def _start_ingestion(
    session: AsyncSession, runtime: Runtime, tenant: TenantAccess, document: Document
) -> None:
    reservation_id = await hold_ingestion(
        session,
        runtime,
        tenant,
        document.id,
        document.content_hash,
        document.document_version,
        document.ingest_attempt,
        document.size_bytes or 0,
    )
    begin_ingestion(session, runtime, tenant, document, reservation_id)


async def hold_ingestion(
    session: AsyncSession,
    runtime: Runtime,
    tenant: TenantAccess,
    document_id: uuid.UUID,
    content_hash: str | None,
    version: int,
    attempt: int,
    size_bytes: int,
) -> uuid.UUID:
    """Hold the credits of one ingestion (InsufficientCredits, writing nothing, when short):
    apart from the document, so a caller can learn it is refused before changing anything."""
    # Tenant, document, content and version: a retried request never holds twice, and a new
    # document with a deleted one's content never adopts that one's hold.
    key = f"{tenant.tenant_id}:{document_id}:{content_hash}:v{version}"
    if attempt:
        key += f":retry{attempt}"
    # The document is written once, with its hold, after this (not flushed by the queries of
    # the hold): one write fewer in the tenant's serialized confirmation.
    with session.no_autoflush:
        reservation = await credits.reserve(
            session,
            tenant.tenant_id,
            kind=INGEST_KIND,
            idempotency_key=key,
            amount=ingest_cost(size_bytes),
            ttl_seconds=runtime.settings.credit_reservation_ttl_seconds,
            monthly_grant=runtime.settings.monthly_credit_grant,
        )
    return reservation.id


def begin_ingestion(
    session: AsyncSession,
    runtime: Runtime,
    tenant: TenantAccess,
    document: Document,
    reservation_id: uuid.UUID,
) -> None:
    """The document, its credits held, processing; its workflow starts once this commits."""
    document.ingest_reservation_id = reservation_id
    # Processing from now: its workflow starts as soon as this commits (no queue to wait in),
    # and the workflow need not write the document to say so.
    document.status = "processing"
    document.error = None
    document.ingest_started_at = utcnow()
    durable.start_after_commit(
        session,
        documents_durable.ingest,
        documents_durable.ingest_workflow_id(document),
        *documents_durable.arguments(document),
    )
    changed(session, runtime.cache, tenant.tenant_id)


async def _uploaded_bytes(runtime: Runtime, storage_path: str, file_type: str) -> bytes:
    problem = FieldError("storagePath", "nothing uploaded here")
    info = await runtime.store.head(storage_path)
    if info is None:
        raise NothingUploaded(
            "Nothing has been uploaded at this storagePath yet.", errors=[problem]
        )
    limit = runtime.settings.max_upload_bytes
    if info.size > limit:
        raise FileTooLarge(
            f"The file is {info.size} bytes; the most this service accepts is {limit}."
        )
    content = await runtime.store.get(storage_path)
    if not sniff.matches_type_full(content, file_type):
        raise FileTypeMismatch(
            f"The uploaded file is not a valid {file_type} file (its content was checked, "
            "not its name).",
            errors=[FieldError("fileType", "does not match the uploaded content")],
        )
    return content


async def update_knowledge(
    session: AsyncSession,
    cache: ScopedCache,
    tenant: TenantAccess,
    document_id: uuid.UUID,
    metadata: schemas.KnowledgeMetadataInput,
) -> schemas.DocumentKnowledge:
    document = await require(session, tenant, document_id)
    # null clears a text field; for a flag or a list it means "leave as it is".
    changes = {
        field: value
        for field, value in metadata.model_dump(exclude_unset=True).items()
        if value is not None or field in ("description", "language")
    }
    knowledge = schemas.Knowledge.model_validate(document.knowledge).model_copy(update=changes)
    if knowledge.is_primary and not document.is_primary:
        current = await repository.primary(session, tenant.tenant_id)
        if current is not None:
            raise SecondPrimaryDocument(
                f"“{current.filename}” ({current.id}) is already the primary knowledge "
                "document; unset it first (only one primary is allowed)."
            )
    knowledge.tags = list(dict.fromkeys(tag.strip() for tag in knowledge.tags if tag.strip()))
    document.is_primary = knowledge.is_primary
    document.source_metadata = {
        **document.source_metadata,
        "knowledge": knowledge.model_dump(by_alias=True),
    }
    await flush_or_conflict(
        session, SecondPrimaryDocument("Another document just became the primary one.")
    )
    changed(session, cache, tenant.tenant_id)
    return schemas.DocumentKnowledge(id=document.id, knowledge=knowledge)


async def rename(
    session: AsyncSession,
    cache: ScopedCache,
    tenant: TenantAccess,
    document_id: uuid.UUID,
    name: str,
) -> None:
    document = await require(session, tenant, document_id)
    document.filename = guarded_filename(name, document.file_type)
    changed(session, cache, tenant.tenant_id)


def guarded_filename(name: str, file_type: str) -> str:
    """The extension guard: a rename keeps the extension of the document's type.

    A name without an extension gets the type's; another type's extension is refused.
    """
    name = name.strip()
    if not name or any(c in name for c in "/\\\0") or any(ord(c) < 32 for c in name):
        raise FilenameRefused(
            "A filename cannot be empty or contain slashes or control characters.",
            errors=[FieldError("filename", "invalid characters")],
        )
    allowed = EXTENSIONS.get(file_type)
    if not allowed:  # e.g. imported web pages have no file extension to keep
        return name
    extension = os.path.splitext(name)[1].lower()
    if extension in allowed:
        return name
    if extension and extension[1:].isalnum() and len(extension) <= 6:
        raise FilenameRefused(
            f"A {file_type} document keeps the extension {allowed[0]}; {extension} is not allowed.",
            errors=[FieldError("filename", f"must end with {' or '.join(allowed)}")],
        )
    candidate = name + allowed[0]
    if len(candidate) > 255:
        raise FilenameRefused("The filename is too long once its extension is added.")
    return candidate


async def archive(
    session: AsyncSession, cache: ScopedCache, tenant: TenantAccess, document_id: uuid.UUID
) -> None:
    document = await require(session, tenant, document_id)
    if document.archived_at is None:
        document.archived_at = utcnow()
        changed(session, cache, tenant.tenant_id)


async def delete(
    session: AsyncSession, cache: ScopedCache, tenant: TenantAccess, document_id: uuid.UUID
) -> None:
    await require(session, tenant, document_id)
    await bulk_delete(session, cache, tenant, [document_id])


async def bulk_delete(
    session: AsyncSession, cache: ScopedCache, tenant: TenantAccess, ids: list[uuid.UUID]
) -> int:
    """Soft-delete; ids of other tenants or already deleted count for nothing."""
    deleted = await repository.soft_delete_many(session, tenant.tenant_id, ids, utcnow())
    if deleted:
        changed(session, cache, tenant.tenant_id)
    return len(deleted)


async def flush_or_conflict(session: AsyncSession, conflict: Conflict) -> None:
    """Flush, a unique index refusing the row as `conflict` (a racing request won)."""
    try:
        await session.flush()
    except IntegrityError:
        raise conflict from None


# --- what generation asks of the knowledge base ------------------------------------------------


async def check_usable_for_generation(
    session: AsyncSession, tenant_id: uuid.UUID, document_ids: list[uuid.UUID]
) -> None:
    """Each id must be a ready, unarchived document of this tenant."""
    for index, document_id in enumerate(document_ids):
        found = await repository.get(session, tenant_id, document_id)
        document = errors.require(found, DocumentNotFound, document_id)
        if document.status != "ready" or document.archived_at is not None:
            state = "archived" if document.archived_at is not None else document.status
            raise DocumentNotReady(
                f"Document {document_id} is {state}; only ready documents can ground an article.",
                errors=[FieldError(f"documentIds.{index}", f"is {state}, not ready")],
            )


async def primary_knowledge_id(session: AsyncSession, tenant_id: uuid.UUID) -> uuid.UUID | None:
    """The tenant's primary knowledge document, when it is ready and not archived."""
    document = await repository.primary(session, tenant_id)
    if document is None or document.status != "ready" or document.archived_at is not None:
        return None
    return document.id


async def knowledge_texts(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    document_ids: list[uuid.UUID] | None = None,
    limit: int = 20,
) -> list[tuple[uuid.UUID, str, str]]:
    """(id, filename, text) of the tenant's ready documents that are not archived (of
    `document_ids` when given; the primary first, then the newest, at most `limit`): the text
    rebuilt from the stored chunks, so no object storage is read."""
    found = []
    for document in await repository.ready_knowledge(session, tenant_id, document_ids, limit):
        found.append(
            (
                document.id,
                document.filename,
                await search.document_text(session, tenant_id, document.id),
            )
        )
    return found


async def public_urls(
    session: AsyncSession, tenant_id: uuid.UUID, document_ids: list[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """The public address of each of these documents that has one: a page the website scan
    read (`source` website_scan, `source_metadata.url` an http(s) URL). An uploaded file is
    the tenant's own and has none, so an article may link to the former and never names the
    latter."""
    found: dict[uuid.UUID, str] = {}
    for document_id in dict.fromkeys(document_ids):
        document = await repository.get(session, tenant_id, document_id)
        url = public_url(document) if document is not None else None
        if url is not None:
            found[document_id] = url
    return found


async def web_pages(
    session: AsyncSession, tenant_id: uuid.UUID, limit: int = 200
) -> list[tuple[str, str]]:
    """(title, URL) of the site pages the website scan imported as knowledge, newest first."""
    found = []
    for document in await repository.web_pages(session, tenant_id, limit):
        url = public_url(document)
        if url is not None:
            title = document.source_metadata.get("title")
            found.append((title if isinstance(title, str) and title else document.filename, url))
    return found


def public_url(document: Document) -> str | None:
    url = document.source_metadata.get("url")
    if document.source != "website_scan" or not isinstance(url, str):
        return None
    return url if url.lower().startswith(("https://", "http://")) else None


async def record_generation_use(
    session: AsyncSession, cache: ScopedCache, tenant_id: uuid.UUID, document_ids: list[uuid.UUID]
) -> None:
    """Count one generation for each document an article drew on."""
    await repository.record_use(session, tenant_id, document_ids, utcnow())
    changed(session, cache, tenant_id)
