"""The Documents operations: declarations only; the rules live in service.py."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
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
)
from contentplatform.kit.schemas import Empty

router = ProcedureRouter("documents", tag="Documents")


@router.procedure(
    "list",
    "GET",
    "/v1/documents",
    access=Access.member,
    input=schemas.ListDocumentsInput,
    output=schemas.DocumentPage,
    summary="Documents of the tenant, filtered, sorted and paginated.",
    description="Cached for 60 seconds per tenant; every change to the tenant's documents "
    "(including ingestion progress) invalidates the cache. Archived documents are left out "
    "unless `archived` asks for them.",
)
async def list_documents(ctx: Context, data: schemas.ListDocumentsInput) -> schemas.DocumentPage:
    return await service.list_documents(
        ctx.session, ctx.runtime.cache, ctx.tenant, data, ctx.settings.documents_list_cache_seconds
    )


@router.procedure(
    "create",
    "POST",
    "/v1/documents",
    access=Access.editor,
    input=schemas.CreateDocumentInput,
    output=schemas.Document,
    summary="Register a pending document for an object path.",
    description="Ingestion starts when the upload is confirmed (`documents.confirmUpload`). "
    "A storagePath already used by a live document is 409.",
    errors=[StoragePathTaken],
)
async def create(ctx: Context, data: schemas.CreateDocumentInput) -> schemas.Document:
    return await service.create(ctx.session, ctx.runtime.cache, ctx.tenant, data)


@router.procedure(
    "createUploadUrl",
    "POST",
    "/v1/documents/upload-url",
    access=Access.editor,
    input=schemas.CreateUploadUrlInput,
    output=schemas.UploadUrl,
    summary="Where to PUT a file before confirming it.",
    description="Returns a short-lived URL bound to a new `storagePath` under the caller's "
    "organization: this service's own upload endpoint with local storage, a presigned URL with "
    "S3-compatible storage. Send the returned headers with the PUT.",
    errors=[FileTooLarge],
)
async def create_upload_url(ctx: Context, data: schemas.CreateUploadUrlInput) -> schemas.UploadUrl:
    return await service.create_upload_url(ctx.runtime, ctx.tenant, data, ctx.base_url)


@router.procedure(
    "getStats",
    "GET",
    "/v1/documents/stats",
    access=Access.member,
    output=schemas.DocumentStats,
    summary="How many documents are in each ingestion status (archived ones left out).",
)
async def get_stats(ctx: Context, _: Empty) -> schemas.DocumentStats:
    return await service.stats(ctx.session, ctx.tenant)


@router.procedure(
    "confirmUpload",
    "POST",
    "/v1/documents/confirm-upload",
    access=Access.editor,
    input=schemas.ConfirmUploadInput,
    output=schemas.ConfirmedDocument,
    summary="Confirm an upload: validate, hash, de-duplicate, reserve credits, ingest.",
    description="The content must match `fileType` (checked by its bytes). The same content "
    "already in a live document returns that document with `unchanged: true` and reserves "
    "nothing. Other content at a known storagePath becomes the next `document_version`. "
    "Not enough credits is 402 PAYMENT_REQUIRED.",
    errors=[NothingUploaded, FileTooLarge, FileTypeMismatch, InsufficientCredits, StoragePathTaken],
)
async def confirm_upload(
    ctx: Context, data: schemas.ConfirmUploadInput
) -> schemas.ConfirmedDocument:
    return await service.confirm_upload(ctx.session, ctx.runtime, ctx.tenant, data)


@router.procedure(
    "bulkDelete",
    "POST",
    "/v1/documents/bulk-delete",
    access=Access.admin,
    input=schemas.BulkDeleteInput,
    output=schemas.BulkDeleted,
    summary="Soft-delete up to 100 documents; counts only this tenant's live ones.",
)
async def bulk_delete(ctx: Context, data: schemas.BulkDeleteInput) -> schemas.BulkDeleted:
    deleted = await service.bulk_delete(ctx.session, ctx.runtime.cache, ctx.tenant, data.ids)
    return schemas.BulkDeleted(success=True, deleted=deleted)


@router.procedure(
    "getById",
    "GET",
    "/v1/documents/{id}",
    access=Access.member,
    input=schemas.DocumentIdInput,
    output=schemas.Document,
    summary="One document.",
    errors=[DocumentNotFound],
)
async def get_by_id(ctx: Context, data: schemas.DocumentIdInput) -> schemas.Document:
    return service.to_schema(await service.require(ctx.session, ctx.tenant, data.id))


@router.procedure(
    "delete",
    "DELETE",
    "/v1/documents/{id}",
    access=Access.admin,
    input=schemas.DocumentIdInput,
    output=schemas.Success,
    summary="Soft-delete a document; it leaves retrieval at once.",
    errors=[DocumentNotFound],
)
async def delete(ctx: Context, data: schemas.DocumentIdInput) -> schemas.Success:
    await service.delete(ctx.session, ctx.runtime.cache, ctx.tenant, data.id)
    return schemas.Success(success=True)


@router.procedure(
    "getContent",
    "GET",
    "/v1/documents/{id}/content",
    access=Access.member,
    input=schemas.DocumentIdInput,
    output=schemas.DocumentContent,
    summary="The extracted text, truncated to 250,000 bytes.",
    description="Read from storage; when storage fails, rebuilt from the chunks with "
    "`contentError` saying why. Truncation never splits a UTF-8 character.",
    errors=[DocumentNotFound],
)
async def get_content(ctx: Context, data: schemas.DocumentIdInput) -> schemas.DocumentContent:
    return await service.content(ctx.session, ctx.runtime, ctx.tenant, data.id)


@router.procedure(
    "updateKnowledgeMetadata",
    "PATCH",
    "/v1/documents/{id}/knowledge-metadata",
    access=Access.editor,
    input=schemas.UpdateKnowledgeMetadataInput,
    output=schemas.DocumentKnowledge,
    summary="Set primary, description, tags or language (fields left out stay as they are).",
    description="Only one primary knowledge document per tenant: 409 names the current one.",
    errors=[DocumentNotFound, SecondPrimaryDocument],
)
async def update_knowledge_metadata(
    ctx: Context, data: schemas.UpdateKnowledgeMetadataInput
) -> schemas.DocumentKnowledge:
    return await service.update_knowledge(
        ctx.session, ctx.runtime.cache, ctx.tenant, data.id, data.metadata
    )


@router.procedure(
    "rename",
    "POST",
    "/v1/documents/{id}/rename",
    access=Access.editor,
    input=schemas.RenameDocumentInput,
    output=schemas.Success,
    summary="Rename a document; it keeps its type's extension.",
    description="Extension guard: the new name must end with the extension of the document's "
    "type (`.pdf`, `.docx`, `.doc`, `.txt`, `.md`/`.markdown`, `.html`/`.htm`); a name without "
    "an extension gets it added; another extension is 400.",
    errors=[FilenameRefused, DocumentNotFound],
)
async def rename(ctx: Context, data: schemas.RenameDocumentInput) -> schemas.Success:
    await service.rename(ctx.session, ctx.runtime.cache, ctx.tenant, data.id, data.filename)
    return schemas.Success(success=True)


@router.procedure(
    "archive",
    "POST",
    "/v1/documents/{id}/archive",
    access=Access.editor,
    input=schemas.DocumentIdInput,
    output=schemas.Success,
    summary="Archive a document: out of retrieval, still listable with `archived`.",
    errors=[DocumentNotFound],
)
async def archive(ctx: Context, data: schemas.DocumentIdInput) -> schemas.Success:
    await service.archive(ctx.session, ctx.runtime.cache, ctx.tenant, data.id)
    return schemas.Success(success=True)


@router.procedure(
    "retryIngestion",
    "POST",
    "/v1/documents/{id}/retry",
    access=Access.editor,
    input=schemas.DocumentIdInput,
    output=schemas.Success,
    summary="Ingest a document in error again (same id); 409 in any other status.",
    errors=[InsufficientCredits, DocumentNotFound, DocumentNotRetryable],
)
async def retry_ingestion(ctx: Context, data: schemas.DocumentIdInput) -> schemas.Success:
    await service.retry_ingestion(ctx.session, ctx.runtime, ctx.tenant, data.id)
    return schemas.Success(success=True)
