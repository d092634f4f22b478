"""The dashboard's inputs (camelCase on the wire) and answers (snake_case)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, Field, field_validator

from contentplatform.kit.schemas import MAX_PAGE, Input, Page
from contentplatform.kit.text import Identifier

# --- summary --------------------------------------------------------------------------------

SummaryRange = Literal["7d", "30d", "90d"]
CardKey = Literal[
    "published_posts",
    "drafts_in_review",
    "active_jobs",
    "automation_success_rate",
    "views",
    "avg_seo_score",
    "credits_remaining",
]


Unit = Literal["count", "percent", "score", "credits", "views"]


class SummaryInput(Input):
    range: SummaryRange = Field(
        "30d", description="The last 7, 30 or 90 days, today included, in the organization's zone."
    )


class Card(BaseModel):
    key: CardKey
    label: str
    value: float | None = Field(
        description="null when the card's source is not there (never 0 for 'unknown')."
    )
    previous: float | None = Field(
        description="The same figure over the previous period; null for a count of now."
    )
    change_pct: float | None
    unit: Unit
    href: str


class Summary(BaseModel):
    range: SummaryRange
    date_from: str
    date_to: str
    cards: list[Card]


# --- activity -------------------------------------------------------------------------------

ActivityType = Literal["draft", "job", "publish", "crawl", "media", "workflow", "member", "billing"]


class ActivityInput(Input):
    types: Identifier | None = Field(
        None,
        max_length=200,
        description="Comma list of draft, job, publish, crawl, media, workflow, member, billing.",
        examples=["draft,publish"],
    )
    since: AwareDatetime | None = Field(None, description="Only what happened at or after it.")
    limit: int = Field(20, ge=1, le=100)
    page: int = Field(1, ge=1, le=MAX_PAGE)

    @field_validator("types")
    @classmethod
    def _known_types(cls, value: str | None) -> str | None:
        if value is None:
            return None
        allowed = set(ActivityType.__args__)  # type: ignore[attr-defined]
        names = [name.strip() for name in value.split(",") if name.strip()]
        unknown = sorted(set(names) - allowed)
        if unknown or not names:
            raise ValueError(f"types: each of {', '.join(sorted(allowed))} (got {value!r})")
        return ",".join(dict.fromkeys(names))


class FeedActor(BaseModel):
    id: str | None
    name: str | None


class FeedSubject(BaseModel):
    type: str
    id: uuid.UUID | None
    label: str | None


class FeedItem(BaseModel):
    id: uuid.UUID
    type: str = Field(
        description="draft, job, publish, crawl, media, workflow, member, billing "
        "or other (an event no filter names, e.g. a document's)."
    )
    action: str = Field(description="The event type, as activity.list's `action`.")
    actor: FeedActor | None = Field(description="null: the system acted.")
    subject: FeedSubject
    created_at: datetime
    meta: dict[str, Any]


class FeedPage(Page[FeedItem]):
    pass


# --- upcoming -------------------------------------------------------------------------------


class UpcomingInput(Input):
    days: int = Field(7, ge=1, le=30)
    limit: int = Field(20, ge=1, le=100)
    page: int = Field(1, ge=1, le=MAX_PAGE)


class Ref(BaseModel):
    type: str
    id: uuid.UUID


class UpcomingItem(BaseModel):
    type: Literal["job_instance", "crawl_schedule", "scheduled_publish"]
    at: datetime = Field(description="In the organization's time zone (with its offset).")
    title: str
    status: str
    ref: Ref


class UpcomingPage(Page[UpcomingItem]):
    pass


# --- pending reviews: the "needs me" queue ---------------------------------------------------


class PendingReviewsInput(Input):
    assigned_to_me: bool = Field(False, description="Only the items assigned to the caller.")
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class PendingItem(BaseModel):
    type: Literal["draft_review", "workflow_gate", "publisher_failing"]
    title: str
    due_at: datetime | None = Field(description="When it is overdue; the queue's order.")
    overdue: bool
    waiting_since: datetime
    assignee_id: str | None
    draft_id: uuid.UUID | None
    seo_score: int | None
    job_id: uuid.UUID | None
    workflow_run_id: uuid.UUID | None
    publisher_id: uuid.UUID | None


class PendingPage(Page[PendingItem]):
    pass


# --- alerts ---------------------------------------------------------------------------------

AlertKind = Literal[
    "job_failed",
    "publisher_disconnected",
    "credits_low",
    "license_expiring",
    "license_expired",
    "crawl_failed",
    "broken_links",
    "review_overdue",
]
Severity = Literal["info", "warning", "critical"]


class AlertsInput(Input):
    severity: Literal["all", "info", "warning", "critical"] = "all"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class Alert(BaseModel):
    id: str = Field(description="Stable while the condition holds: `<kind>:<ref id>`.")
    kind: AlertKind
    severity: Severity
    title: str
    message: str
    ref: Ref
    created_at: datetime
    notification_id: uuid.UUID | None = Field(
        description="The caller's notification of the event that raised it (null: none was "
        "made for the caller); notifications.markRead with it acknowledges the alert."
    )
    acknowledged: bool


class AlertPage(Page[Alert]):
    pass


# --- quick stats ----------------------------------------------------------------------------


class DocumentFigures(BaseModel):
    total: int
    ready: int


class DraftFigures(BaseModel):
    reviewing: int
    approved: int
    published_7d: int


class JobFigures(BaseModel):
    active: int
    paused: int
    error: int


class MediaFigures(BaseModel):
    total: int
    license_attention: int


class WorkflowFigures(BaseModel):
    total: int = Field(description="Active workflows (archived ones left out).")
    default_id: uuid.UUID | None = Field(description="null: the built-in definition applies.")


class CreditFigures(BaseModel):
    remaining: int
    used_7d: int


class WebsiteFigures(BaseModel):
    last_crawl_at: datetime | None
    pages_last_snapshot: int | None = Field(description="null: the last run made no snapshot.")
    broken_links: int | None


class Sparklines(BaseModel):
    published: list[int] = Field(description="Drafts published each of the last 7 days.")
    credits: list[int] = Field(description="Credits used each of the last 7 days.")
    days: list[str] = Field(description="The 7 dates, oldest first, in the organization's zone.")


class QuickStats(BaseModel):
    documents: DocumentFigures
    drafts: DraftFigures
    jobs: JobFigures
    media: MediaFigures
    workflows: WorkflowFigures
    credits: CreditFigures
    website: WebsiteFigures | None = Field(
        description="The configuration crawled last; null until a website was crawled."
    )
    sparklines: Sparklines
