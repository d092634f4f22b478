"""Keyword research's input (camelCase on the wire) and answer (snake_case, as the catalog names
its fields)."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from contentplatform.kit.schemas import Input
from contentplatform.kit.text import Identifier
from contentplatform.seo.rank.schemas import Keyword, language_of

MAX_SEEDS = 20
MAX_LIMIT = 1000
Mode = Literal["related", "matching", "questions", "metrics"]
Intent = Literal["informational", "navigational", "commercial", "transactional"]
Source = Literal["dataforseo", "search_console", "offline"]
INTENTS: tuple[Intent, ...] = ("informational", "navigational", "commercial", "transactional")


class ResearchKeywordsInput(Input):
    seeds: Annotated[list[Keyword], Field(min_length=1, max_length=MAX_SEEDS)] = Field(
        description="1 to 20 seed keywords of 1 to 100 characters: trimmed, lowercased, "
        "de-duplicated."
    )
    mode: Mode = Field(
        "related",
        description="related: keywords searched around the seeds; matching: keywords "
        "containing a seed; questions: questions about the seeds; metrics: the seeds' own "
        "figures.",
    )
    location_code: int | None = Field(
        None, ge=1, description="Default: the SEO settings' location_code (else 2840, US)."
    )
    language_code: Identifier | None = Field(
        None,
        min_length=2,
        max_length=35,
        description="Default: the SEO settings' language (else en).",
    )
    limit: int = Field(100, ge=1, le=MAX_LIMIT, description="Ideas asked for (1-1000).")
    min_volume: int | None = Field(None, ge=0, description="Drop ideas searched less a month.")
    max_difficulty: int | None = Field(
        None, ge=0, le=100, description="Drop ideas harder than this (0-100)."
    )
    intents: Annotated[list[Intent], Field(min_length=1, max_length=4)] | None = Field(
        None, description="Keep only ideas of one of these intents."
    )
    idempotency_key: Identifier | None = Field(
        None,
        min_length=1,
        max_length=255,
        description="The credits are held under it: the same key is never charged twice.",
    )

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    _language = field_validator("language_code")(language_of)


class MonthlySearches(BaseModel):
    year: int
    month: int
    volume: int | None


class KeywordIdea(BaseModel):
    keyword: str
    search_volume: int | None = Field(
        description="Monthly searches (the provider's); from Search Console, the monthly "
        "average of our impressions over 90 days (a demand proxy: `estimate` true)."
    )
    keyword_difficulty: int | None = Field(description="0-100; null when unknown.")
    cpc: float | None = Field(description="USD; null when unknown.")
    competition: float | None = Field(description="Paid-search competition, 0-1.")
    intent: Intent = Field(
        description="The provider's main intent, else our lexical rule (see the operation)."
    )
    secondary_intents: list[Intent]
    monthly_searches: list[MonthlySearches] = Field(description="Newest first.")
    serp_features: list[str] = Field(description="SERP element types besides organic results.")
    estimate: bool = Field(description="true: search_volume is our impressions, not searches.")
    our_position: int | None = Field(
        description="Our best position at the newest check of the keyword tracked in this "
        "market (any device); null when not tracked or not ranking."
    )
    tracked: bool = Field(description="Tracked in this market (seo.listTrackedKeywords).")
    planned_in: uuid.UUID | None = Field(
        None, description="The SEO plan planning it: always null until SEO Plans exist."
    )


class KeywordResearch(BaseModel):
    data: list[KeywordIdea] = Field(description="At most `limit`, most searched first.")
    total: int = Field(description="Ideas passing the filters (before the limit).")
    source: Source
    cached: bool = Field(description="Served from the 30-day store: nothing was charged.")
    credits_used: int = Field(description="Credits this call spent (0 when cached or local).")
