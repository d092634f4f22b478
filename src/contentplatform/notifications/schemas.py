"""Inputs and answers of the notifications and watches operations: inputs camelCase on the wire,
records as the catalog names their fields (snake_case)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from contentplatform.events.catalog import Category
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page, Record
from contentplatform.kit.text import Identifier
from contentplatform.notifications import routing

ResourceType = Literal["tenant", "draft", "job", "publisher", "document"]
Channel = Literal["in_app", "email"]

# The most ids one markRead names.
MAX_IDS = 100


# --- notifications ----------------------------------------------------------------------------


class ListNotificationsInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    unread_only: bool = Field(False, description="Only those not read yet.")
    category: Category | None = Field(None, description="Only notifications of this category.")


class Notification(Record):
    id: uuid.UUID
    type: str = Field(description="The event type (catalog), e.g. `draft.status_changed`.")
    category: Category
    title: str = Field(description="Plain text, e.g. `Draft approved`.")
    body: str = Field(description="Plain text: one or two sentences about what happened.")
    resource_type: str
    resource_id: uuid.UUID | None
    url: str = Field(description="The app's page of it, a relative path: `/drafts/<id>`.")
    actor_id: str | None = Field(
        description="Who acted (the identity provider's user id); null for the system."
    )
    read_at: datetime | None
    created_at: datetime = Field(description="When the event happened.")


class NotificationPage(Page[Notification]):
    unread_count: int = Field(
        description="The caller's unread notifications in this organization, whatever the filters."
    )


class MarkReadInput(Input):
    ids: list[uuid.UUID] | None = Field(
        None,
        min_length=1,
        max_length=MAX_IDS,
        description="These notifications; ids of other users or organizations are ignored.",
    )
    before: AwareDatetime | None = Field(
        None, description="Every notification that happened at or before this instant."
    )
    all: bool = Field(False, description="true: every notification.")

    @model_validator(mode="after")
    def _exactly_one(self) -> MarkReadInput:
        given = [self.ids is not None, self.before is not None, self.all]
        if given.count(True) != 1:
            raise ValueError("give exactly one of ids, before or all (true)")
        return self


class MarkReadResult(BaseModel):
    updated: int = Field(description="How many were unread and are read now.")
    unread_count: int


# --- watches ----------------------------------------------------------------------------------


class ListWatchesInput(Input):
    resource_type: ResourceType | None = None
    resource_id: uuid.UUID | None = Field(None, description="Only the watch of this resource.")


class Watch(BaseModel):
    id: uuid.UUID
    resource_type: ResourceType
    resource_id: uuid.UUID | None = Field(description="null for the tenant watch.")
    events: list[str] = Field(
        description="The event types it brings (the defaults when none were chosen)."
    )
    channels: list[Channel] = Field(
        description="`in_app` is delivered; `email` is recorded for a mailer to come."
    )
    created_at: datetime
    updated_at: datetime


class WatchList(Listing[Watch]):
    pass


def _in_app() -> list[Channel]:
    return ["in_app"]


class UpsertWatchInput(Input):
    resource_type: ResourceType = Field(
        description="`tenant`: the tenant watch (role defaults and tenant-wide event types)."
    )
    resource_id: uuid.UUID | None = Field(
        None,
        description="The draft, job, publisher connection or document (required for them); "
        "absent for `tenant`.",
    )
    events: list[Identifier] | None = Field(
        None,
        max_length=len(routing.NOTIFYING),
        description="Event types of the catalog that fit the resource; absent or empty: the "
        "defaults (every type that fits; for `tenant`, the defaults of the caller's role).",
        examples=[["draft.status_changed", "comment.mentioned"]],
    )
    channels: list[Channel] = Field(
        default_factory=_in_app,
        min_length=1,
        max_length=2,
        description="Where to be told: `in_app` is delivered; `email` is recorded for a "
        "mailer to come, none is sent yet.",
    )

    @field_validator("resource_id")
    @classmethod
    def _not_for_the_tenant(cls, value: uuid.UUID | None, info: ValidationInfo) -> uuid.UUID | None:
        # Its absence for a resource is refused by the service: a validator of a field left out
        # would name it in snake_case.
        if info.data.get("resource_type") == routing.TENANT and value is not None:
            raise ValueError("must be absent for the tenant watch (resourceType tenant)")
        return value

    @field_validator("events")
    @classmethod
    def _events_fit(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        kind = info.data.get("resource_type")
        if not value or kind is None:
            return value
        unknown = [name for name in value if name not in routing.NOTIFYING]
        if unknown:
            raise ValueError(
                f"{', '.join(repr(name) for name in unknown)}: not an event type that notifies "
                f"(one of: {', '.join(routing.NOTIFYING)})"
            )
        unfit = routing.unfit(kind, value)
        if unfit:
            raise ValueError(
                f"{', '.join(repr(name) for name in unfit)}: not about a {kind} (a {kind} "
                f"watch may choose: {', '.join(routing.FITTING[kind])})"
            )
        return list(dict.fromkeys(value))


class WatchIdInput(Input):
    id: uuid.UUID
