"""SEO connections' inputs (camelCase on the wire) and answers (snake_case). No answer carries a
credential: tokens and keys stay sealed in the row; `credential_hint` is what is shown."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from contentplatform.kit.schemas import Input, Listing
from contentplatform.kit.text import Identifier, JsonObject

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
PROVIDERS: tuple[Provider, ...] = (
    "google_search_console",
    "dataforseo",
    "pagespeed_insights",
    "openai",
    "perplexity",
    "gemini",
    "anthropic",
    "offline",
)
Status = Literal["not_connected", "pending_authorization", "connected", "needs_reauth", "error"]
Capability = Literal["search_console", "serp", "keyword_data", "ai_answers", "pagespeed"]

MAX_CONFIG_BYTES = 10_000


def _bounded(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and len(json.dumps(value)) > MAX_CONFIG_BYTES:
        raise ValueError(f"must be at most {MAX_CONFIG_BYTES} bytes of JSON")
    return value


# --- inputs -----------------------------------------------------------------------------------


class SeoProviderInput(Input):
    provider: Provider


class SeoCredentials(Input):
    """A key provider's credentials: `{apiKey}`, or `{login, password}` for dataforseo."""

    api_key: Identifier | None = Field(None, min_length=1, max_length=500)
    login: Identifier | None = Field(None, min_length=1, max_length=255)
    password: Identifier | None = Field(None, min_length=1, max_length=255)


class SeoConnectInput(Input):
    provider: Provider
    redirect_uri: Identifier | None = Field(
        None,
        max_length=2048,
        description="OAuth providers: where Google sends the admin back, one of the "
        "deployment's allowed redirect URIs (exact match).",
    )
    read_only: bool = Field(
        False,
        description="OAuth: ask for the webmasters.readonly scope (sitemap submit/delete are "
        "then unavailable).",
    )
    credentials: SeoCredentials | None = Field(
        None,
        description="Key providers: {apiKey}, or {login, password} for dataforseo. Stored "
        "encrypted, never returned.",
    )
    config: JsonObject | None = Field(None, description="Provider options, e.g. {model}.")

    _size = field_validator("config")(_bounded)


class CompleteSeoConnectInput(Input):
    provider: Literal["google_search_console"]
    code: Identifier = Field(min_length=1, max_length=2048)
    state: Identifier = Field(min_length=1, max_length=512)


class UpdateSeoConnectionInput(Input):
    provider: Provider
    property: Identifier | None = Field(
        None,
        min_length=1,
        max_length=2048,
        description="Search Console: one site_url of available_properties.",
    )
    sync_enabled: bool | None = None
    config: JsonObject | None = Field(
        None,
        description="dataforseo: {priority normal|high, depth 10-100}; openai/gemini/"
        "perplexity/anthropic: {model}; pagespeed_insights: {defaultStrategy "
        "mobile|desktop}. Merged into the stored options.",
    )

    _size = field_validator("config")(_bounded)


class SeoDisconnectInput(Input):
    provider: Provider
    purge_data: bool = False


# --- answers ----------------------------------------------------------------------------------


class SeoAvailableProperty(BaseModel):
    site_url: str
    permission_level: str


class SeoConnection(BaseModel):
    provider: Provider
    status: Status
    capabilities: list[Capability] = Field(examples=[["search_console"]])
    account_label: str | None
    scopes: list[str]
    config: dict[str, Any]
    credential_hint: str | None
    sync_enabled: bool
    last_sync_at: datetime | None
    last_error: dict[str, Any] | None
    connected_at: datetime | None
    connected_by: str | None


class SeoSelectedProperty(BaseModel):
    id: uuid.UUID
    site_url: str
    permission_level: str | None
    final_through: str | None
    fresh_through: str | None
    last_synced_at: datetime | None


class SeoQuota(BaseModel):
    url_inspection_used_today: int
    url_inspection_limit_per_day: int
    url_inspection_limit_per_minute: int
    search_analytics_queries_per_minute: int


class SeoRecentRun(BaseModel):
    id: uuid.UUID
    kind: str
    status: str
    trigger: str
    rows_written: int
    created_at: datetime
    finished_at: datetime | None


class SeoConnectionDetail(SeoConnection):
    available_properties: list[SeoAvailableProperty]
    property: SeoSelectedProperty | None
    quota: SeoQuota | None
    recent_runs: list[SeoRecentRun]


class SeoConnectOutcome(SeoConnectionDetail):
    """A key provider: the connection, connected. Search Console: `status`
    pending_authorization, with the URL to send the admin to and the state it carries."""

    authorization_url: str | None = None
    state: str | None = None
    expires_at: datetime | None = None


class SeoConnectionList(Listing[SeoConnection]):
    pass


class SeoConnectionTest(BaseModel):
    ok: bool
    status: Status
    account_label: str | None
    capabilities: list[Capability] = Field(examples=[["search_console"]])
    available_properties: list[SeoAvailableProperty]
    quota: SeoQuota | None
    warnings: list[str]


class SeoPurged(BaseModel):
    search_rows: int
    inspections: int
    sitemaps: int
    serp_snapshots: int
    ai_answers: int


class SeoRevocation(BaseModel):
    attempted: bool
    ok: bool | None
    message: str | None


class SeoDisconnected(BaseModel):
    success: bool
    purged: SeoPurged
    cancelled_runs: int
    revocation: SeoRevocation
