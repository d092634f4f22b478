"""Inputs and answers of SEO actions: inputs camelCase on the wire, answers as the catalog
names their fields (snake_case)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contentplatform.job_instances.schemas import JobInstance
from contentplatform.jobs.schemas import Job
from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier, MultiLine, Name, PlainMultiLine, PlainText
from contentplatform.seo.rank.schemas import HttpUrl

ActionType = Literal[
    "fix_technical_issue",
    "fix_indexing",
    "improve_snippet",
    "target_striking_distance",
    "refresh_content",
    "resolve_cannibalization",
    "create_content",
    "close_ai_gap",
    "improve_geo",
    "recover_ranking",
    "custom",
]
SignalSource = Literal["audit", "search_console", "url_inspection", "rank", "ai_visibility", "geo"]
Source = Literal[
    "audit", "search_console", "url_inspection", "rank", "ai_visibility", "geo", "manual"
]
SIGNAL_SOURCES: tuple[SignalSource, ...] = (
    "audit",
    "search_console",
    "url_inspection",
    "rank",
    "ai_visibility",
    "geo",
)
Priority = Literal["critical", "high", "medium", "low"]
Effort = Literal["low", "medium", "high"]
Status = Literal["open", "in_progress", "done", "verified", "dismissed"]
BulkVerb = Literal["start", "complete", "reopen", "dismiss", "assign"]
VerificationResult = Literal["fixed", "still_present", "improved", "not_improved"]

Title = Annotated[PlainText, Field(min_length=1, max_length=200)]
Description = Annotated[PlainMultiLine, Field(max_length=5000)]
Keyword = Annotated[PlainText, Field(min_length=1, max_length=100)]
Reason = Annotated[PlainMultiLine, Field(min_length=1, max_length=500)]
AssigneeRef = Annotated[Identifier, Field(min_length=1, max_length=255)]


def _not_blank(value: str | None, field: str) -> None:
    """A title or reason that was nothing but markup is empty once stripped: refused."""
    if value is not None and not value.strip():
        raise ValueError(f"{field} must not be blank (markup is stripped)")


# --- inputs ---------------------------------------------------------------------------------


class ListActionsInput(Input):
    status: Literal["active", "open", "in_progress", "done", "verified", "dismissed", "all"] = (
        Field("active", description="`active`: open and in_progress.")
    )
    type: ActionType | None = None
    source: Source | None = None
    priority: Priority | None = None
    assignee_id: Identifier | None = Field(
        None, min_length=1, max_length=255, description="A member's user id."
    )
    page_id: uuid.UUID | None = Field(None, description="Actions on this page (seo.listPages).")
    search: str | None = Field(
        None, min_length=1, max_length=255, description="Contained in the title."
    )
    sort_by: Literal["priority", "impact", "created_at", "due_date"] = "priority"
    sort_order: Literal["asc", "desc"] = "desc"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class CreateActionInput(Input):
    title: Title = Field(description="Plain text: markup is stripped.")
    description: Description | None = None
    type: ActionType = "custom"
    priority: Priority = "medium"
    target_urls: list[HttpUrl] = Field(default_factory=list, max_length=50)
    keywords: list[Keyword] = Field(default_factory=list, max_length=20)
    assignee_id: AssigneeRef | None = Field(None, description="A member of the organization.")
    due_date: date | None = Field(None, description="YYYY-MM-DD.")

    @model_validator(mode="after")
    def _titled(self) -> CreateActionInput:
        _not_blank(self.title, "title")
        return self


class ActionIdInput(Input):
    id: uuid.UUID


class UpdateActionInput(Input):
    id: uuid.UUID
    title: Title | None = Field(None, description="Plain text: markup is stripped.")
    description: Description | None = None
    priority: Priority | None = None
    assignee_id: AssigneeRef | None = Field(None, description="A member; null unassigns.")
    due_date: date | None = Field(None, description="YYYY-MM-DD; null clears it.")
    status: Literal["open", "in_progress", "done"] | None = None

    @model_validator(mode="after")
    def _titled(self) -> UpdateActionInput:
        _not_blank(self.title, "title")
        return self


class DismissActionInput(Input):
    id: uuid.UUID
    reason: Reason = Field(description="Why it will not be done.")

    @model_validator(mode="after")
    def _reasoned(self) -> DismissActionInput:
        _not_blank(self.reason, "reason")
        return self


class GenerateActionsInput(Input):
    sources: list[SignalSource] | None = Field(
        None, min_length=1, max_length=6, description="Default: all of them."
    )
    audit_id: uuid.UUID | None = Field(
        None, description="The audit read (default: the newest completed one)."
    )


class CreateJobFromActionInput(Input):
    id: uuid.UUID
    mode: Literal["new_job", "existing_job"] = "new_job"
    job_id: uuid.UUID | None = Field(None, description="Required for existing_job.")
    name: Name | None = Field(
        None, min_length=1, max_length=100, description="new_job; default the action's title."
    )
    scheduled_date: datetime | None = Field(None, description="Default: now.")
    keywords: list[Keyword] | None = Field(
        None, max_length=20, description="Default: the action's."
    )
    content_instructions: MultiLine | None = Field(
        None, max_length=5000, description="Default: built from the action and its evidence."
    )
    document_ids: list[uuid.UUID] | None = Field(None, max_length=50)
    publisher_connection_id: uuid.UUID | None = Field(None, description="new_job.")
    auto_publish: bool | None = Field(None, description="new_job.")
    auto_publish_threshold: int | None = Field(None, ge=0, le=100, description="new_job.")

    @model_validator(mode="after")
    def _job_named(self) -> CreateJobFromActionInput:
        if self.mode == "existing_job" and self.job_id is None:
            raise ValueError("jobId is required when mode is existing_job")
        return self


class BulkActionsInput(Input):
    action: BulkVerb
    action_ids: list[uuid.UUID] = Field(min_length=1, max_length=100)
    reason: Reason | None = Field(None, description="Required for dismiss.")
    assignee_id: AssigneeRef | None = Field(None, description="Required for assign.")

    @model_validator(mode="after")
    def _complete(self) -> BulkActionsInput:
        if self.action == "dismiss":
            if self.reason is None:
                raise ValueError("reason is required to dismiss")
            _not_blank(self.reason, "reason")
        if self.action == "assign" and self.assignee_id is None:
            raise ValueError("assigneeId is required to assign")
        return self


# --- answers --------------------------------------------------------------------------------


class SeoAction(Record):
    id: uuid.UUID
    type: ActionType
    source: Source
    title: str
    description: str | None
    priority: Priority = Field(
        description="From impact_score: critical >= 80 (or an indexing blocker on a page with "
        "clicks), high >= 60, medium >= 30, else low; a person may change it."
    )
    impact_score: int = Field(ge=0, le=100)
    effort: Effort
    status: Status
    target_urls: list[str]
    page_ids: list[uuid.UUID] = Field(description="The inventory's pages of target_urls.")
    keywords: list[str]
    evidence: dict[str, Any] = Field(description="The numbers that made it.")
    fingerprint: str = Field(description="A hash of type and subject: the action's identity.")
    assignee_id: str | None
    due_date: date | None
    job_id: uuid.UUID | None
    draft_id: uuid.UUID | None
    audit_id: uuid.UUID | None
    check_id: str | None
    dismissed_reason: str | None
    created_at: datetime
    updated_at: datetime
    done_at: datetime | None
    verified_at: datetime | None


class SeoActionPage(Page[SeoAction]):
    pass


class ActionHistoryEntry(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    at: datetime
    actor: str = Field(description="The user's id, or `system`.")
    from_: Status | None = Field(alias="from", description="Null when it was created.")
    to: Status
    note: str | None


class ActionJob(BaseModel):
    id: uuid.UUID
    name: str
    status: str


class ActionDraft(BaseModel):
    id: uuid.UUID
    status: str
    published_url: str | None


class ActionVerification(BaseModel):
    checked_at: datetime
    result: VerificationResult = Field(
        description="`fixed`: the signal is gone; `still_present`: a generation still saw it."
    )
    detail: str | None


class SeoActionDetail(SeoAction):
    history: list[ActionHistoryEntry] = Field(description="Oldest first.")
    job: ActionJob | None = Field(description="Null without a job, or once it was deleted.")
    draft: ActionDraft | None
    verification: ActionVerification | None


class GeneratedActions(BaseModel):
    created: int
    updated: int = Field(description="Actions whose evidence or impact changed.")
    reopened: int = Field(description="Verified ones whose signal came back (a regression).")
    verified: int = Field(description="Done ones whose signal is gone.")
    unchanged: int = Field(description="Signals whose action needed no change.")
    data: list[SeoAction] = Field(description="Those created or reopened, at most 50.")


class ActionJobCreated(BaseModel):
    action: SeoAction
    job: Job
    instance: JobInstance


class SeoActionBulkResult(BaseModel):
    id: uuid.UUID
    ok: bool
    error: str | None = Field(description="Why this id was not changed (a problem code).")


class SeoActionBulkOutcome(BaseModel):
    success: bool = Field(description="True when every id was changed.")
    affected: int
    results: list[SeoActionBulkResult]
