"""Inputs and answers of the sync runs: the list's filters (camelCase on the wire) and the run
as the catalog names its fields (snake_case)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page

Kind = Literal[
    "search_console",
    "sitemaps",
    "url_inspection",
    "rank_check",
    "ai_visibility",
    "keyword_metrics",
    "pagespeed",
]
Provider = Literal[
    "google_search_console",
    "dataforseo",
    "pagespeed_insights",
    "openai",
    "perplexity",
    "gemini",
    "anthropic",
    "offline",
]
Status = Literal["queued", "running", "succeeded", "partial", "failed"]
Ending = Literal["succeeded", "partial", "failed"]
Trigger = Literal["manual", "schedule", "connect", "plan"]

KINDS: frozenset[str] = frozenset(Kind.__args__)  # type: ignore[attr-defined]
PROVIDERS: frozenset[str] = frozenset(Provider.__args__)  # type: ignore[attr-defined]
TRIGGERS: frozenset[str] = frozenset(Trigger.__args__)  # type: ignore[attr-defined]
ENDINGS: frozenset[str] = frozenset(Ending.__args__)  # type: ignore[attr-defined]
ACTIVE: tuple[str, ...] = ("queued", "running")
# error.items keeps this many of what failed.
MAX_ERROR_ITEMS = 100


class ListSyncRunsInput(Input):
    kind: Kind | None = None
    provider: Provider | None = None
    status: Status | None = None
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class SyncRunIdInput(Input):
    id: uuid.UUID


class SyncRunProgress(BaseModel):
    done: int = Field(description="Units of work done (days, URLs, keywords, prompts).")
    total: int = Field(description="Units of work planned; 0 while not yet known.")


class SyncRunError(BaseModel):
    code: str = Field(
        description="What went wrong: `cancelled` (the provider was disconnected before the "
        "run started), or the failing part's own code (e.g. `quota_exceeded`, `needs_reauth`)."
    )
    message: str
    retryable: bool = Field(description="Whether running it again may succeed.")
    items: list[dict[str, Any]] = Field(
        description="What failed in a partial or failed run, at most 100 (e.g. "
        "{day, search_type, reason} or {url, reason})."
    )


class SyncRun(BaseModel):
    id: uuid.UUID
    kind: Kind
    provider: Provider
    status: Status
    trigger: Trigger
    params: dict[str, Any] = Field(description="What the run covers (its window, its URLs).")
    progress: SyncRunProgress
    rows_written: int
    credits_reserved: int
    credits_used: int
    error: SyncRunError | None
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class SyncRunPage(Page[SyncRun]):
    pass
