"""The input of seo.syncSearchConsole (its answer is sync_runs' SyncRun)."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field, field_validator

from contentplatform.kit.schemas import Input

SyncPart = Literal["search_analytics", "sitemaps"]
# Far from the calendar's ends; the 16-month rule refuses anything older anyway.
FIRST_DAY = date(2000, 1, 1)
LAST_DAY = date(2999, 12, 31)


class SyncSearchConsoleInput(Input):
    start_date: date | None = Field(
        None,
        ge=FIRST_DAY,
        le=LAST_DAY,
        description="First day to sync (YYYY-MM-DD), at most 16 months ago. Default: the last "
        "day stored final minus 3 days, or the backfill (settings' searchConsole."
        "backfillMonths, 16 by default) before the first sync.",
    )
    end_date: date | None = Field(
        None,
        ge=FIRST_DAY,
        le=LAST_DAY,
        description="Last day to sync (YYYY-MM-DD), >= startDate and not after today in the "
        "organization's time zone. Default: yesterday.",
    )
    include: list[SyncPart] | None = Field(
        None,
        min_length=1,
        max_length=2,
        description="What to pull: `search_analytics` (the performance rows) and/or `sitemaps` "
        "(sitemaps.list). Default both.",
    )

    @field_validator("include")
    @classmethod
    def _unique(cls, value: list[SyncPart] | None) -> list[SyncPart] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("include must not repeat a part")
        return value
