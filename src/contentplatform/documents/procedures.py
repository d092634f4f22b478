"""The Documents operations: declarations only; the rules live in service.py."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.procedures import Cached, Context, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.documents import schemas, service
from contentplatform.documents.errors import (
    DocumentNotFound,
    DocumentNotRetryable,
    FilenameRefused,
    FileTooLarge,
    FileTypeMismatch,
    NothingUploaded,
    SecondPrimaryDocument,
    StoragePathTaken,
    UploadExpired,
)
from contentplatform.kit.schemas import SUCCESS, Empty, Success

router = ProcedureRouter("documents", tag="Documents")


@router.get(
    "list",
    "/v1/documents",
    access=Access.member,
    description="Cached for 60 seconds per tenant; every change to the tenant's documents "
    "(including ingestion progress) invalidates the cache. Archived documents are left out "
    "unless `archived` asks for them. `search` finds the documents whose filename, knowledge "
    "description or one of whose tags holds it, ignoring case; it does not search the "
    "documents' text.",
    cached=Cached(
        scope=lambda tenant: service.cache_scope(tenant.tenant_id),
        seconds=lambda settings: settings.documents_list_cache_seconds,
    ),
)
async def list_documents(ctx: Context, data: schemas.ListDocumentsInput) -> schemas.DocumentPage:
    """Documents of the tenant, filtered, sorted and paginated."""
    return await service.list_documents(ctx.session, ctx.tenant, data)


@router.post(
    "create", "/v1/documents", access=Access.editor, errors=[StoragePathTaken, PlanLimitReached]
)
async def create(ctx: Context, data: schemas.CreateDocumentInput) -> schemas.Document:
    """Register a pending document for an object path.

    Ingestion starts when the upload is confirmed (`documents.confirmUpload`). A storagePath already
    used by a live document is 409. Not confirmed within the upload URL's lifetime
    (UPLOAD_URL_TTL_SECONDS after this call), the document fails: status `error`, error
    `upload_missing`."""
    return await service.create(ctx.session, ctx.runtime.cache, ctx.tenant, data)


@router.post(
    "createUploadUrl", "/v1/documents/upload-url", access=Access.editor, errors=[FileTooLarge]
)
async def create_upload_url(ctx: Context, data: schemas.CreateUploadUrlInput) -> schemas.UploadUrl:
    """Where to PUT a file before confirming it.

    Returns a short-lived URL (`upload_url`) bound to a new `storage_path` under the caller's
    organization: this service's own upload endpoint with local storage, a presigned URL with
    S3-compatible storage. Send the returned headers with the PUT, then confirm with
    `storagePath` (inputs are camelCase)."""
    return await service.create_upload_url(ctx.runtime, ctx.tenant, data, ctx.base_url)


@router.get("getStats", "/v1/documents/stats", access=Access.member)
async def get_stats(ctx: Context, _: Empty) -> schemas.DocumentStats:
    """How many documents are in each ingestion status (archived ones left out).

    Counts of the organization's live documents by status (pending, processing, ready, error),
    with every status present (0 when none), and their total."""
    return await service.stats(ctx.session, ctx.tenant)


@router.post(
    "confirmUpload",
    "/v1/documents/confirm-upload",
    access=Access.editor,
    errors=[
        NothingUploaded,
        FileTooLarge,
        FileTypeMismatch,
        InsufficientCredits,
        StoragePathTaken,
        UploadExpired,
        PlanLimitReached,
    ],
)
async def confirm_upload(
    ctx: Context, data: schemas.ConfirmUploadInput
) -> schemas.ConfirmedDocument:
    """Confirm an upload: validate, hash, de-duplicate, reserve credits, ingest.

    The content must match `fileType` (checked by its bytes). The same content already in a live
    document returns that document with `unchanged: true` and reserves nothing. Other content at a
    known storagePath becomes the next `document_version`. Not enough credits is 402
    PAYMENT_REQUIRED. A document registered with documents.create whose upload was not confirmed
    within the upload URL's lifetime has failed as `upload_missing`; confirming at its path then
    is 409 (delete it first)."""
    return await service.confirm_upload(ctx.session, ctx.runtime, ctx.tenant, data)


@router.post("bulkDelete", "/v1/documents/bulk-delete", access=Access.admin)
async def bulk_delete(ctx: Context, data: schemas.BulkDeleteInput) -> schemas.BulkDeleted:
    """Soft-delete up to 100 documents; counts only this tenant's live ones.

    Each deleted document leaves retrieval at once. An id of another organization, unknown or
    already deleted, is skipped rather than refused: `deleted` says how many this call removed."""
    deleted = await service.bulk_delete(ctx.session, ctx.runtime.cache, ctx.tenant, data.ids)
    return schemas.BulkDeleted(success=True, deleted=deleted)


@router.get("getById", "/v1/documents/{id}", access=Access.member, errors=[DocumentNotFound])
async def get_by_id(ctx: Context, data: schemas.DocumentIdInput) -> schemas.Document:
    """One document.

    Its status, versions and ingestion outcome, without its text (documents.getContent). Another
    organization's document, or a deleted one, is 404."""
    return schemas.Document.model_validate(await service.require(ctx.session, ctx.tenant, data.id))


@router.delete("delete", "/v1/documents/{id}", access=Access.admin, errors=[DocumentNotFound])
async def delete(ctx: Context, data: schemas.DocumentIdInput) -> Success:
    """Soft-delete a document; it leaves retrieval at once.

    Chat and generation stop finding its chunks from this moment. Deleted or another
    organization's: 404."""
    await service.delete(ctx.session, ctx.runtime.cache, ctx.tenant, data.id)
    return SUCCESS


@router.get(
    "getContent", "/v1/documents/{id}/content", access=Access.member, errors=[DocumentNotFound]
)
async def get_content(ctx: Context, data: schemas.DocumentIdInput) -> schemas.DocumentContent:
    """The extracted text, truncated to 250,000 bytes.

    Read from storage; when storage fails, rebuilt from the chunks with `contentError` saying why.
    Truncation never splits a UTF-8 character."""
    return await service.content(ctx.session, ctx.runtime, ctx.tenant, data.id)


@router.patch(
    "updateKnowledgeMetadata",
    "/v1/documents/{id}/knowledge-metadata",
    access=Access.editor,
    errors=[DocumentNotFound, SecondPrimaryDocument],
)
async def update_knowledge_metadata(
    ctx: Context, data: schemas.UpdateKnowledgeMetadataInput
) -> schemas.DocumentKnowledge:
    """Set primary, description, tags or language (fields left out stay as they are).

    Only one primary knowledge document per tenant: 409 names the current one."""
    return await service.update_knowledge(
        ctx.session, ctx.runtime.cache, ctx.tenant, data.id, data.metadata
    )


@router.post(
    "rename",
    "/v1/documents/{id}/rename",
    access=Access.editor,
    errors=[FilenameRefused, DocumentNotFound],
)
async def rename(ctx: Context, data: schemas.RenameDocumentInput) -> Success:
    """Rename a document; it keeps its type's extension.

    Extension guard: the new name must end with the extension of the document's type (`.pdf`,
    `.docx`, `.doc`, `.txt`, `.md`/`.markdown`, `.html`/`.htm`); a name without an extension gets it
    added; another extension is 400."""
    await service.rename(ctx.session, ctx.runtime.cache, ctx.tenant, data.id, data.filename)
    return SUCCESS


@router.post(
    "archive", "/v1/documents/{id}/archive", access=Access.editor, errors=[DocumentNotFound]
)
async def archive(ctx: Context, data: schemas.DocumentIdInput) -> Success:
    """Archive a document: out of retrieval, still listable with `archived`.

    Archived documents are left out of retrieval and of documents.list unless `archived` asks
    for them; archiving one already archived changes nothing."""
    await service.archive(ctx.session, ctx.runtime.cache, ctx.tenant, data.id)
    return SUCCESS


@router.post(
    "retryIngestion",
    "/v1/documents/{id}/retry",
    access=Access.editor,
    errors=[InsufficientCredits, DocumentNotFound, DocumentNotRetryable],
)
async def retry_ingestion(ctx: Context, data: schemas.DocumentIdInput) -> Success:
    """Ingest a document in error again (same id); 409 in any other status.

    Parsing, chunking and indexing start again from its stored file, reserving credits as the
    first ingestion did (402 when short). A document whose upload never came (`upload_missing`)
    or that was never uploaded cannot be retried: 409 saying so (delete it and upload again)."""
    await service.retry_ingestion(ctx.session, ctx.runtime, ctx.tenant, data.id)
    return SUCCESS
