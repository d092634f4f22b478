from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, field_validator

from contentplatform.drafts.states import Status
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Record
from contentplatform.kit.text import (
    MAX_INT,
    Identifier,
    JsonObject,
    MultiLine,
    PlainMultiLine,
    PlainText,
)

MAX_TITLE = 500
MAX_CONTENT = 1_000_000  # characters of HTML
MAX_EXCERPT = 1000
MAX_SEO_META_BYTES = 20_000
MAX_REASON = 2000

AuthorType = Literal["ai", "human", "system"]


# --- inputs -----------------------------------------------------------------------------------


class ListDraftsInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    status: Status | None = None
    search: str | None = Field(
        None, max_length=255, description="Matches the title or the text of the content."
    )
    job_id: uuid.UUID | None = None


class CreateDraftInput(Input):
    title: PlainText = Field(
        min_length=1, max_length=MAX_TITLE, description="Plain text: markup is stripped."
    )
    content: MultiLine = Field(
        "<p></p>", max_length=MAX_CONTENT, description="HTML; sanitized. Default: <p></p>."
    )
    job_id: uuid.UUID | None = None
    instance_id: uuid.UUID | None = None


class DraftIdInput(Input):
    id: uuid.UUID


def _bounded_seo_meta(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and len(json.dumps(value)) > MAX_SEO_META_BYTES:
        raise ValueError(f"must be at most {MAX_SEO_META_BYTES} bytes of JSON")
    return value


class UpdateDraftInput(Input):
    id: uuid.UUID
    title: PlainText | None = Field(
        None, min_length=1, max_length=MAX_TITLE, description="Plain text: markup is stripped."
    )
    content: MultiLine | None = Field(None, max_length=MAX_CONTENT, description="HTML; sanitized.")
    excerpt: PlainMultiLine | None = Field(
        None, max_length=MAX_EXCERPT, description="Plain text: markup is stripped."
    )
    # Named as the reference names it; `seoMeta` is accepted too.
    seo_meta: JsonObject | None = Field(
        None,
        alias="seo_meta",
        validation_alias=AliasChoices("seo_meta", "seoMeta"),
        description="Merged into the draft's seo_meta (a key set to null removes it). "
        "`score_breakdown` is the service's own and cannot be set. `seo_title`, "
        "`meta_description` and `focus_keywords` are plain text: markup is stripped.",
    )
    expected_version: int | None = Field(
        None,
        ge=0,
        le=MAX_INT,
        description="The version the edit is based on; 409 when the draft moved on.",
    )

    _seo_meta_size = field_validator("seo_meta")(_bounded_seo_meta)


class RejectDraftInput(Input):
    id: uuid.UUID
    reason: MultiLine = Field(min_length=1, max_length=MAX_REASON)

    @field_validator("reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()


class AssignDraftInput(Input):
    id: uuid.UUID
    assignee_id: Identifier = Field(
        min_length=1,
        max_length=255,
        description="The identity provider's user id of a member of this organization.",
    )


class ListVersionsInput(Input):
    id: uuid.UUID
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class VersionInput(Input):
    id: uuid.UUID
    version: int = Field(ge=1, le=MAX_INT, description="A version past the draft's last is 404.")


class RestoreVersionInput(VersionInput):
    expected_version: int | None = Field(
        None,
        ge=0,
        le=MAX_INT,
        description="The version the restore is based on; 409 when it moved on.",
    )


# --- outputs (snake_case records, as the reference's) -------------------------------------------


class Draft(Record):
    id: uuid.UUID
    tenant_id: uuid.UUID
    title: str
    content: str
    excerpt: str | None
    seo_meta: dict[str, Any]
    seo_score: int | None
    status: Status
    job_id: uuid.UUID | None
    instance_id: uuid.UUID | None
    run_id: uuid.UUID | None
    assignee_id: str | None
    rejection_reason: str | None
    provenance: dict[str, Any]
    version: int
    created_at: datetime
    updated_at: datetime
    approved_at: datetime | None
    approved_by: str | None = Field(
        description="The approver's user id, or `system:auto_publish` when a job's auto-publish "
        "approved it."
    )
    published_at: datetime | None
    published_url: str | None = Field(description="Where it is live (its first target).")
    slug: str | None = Field(description="Its slug on the public blog, fixed once published.")
    auto_publish: dict[str, Any] | None = Field(
        description="What auto-publish decided for it and why: "
        "{decision: published|held, reason, seo_score, threshold, decided_at}."
    )


class DraftPage(Listing[Draft]):
    pass


class DraftStats(BaseModel):
    total: int
    byStatus: dict[Status, int]


class VersionSummary(Record):
    version: int
    author_type: AuthorType
    author_id: str | None
    change_summary: str
    fields_changed: list[str]
    seo_score: int | None
    created_at: datetime


class VersionPage(Listing[VersionSummary]):
    pass


class Version(VersionSummary):
    title: str
    content: str
    excerpt: str | None
    seo_meta: dict[str, Any]
    provenance: dict[str, Any] | None
