"""The activity trail as the API shows it."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page
from contentplatform.kit.text import Identifier


class ListActivityInput(Input):
    scope: Literal["activity", "audit"] = Field(
        "activity", description="`audit` adds security and settings events (admins only)."
    )
    resource_type: Identifier | None = Field(None, max_length=40)
    resource_id: uuid.UUID | None = None
    actor_id: Identifier | None = Field(None, max_length=255)
    action: Identifier | None = Field(None, max_length=60, description="e.g. `draft.published`")
    start_date: AwareDatetime | None = None
    end_date: AwareDatetime | None = None
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class ActivityActor(BaseModel):
    type: Literal["user", "system", "api_key"]
    id: str | None
    display_name: str | None


class ActivityEvent(BaseModel):
    id: uuid.UUID
    action: str
    resource_type: str
    resource_id: uuid.UUID | None
    actor: ActivityActor
    impersonated_by: str | None
    changes: dict[str, Any] | None
    ip: str | None
    user_agent: str | None
    request_id: str | None
    created_at: datetime


class ActivityPage(Page[ActivityEvent]):
    pass
