"""What seo.overview takes and answers."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import Input
from contentplatform.seo.search_console.schemas import Change, Metrics
from contentplatform.seo.sync_runs.schemas import SyncRun

Period = Literal["7d", "28d", "90d"]
DAYS: dict[str, int] = {"7d": 7, "28d": 28, "90d": 90}


class OverviewInput(Input):
    period: Period = Field("28d", description="The window the search and rank blocks cover.")


class OverviewRange(BaseModel):
    start: date
    end: date


class OverviewSearch(Metrics):
    change: Change = Field(description="Against the preceding period of equal length.")
    last_synced_at: datetime | None


class OverviewAudit(BaseModel):
    audit_id: uuid.UUID
    health_score: float | None
    errors: int
    warnings: int
    notices: int
    new_issues: int
    finished_at: datetime | None


class OverviewByPriority(BaseModel):
    critical: int
    high: int
    medium: int
    low: int


class OverviewActions(BaseModel):
    open: int
    in_progress: int
    by_priority: OverviewByPriority = Field(description="Of the open and in-progress actions.")


class OverviewRank(BaseModel):
    tracked: int = Field(description="Tracked keywords (active or paused).")
    visibility: float | None
    visibility_change: float | None
    avg_position: float | None
    top3: int
    top10: int


class OverviewAiVisibility(BaseModel):
    visibility: float | None = Field(
        description="% of the period's answers mentioning the brand; null below 5 answers."
    )
    share_of_voice: float | None = Field(
        description="% of the tracked brands' mentions that are the brand's; null below 5."
    )
    citation_share: float | None = Field(
        description="% of the citations that are our domain's; null below 5 citations."
    )
    change: float | None = Field(
        description="Visibility's change in points against the preceding period of equal "
        "length; null unless both are known."
    )


class OverviewGeo(BaseModel):
    readiness_score: int
    snapshot_id: uuid.UUID


class OverviewConnection(BaseModel):
    provider: str
    status: str
    last_sync_at: datetime | None
    last_error: dict[str, Any] | None


class Overview(BaseModel):
    period: Period
    range: OverviewRange = Field(
        description="The search window, both days included: it ends on the newest day Search "
        "Console data is stored for (today without it)."
    )
    search: OverviewSearch | None = Field(
        description="Search Console's totals over the window; null until a property is "
        "connected and synced."
    )
    audit: OverviewAudit | None = Field(description="The newest completed audit; null before one.")
    actions: OverviewActions
    rank: OverviewRank | None = Field(
        description="Over the period's days ending today; null while no keyword is tracked."
    )
    ai_visibility: OverviewAiVisibility | None = Field(
        description="seo.aiVisibilityOverview's headline figures over the period's days ending "
        "today; null while no answer is stored in it."
    )
    geo: OverviewGeo | None = Field(description="Null until the site has a complete website scan.")
    connections: list[OverviewConnection]
    running: list[SyncRun] = Field(description="Sync runs queued or running, newest first.")
