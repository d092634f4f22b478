"""Inputs and answers of importing a snapshot's pages as knowledge and of the site profile:
inputs camelCase on the wire, answers with the catalog's (snake_case) field names.

The site profile's fields are bounded plain text wherever they come from (the extractive
reading or a language model: website_scan/profile_inference.py makes them so); `ProfileFields`
is what is stored in `SiteProfile.profile`.
"""

from __future__ import annotations

import uuid
from datetime import datetime
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


# --- the site profile -------------------------------------------------------------------------

ProfileStatus = Literal["none", "generating", "ready", "failed"]
Person = Literal["first", "second", "third"]


class Business(BaseModel):
    name: str | None = None
    summary: str | None = None
    industry: str | None = None
    locations: list[str] = Field(default_factory=list)


class Product(BaseModel):
    name: str
    description: str | None = None
    url: str | None = None


class Tone(BaseModel):
    descriptors: list[str] = Field(default_factory=list)
    formality: float | None = Field(None, ge=0, le=1, description="0 casual - 1 formal.")
    person: Person | None = Field(None, description="Who the site's text speaks as, or to.")
    sample_phrases: list[str] = Field(default_factory=list)


class ProfileFields(BaseModel):
    """What a site profile says about the business (stored as it is)."""

    business: Business = Field(default_factory=Business)
    products: list[Product] = Field(default_factory=list)
    audiences: list[str] = Field(default_factory=list)
    tone: Tone = Field(default_factory=Tone)
    topics: list[str] = Field(default_factory=list)
    languages: list[str] = Field(default_factory=list)
    confidence: float = Field(0.0, ge=0, le=1)
    evidence_page_ids: list[uuid.UUID] = Field(
        default_factory=list, description="The pages of the snapshot it was read from."
    )


class SiteProfile(ProfileFields):
    """A suggestion only: nothing applies it to the brand voice by itself."""

    config_id: uuid.UUID
    snapshot_id: uuid.UUID | None
    status: ProfileStatus
    error: str | None = Field(None, description="Why the last refresh failed.")
    generated_at: datetime | None


class RefreshProfileInput(Input):
    id: uuid.UUID = Field(description="The crawl configuration.")
    snapshot_id: uuid.UUID | None = Field(
        None,
        description="A finished snapshot of this configuration; default: its latest finished, "
        "non-partial one.",
    )


class ProfileConfigInput(Input):
    id: uuid.UUID = Field(description="The crawl configuration.")
