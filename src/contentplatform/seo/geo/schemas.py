"""GEO's inputs and answers: readiness, citability pages, llms.txt."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page
from contentplatform.kit.text import Identifier, Name, PlainText


class ReadinessInput(Input):
    snapshot_id: uuid.UUID | None = Field(
        None, description="A website-scan snapshot; default the newest complete one of the site."
    )


class CrawlerAccess(BaseModel):
    bot: str = Field(description="The user agent token robots.txt names it by.")
    operator: str
    purpose: Literal["search", "user", "training"] = Field(
        description="`search`: indexes for an answer engine; `user`: fetches a page a person "
        "asked about; `training`: collects for model training."
    )
    allowed: bool | None = Field(description="Null: robots.txt could not be read.")
    matched_rule: str | None = Field(description="The User-agent group that applies to it.")
    effect: Literal["allowed", "blocked_from_answers", "excluded_from_training", "unknown"]


class LiveLlmsTxt(BaseModel):
    present: bool = Field(description="/llms.txt answered 200 at the scan.")
    url: str | None
    valid: bool | None = Field(description="Follows llmstxt.org's format; null when absent.")
    problems: list[str]
    links: int
    differs_from_generated: bool | None = Field(
        description="Null until an llms.txt is generated here (seo.generateLlmsTxt)."
    )


class StructuredData(BaseModel):
    pages_with_json_ld_pct: float = Field(description="Of the indexable pages, 0 to 100.")
    types: dict[str, int] = Field(description="Pages carrying each JSON-LD @type.")
    invalid_pages: int = Field(description="Pages with a JSON-LD block that is not JSON.")


class CitabilityDistribution(BaseModel):
    low: int = Field(description="Pages scoring under 40.")
    medium: int = Field(description="40 to 69.")
    high: int = Field(description="70 and over.")


class CitabilitySummary(BaseModel):
    avg: float | None = Field(description="Null without indexable pages.")
    distribution: CitabilityDistribution


class GeoIssue(BaseModel):
    code: str
    severity: Literal["error", "warning", "notice"]
    message: str


class GeoReadiness(BaseModel):
    snapshot_id: uuid.UUID
    computed_at: datetime
    score: int = Field(
        description="0-100: AI crawlers' access 40 (10 off per search or user agent blocked; 0 "
        "when robots.txt cannot be read), llms.txt 20 (10 when present but invalid), structured "
        "data 20 (its share of pages), citability 20 (the average's share)."
    )
    crawler_access: list[CrawlerAccess]
    llms_txt: LiveLlmsTxt
    structured_data: StructuredData
    citability: CitabilitySummary
    issues: list[GeoIssue]


# --- pages --------------------------------------------------------------------------------------


class ListGeoPagesInput(Input):
    min_score: int | None = Field(None, ge=0, le=100)
    max_score: int | None = Field(None, ge=0, le=100)
    search: Identifier | None = Field(
        None, min_length=1, max_length=255, description="URL or title contains (any case)."
    )
    sort_by: Literal["citability", "clicks", "ai_citations"] = "clicks"
    sort_order: Literal["asc", "desc"] = "desc"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class GeoFactors(BaseModel):
    answer_first: bool
    question_headings: int
    faq_or_howto_schema: bool
    lists_or_tables: bool
    cites_sources_or_stats: bool
    freshness_days: int | None = Field(description="Since dateModified (else datePublished).")
    author_or_org_entity: bool
    word_count: int
    section_count: int = Field(description="H2 sections.")


class GeoPage(BaseModel):
    page_id: uuid.UUID = Field(description="The website-scan page (websiteScan.getPage).")
    url: str
    title: str | None
    citability_score: int = Field(ge=0, le=100)
    factors: GeoFactors
    clicks_28d: int | None = Field(
        description="Search Console clicks of the last 28 stored days; null without Search "
        "Console data."
    )
    ai_citations_28d: int | None = Field(
        description="Null: AI answers are tracked by AI visibility (a later part)."
    )
    recommendations: list[str]


class GeoPagePage(Page[GeoPage]):
    snapshot_id: uuid.UUID | None = Field(description="Null when the site has no complete scan.")


# --- llms.txt -----------------------------------------------------------------------------------

Glob = Annotated[Identifier, Field(min_length=1, max_length=255)]
Url = Annotated[Identifier, Field(min_length=1, max_length=2048)]


class SectionRule(Input):
    title: Name = Field(min_length=1, max_length=100)
    url_patterns: list[Glob] = Field(
        min_length=1,
        max_length=20,
        description="Globs over a URL's path (`/blog/*`), each 1-255 characters.",
    )


class GenerateLlmsTxtInput(Input):
    snapshot_id: uuid.UUID | None = None
    summary: PlainText | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="The blockquote under the title; default the home page's meta description.",
    )
    sections: list[SectionRule] | None = Field(
        None, max_length=20, description="Default: one section per top-level path."
    )
    include_urls: list[Url] = Field(
        default_factory=list,
        max_length=200,
        description="Pages of the scan listed first, whatever else decides.",
    )
    exclude_url_patterns: list[Glob] = Field(
        default_factory=list, max_length=50, description="Globs over a URL's path to leave out."
    )
    max_links: int = Field(100, ge=10, le=500)
    optional_section: bool = Field(
        True, description="Pages deeper than 2 links from the start go to `## Optional`."
    )


class LlmsLink(BaseModel):
    title: str
    url: str
    description: str | None


class LlmsSection(BaseModel):
    title: str
    links: list[LlmsLink]


class LiveFile(BaseModel):
    present: bool
    url: str | None
    differs: bool | None = Field(description="Null when either side is missing.")
    fetched_at: datetime | None = Field(description="When the scan that read it finished.")


class LlmsTxt(BaseModel):
    content: str | None = Field(description="The generated markdown; null until generated.")
    generated_at: datetime | None
    options: dict[str, Any] | None
    sections: list[LlmsSection]
    link_count: int
    live: LiveFile
