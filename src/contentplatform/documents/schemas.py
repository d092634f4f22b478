from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contentplatform.kit.schemas import Input, OffsetPage, Record
from contentplatform.kit.text import Identifier, MultiLine, Name

FileType = Literal["pdf", "docx", "doc", "txt", "md", "html", "htm"]
Status = Literal["pending", "processing", "ready", "error"]
STATUSES: tuple[Status, ...] = ("pending", "processing", "ready", "error")


# --- inputs -----------------------------------------------------------------------------------


class ListDocumentsInput(Input):
    status: Literal["all", "pending", "processing", "ready", "error"] = "all"
    search: str | None = Field(
        None,
        max_length=255,
        description="Matches a part of the filename, the knowledge description or a tag, "
        "ignoring case (not the document's text).",
    )
    file_type: Literal["all", "pdf", "docx", "txt", "md", "url"] = "all"
    source: Literal["all", "upload", "website_scan"] = "all"
    archived: Literal["exclude", "include", "only"] = Field(
        "exclude", description="Archived documents are left out unless asked for."
    )
    sort_by: Literal["created_at", "filename"] = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"
    limit: int = Field(50, ge=1, le=100)
    offset: int = Field(0, ge=0, le=100_000)


class CreateDocumentInput(Input):
    filename: Identifier = Field(min_length=1, max_length=255)
    storage_path: Identifier = Field(
        min_length=1, max_length=1024, description="Begins with `<org_id>/`."
    )
    file_type: FileType


class ConfirmUploadInput(CreateDocumentInput):
    pass


# Beyond any upload this service takes (the configured limit is checked after: FILE_TOO_LARGE).
MAX_CONTENT_LENGTH = 2**40


class CreateUploadUrlInput(Input):
    filename: Identifier = Field(min_length=1, max_length=255)
    file_type: FileType
    content_length: int = Field(
        ge=1, le=MAX_CONTENT_LENGTH, description="Size in bytes of what will be uploaded."
    )


class DocumentIdInput(Input):
    id: uuid.UUID


class KnowledgeMetadataInput(Input):
    is_primary: bool | None = None
    description: MultiLine | None = Field(None, max_length=2000)
    tags: list[Name] | None = Field(None, max_length=50)
    language: Identifier | None = Field(None, min_length=2, max_length=35)


class UpdateKnowledgeMetadataInput(Input):
    id: uuid.UUID
    metadata: KnowledgeMetadataInput


class RenameDocumentInput(Input):
    id: uuid.UUID
    filename: Identifier = Field(min_length=1, max_length=255)


class BulkDeleteInput(Input):
    ids: list[uuid.UUID] = Field(min_length=1, max_length=100)


# --- outputs ----------------------------------------------------------------------------------


class Knowledge(BaseModel):
    """DocumentKnowledgeMetadata, camelCase as the reference shows it."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True
    )

    is_primary: bool = False
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    language: str | None = None


class UsageJob(BaseModel):
    id: uuid.UUID
    name: str


class Usage(BaseModel):
    # Read from the row's usage (snake_case) and from this model's own JSON (the list cache).
    model_config = ConfigDict(from_attributes=True)

    jobs: list[UsageJob] = Field(default_factory=list)
    generationCount: int = Field(
        0, validation_alias=AliasChoices("generationCount", "generation_count")
    )
    lastUsedAt: datetime | None = Field(
        None, validation_alias=AliasChoices("lastUsedAt", "last_used_at")
    )


class Document(Record):
    id: uuid.UUID
    filename: str
    file_type: str
    storage_path: str
    source: Literal["upload", "website_scan"]
    source_metadata: dict[str, Any]
    status: Status
    error: str | None
    chunk_count: int
    document_version: int
    content_hash: str | None
    size_bytes: int | None
    knowledge: Knowledge
    usage: Usage
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None


class ConfirmedDocument(Document):
    unchanged: bool = Field(description="True when a document with the same content was found.")


class DocumentPage(OffsetPage[Document]):
    pass


class DocumentStats(BaseModel):
    total: int
    pending: int
    processing: int
    ready: int
    error: int


class DocumentContent(BaseModel):
    id: uuid.UUID
    filename: str
    file_type: str
    status: Status
    content: str
    contentError: str | None


class DocumentKnowledge(BaseModel):
    id: uuid.UUID
    knowledge: Knowledge


class BulkDeleted(BaseModel):
    success: bool
    deleted: int


class UploadUrl(BaseModel):
    storage_path: str
    upload_url: str
    method: Literal["PUT"]
    headers: dict[str, str]
    expires_at: datetime
