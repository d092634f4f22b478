"""Inputs and answers of importing a snapshot's pages as knowledge: inputs camelCase on the
wire, answers with the catalog's (snake_case) field names."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contentplatform.kit.schemas import Input
from contentplatform.kit.text import Identifier, MultiLine, Name

MAX_IMPORT_PAGES = 100

# --- importing pages --------------------------------------------------------------------------


class ImportKnowledge(Input):
    """The knowledge metadata every imported document gets (documents.updateKnowledgeMetadata
    without `isPrimary`). A new version keeps its document's metadata but for the fields given
    here."""

    description: MultiLine | None = Field(None, max_length=2000)
    tags: list[Name] | None = Field(None, max_length=50)
    language: Identifier | None = Field(
        None,
        min_length=2,
        max_length=35,
        description="Default for a new document: the page's own language, when it declares one.",
    )


class ImportPagesInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "5f0c2d1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f",
                    "pageIds": ["0b7f3a52-6a51-4f0e-9a43-0c6b3d1f2e4a"],
                    "knowledge": {"tags": ["website"], "language": "en"},
                    "idempotencyKey": "import-2026-11-28-blog",
                }
            ]
        }
    )

    id: uuid.UUID = Field(description="The snapshot.")
    page_ids: list[uuid.UUID] = Field(
        min_length=1,
        max_length=MAX_IMPORT_PAGES,
        description="Pages of this snapshot (a page named twice is imported once).",
    )
    knowledge: ImportKnowledge | None = None
    idempotency_key: Identifier | None = Field(
        None,
        min_length=8,
        max_length=128,
        description="The same key within 24 hours answers what the import under it did and "
        "imports nothing more.",
    )


class ImportedPage(BaseModel):
    page_id: uuid.UUID
    document_id: uuid.UUID
    document_version: int


class UnchangedPage(BaseModel):
    page_id: uuid.UUID
    document_id: uuid.UUID


SkipReason = Literal["not_2xx", "empty", "content_purged", "quota"]


class SkippedPage(BaseModel):
    page_id: uuid.UUID
    reason: SkipReason


class ImportResult(BaseModel):
    imported: list[ImportedPage] = Field(
        description="New documents, and new versions of documents whose page changed; ingested "
        "in the background (documents.getById shows when they are ready)."
    )
    unchanged: list[UnchangedPage] = Field(
        description="Pages already imported from the same URL with the same content."
    )
    skipped: list[SkippedPage] = Field(
        description="`not_2xx`: the page did not answer 2xx; `empty`: it has no main text; "
        "`content_purged`: retention removed its content; `quota`: the plan's documents or "
        "storage limit, or the credits, do not allow it."
    )
