from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

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
MAX_ARCHIVE_REASON = 500
MAX_BULK = 50
MAX_COMMENT = 5000
MAX_QUOTE = 500
# At most this many distinct members one comment may @mention.
MAX_MENTIONS = 20

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


# --- bulk actions -------------------------------------------------------------------------------

BulkAction = Literal["approve", "reject", "archive", "assign", "delete"]
# What each action takes besides the ids.
_REASON_ACTIONS = ("reject", "archive")


class BulkDraftsInput(Input):
    action: BulkAction = Field(description="`delete` needs the admin role.")
    draft_ids: list[uuid.UUID] = Field(
        min_length=1, max_length=MAX_BULK, description=f"1-{MAX_BULK} distinct draft ids."
    )
    reason: MultiLine | None = Field(
        None,
        min_length=1,
        max_length=MAX_REASON,
        description=f"Required for `reject` (at most {MAX_REASON} characters); optional for "
        f"`archive` (at most {MAX_ARCHIVE_REASON}); refused with any other action.",
    )
    assignee_id: Identifier | None = Field(
        None,
        min_length=1,
        max_length=255,
        description="Required for `assign`, refused otherwise: the identity provider's user id "
        "(or our user id) of a member of this organization.",
    )

    @field_validator("draft_ids")
    @classmethod
    def _distinct(cls, value: list[uuid.UUID]) -> list[uuid.UUID]:
        if len(set(value)) != len(value):
            raise ValueError("must not name a draft twice")
        return value

    # Given with the wrong action, refused here; missing where the action needs it, refused by
    # the service (pydantic would name a missing field by its Python name, not its wire name).
    @field_validator("reason")
    @classmethod
    def _reason_fits_the_action(cls, value: str | None, info: ValidationInfo) -> str | None:
        action = info.data.get("action")
        if value is None or action is None:  # an invalid action has its own error
            return value
        value = value.strip()
        if not value:
            raise ValueError("must not be blank")
        if action not in _REASON_ACTIONS:
            raise ValueError(f"does not go with {action} (only reject and archive)")
        if action == "archive" and len(value) > MAX_ARCHIVE_REASON:
            raise ValueError(f"must be at most {MAX_ARCHIVE_REASON} characters to archive")
        return value

    @field_validator("assignee_id")
    @classmethod
    def _assignee_fits_the_action(cls, value: str | None, info: ValidationInfo) -> str | None:
        action = info.data.get("action")
        if value is not None and action is not None and action != "assign":
            raise ValueError(f"does not go with {action} (only assign)")
        return value


class DraftBulkError(BaseModel):
    code: str = Field(description="The problem code: NOT_FOUND, CONFLICT, ...")
    detail: str


class DraftBulkResult(BaseModel):
    id: uuid.UUID
    ok: bool
    error: DraftBulkError | None = Field(description="Why this draft was not changed.")


class DraftBulkOutcome(BaseModel):
    success: bool = Field(description="True when every draft was changed.")
    affected: int
    results: list[DraftBulkResult] = Field(description="One per id, in the order given.")


# --- comparing versions -------------------------------------------------------------------------

DiffOp = Literal["equal", "insert", "delete"]


class CompareVersionsInput(Input):
    id: uuid.UUID
    from_: int = Field(
        alias="from", ge=1, le=MAX_INT, description="The older version (any version may be given)."
    )
    to: int | None = Field(
        None, ge=1, le=MAX_INT, description="The newer version; default: the draft's current one."
    )


class TextChange(BaseModel):
    op: DiffOp
    text: str


class HtmlChange(BaseModel):
    op: DiffOp
    html: str = Field(description="Whole tags and words; an insert may open a tag an equal closes.")


class DiffStats(BaseModel):
    words_added: int = Field(description="Words of the content the inserts add.")
    words_removed: int = Field(description="Words of the content the deletes remove.")
    ai_words_retained_pct: float | None = Field(
        description="Of the words of the latest AI revision at or before `to`, the share (0-100) "
        "`to` keeps in place; null when there is none (or it had no words)."
    )


class VersionDiff(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
        json_schema_extra={
            "examples": [
                {
                    "from": 1,
                    "to": 3,
                    "title_diff": [
                        {"op": "equal", "text": "Watering "},
                        {"op": "insert", "text": "well "},
                        {"op": "equal", "text": "in a dry summer"},
                    ],
                    "excerpt_diff": [],
                    "seo_meta_changes": {
                        "meta_description": {"from": None, "to": "Water less, but deeper."}
                    },
                    "content_diff": [
                        {"op": "equal", "html": "<p>Water the beds "},
                        {"op": "delete", "html": "every evening."},
                        {"op": "insert", "html": "early in the morning."},
                        {"op": "equal", "html": "</p>"},
                    ],
                    "stats": {"words_added": 4, "words_removed": 2, "ai_words_retained_pct": 92.5},
                }
            ]
        },
    )

    from_: int = Field(alias="from")
    to: int
    title_diff: list[TextChange] = Field(description="Word-level, as plain text.")
    excerpt_diff: list[TextChange] = Field(
        description="Word-level, as plain text (a missing excerpt is empty)."
    )
    seo_meta_changes: dict[str, dict[str, Any]] = Field(
        description="{key: {from, to}} for each seo_meta key whose value differs (a missing key "
        "is null); `score_breakdown` is left out (it follows the content)."
    )
    content_diff: list[HtmlChange]
    stats: DiffStats


# --- comments -----------------------------------------------------------------------------------


class AnchorInput(Input):
    quote: MultiLine = Field(
        min_length=1, max_length=MAX_QUOTE, description="The passage commented on, as shown."
    )
    start: int = Field(ge=0, le=MAX_CONTENT, description="Where it starts in the draft's text.")
    end: int = Field(
        ge=0,
        le=MAX_CONTENT,
        description="Where it ends (not before `start`, not past the end of the text).",
    )

    @field_validator("end")
    @classmethod
    def _not_before_start(cls, value: int, info: ValidationInfo) -> int:
        start = info.data.get("start")
        if start is not None and value < start:
            raise ValueError("must not be before start")
        return value


class AddCommentInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "body": "@u1 is every evening right? The handbook says early morning.",
                    "anchor": {"quote": "every evening", "start": 15, "end": 28},
                }
            ]
        }
    )

    id: uuid.UUID
    parent_id: uuid.UUID | None = Field(
        None, description="Reply to this comment: the first comment of a thread of this draft."
    )
    body: MultiLine = Field(
        min_length=1,
        max_length=MAX_COMMENT,
        description="Plain text, kept as typed (never read as markup). `@<user id>` mentions a "
        f"member (at most {MAX_MENTIONS} in one comment).",
    )
    anchor: AnchorInput | None = Field(
        None, description="The passage a thread is about; a reply takes its thread's."
    )
    resolve: bool = Field(
        False, validate_default=True, description="With `parentId`: this reply resolves the thread."
    )

    @field_validator("body")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    @field_validator("anchor")
    @classmethod
    def _not_on_a_reply(cls, value: AnchorInput | None, info: ValidationInfo) -> Any:
        if value is not None and info.data.get("parent_id") is not None:
            raise ValueError("a reply takes its thread's anchor")
        return value

    @field_validator("resolve")
    @classmethod
    def _only_a_reply_resolves(cls, value: bool, info: ValidationInfo) -> bool:
        if value and "parent_id" in info.data and info.data["parent_id"] is None:
            raise ValueError("needs parentId: a reply resolves its thread")
        return value


class ListCommentsInput(Input):
    id: uuid.UUID
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100, description="Threads per page.")
    include_resolved: bool = Field(False, description="Also the resolved threads.")


class CommentAnchor(BaseModel):
    quote: str
    start: int
    end: int
    version: int = Field(description="The draft's version the comment was written on.")


class Comment(Record):
    id: uuid.UUID
    draft_id: uuid.UUID
    parent_id: uuid.UUID | None
    author_id: str
    body: str = Field(description="Plain text as typed: escape it where HTML is written.")
    anchor: CommentAnchor | None
    mentions: list[str] = Field(description="The members it @mentions, by their user id.")
    resolved_at: datetime | None = Field(description="Set on a thread's first comment.")
    resolved_by: str | None
    created_at: datetime


class CommentPage(Listing[Comment]):
    """A page of threads: each first comment followed by its replies, oldest first; `total`
    counts threads."""
