"""Inputs and answers of website scan's configuration operations: inputs camelCase on the wire,
the records (CrawlConfig, CrawlSchedule) as the catalog names their fields (snake_case)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import regex
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from contentplatform import __version__
from contentplatform.kit import outbound
from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier, Name

SitemapMode = Literal["include", "skip", "only"]

MAX_PATTERNS = 50
MAX_PATTERN_LENGTH = 200
# A pattern is tried on these long paths when it is given: one that backtracks
# catastrophically on them (`(a+)+$`) is refused then, rather than cut off on every URL of
# every crawl. The crawler still matches with a timeout: no probe finds every slow pattern.
PATTERN_PROBE_SECONDS = 0.05
_PROBES = (
    "/" + "a" * 2000 + "!",
    "/" + "a/" * 1000 + "!",
    "/" + "a-1" * 600 + ".html?x=" + "1" * 200 + "!",
)

# The token a site names in robots.txt to address our crawler, and the User-Agent every crawl
# sends: fixed by the service (shown on each config, not settable), so a site owner always
# knows who is asking and robots.txt rules for it always apply.
ROBOTS_TOKEN = "contentplatform-crawler"
USER_AGENT = " ".join(
    part
    for part in (f"{ROBOTS_TOKEN}/{__version__}", outbound.USER_AGENT.partition(" ")[2])
    if part
)


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """A path pattern as the crawler compiles it (the `regex` library, Python `re` syntax,
    case-sensitive), or ValueError saying why it cannot be."""
    try:
        return regex.compile(pattern)
    except regex.error as error:
        raise ValueError(f"is not a valid regular expression ({error})") from None


def _checked_pattern(pattern: str) -> str:
    compiled = compile_pattern(pattern)
    for probe in _PROBES:
        try:
            compiled.search(probe, timeout=PATTERN_PROBE_SECONDS)
        except TimeoutError:
            raise ValueError(
                "takes too long to match a long path (nested repetition such as '(a+)+' "
                "backtracks without end); write it without repeating a repetition"
            ) from None
    return pattern


PathPattern = Annotated[
    Identifier,
    Field(min_length=1, max_length=MAX_PATTERN_LENGTH),
    AfterValidator(_checked_pattern),
]


def _not_blank(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must not be blank")
    return value.strip() if value is not None else None


# --- inputs -----------------------------------------------------------------------------------

_START_URL = (
    "Where the crawl starts: an https URL of a public host (the host it resolves to is checked "
    "now and at every request), at most 2048 characters."
)
_PATTERNS = (
    f"Regular expressions (at most {MAX_PATTERNS}, each at most {MAX_PATTERN_LENGTH} "
    "characters, Python syntax) matched against a URL's path"
)


class CreateConfigInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Garden shop blog",
                    "startUrl": "https://www.example.com/blog/",
                    "includePatterns": ["^/blog/"],
                    "excludePatterns": ["/tag/", "\\?page="],
                    "maxPages": 500,
                    "maxDepth": 4,
                }
            ]
        }
    )

    name: Name = Field(min_length=1, max_length=100)
    start_url: Identifier = Field(min_length=1, max_length=2048, description=_START_URL)
    include_patterns: list[PathPattern] = Field(
        default_factory=list,
        max_length=MAX_PATTERNS,
        description=_PATTERNS + "; when any is given, a path must match one.",
    )
    exclude_patterns: list[PathPattern] = Field(
        default_factory=list,
        max_length=MAX_PATTERNS,
        description=_PATTERNS + "; a path matching one is skipped (exclude wins over include).",
    )
    max_pages: int = Field(200, ge=1, le=5000, description="Pages fetched at most per run.")
    max_depth: int = Field(3, ge=0, le=10, description="Links from the start URL; 0: it alone.")
    respect_robots_txt: bool = Field(
        True, description="Obey robots.txt (and its Crawl-delay); only an admin may turn it off."
    )
    requests_per_second: float = Field(2.0, ge=0.2, le=10, description="Per host, at most.")
    concurrency: int = Field(2, ge=1, le=2, description="Requests in flight per host, 1-2.")
    sitemap_mode: SitemapMode = Field(
        "include",
        description="`include`: sitemaps and links; `skip`: links only; `only`: sitemaps only.",
    )
    allow_subdomains: bool = False
    check_external_links: bool = Field(
        False, description="Check outbound links too, for the broken-link report."
    )
    render_javascript: bool = Field(False, description="Not available: only false is accepted.")

    _name = field_validator("name")(_not_blank)


class SettingsChange(Input):
    """Crawl settings, each optional: what is given (and not null) changes, the rest stays."""

    include_patterns: list[PathPattern] | None = Field(
        None, max_length=MAX_PATTERNS, description=_PATTERNS + "; replaces the list."
    )
    exclude_patterns: list[PathPattern] | None = Field(
        None, max_length=MAX_PATTERNS, description=_PATTERNS + "; replaces the list."
    )
    max_pages: int | None = Field(None, ge=1, le=5000)
    max_depth: int | None = Field(None, ge=0, le=10)
    respect_robots_txt: bool | None = Field(None, description="false: admins only.")
    requests_per_second: float | None = Field(None, ge=0.2, le=10)
    concurrency: int | None = Field(None, ge=1, le=2)
    sitemap_mode: SitemapMode | None = None
    allow_subdomains: bool | None = None
    check_external_links: bool | None = None


class UpdateConfigInput(SettingsChange):
    """Every field optional: what is given (and not null) changes, the rest stays."""

    id: uuid.UUID
    name: Name | None = Field(None, min_length=1, max_length=100)
    start_url: Identifier | None = Field(
        None, min_length=1, max_length=2048, description=_START_URL
    )
    render_javascript: bool | None = Field(None, description="Only false is accepted.")

    _name = field_validator("name")(_not_blank)


class ListConfigsInput(Input):
    search: str | None = Field(None, max_length=255, description="Matches the name or start URL.")
    scheduled: bool | None = Field(
        None, description="true: configs with an enabled schedule; false: the others."
    )
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class ConfigIdInput(Input):
    id: uuid.UUID


class SetScheduleInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"id": "5f0c2d1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f", "cronExpression": "30 2 * * MON"}
            ]
        }
    )

    id: uuid.UUID
    cron_expression: str = Field(
        min_length=1,
        max_length=120,
        description="5 fields (minute hour day-of-month month day-of-week), at most once a "
        "day: one minute and one hour (`30 2 * * *` daily, `0 6 * * MON` weekly).",
    )
    timezone: Identifier | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="The IANA zone the cron is read in; default: the organization's "
        "(jobs.schedulingConfig), as it is now.",
    )
    enabled: bool = True
    auto_import_changed: bool = Field(
        False,
        description="Re-import pages already imported when their content changed.",
    )


# --- outputs ----------------------------------------------------------------------------------


class CrawlSchedule(Record):
    config_id: uuid.UUID
    cron_expression: str
    timezone: str
    enabled: bool
    auto_import_changed: bool
    next_run_at: datetime | None = Field(description="UTC; null while disabled.")
    last_run_at: datetime | None
    last_run_id: uuid.UUID | None
    created_at: datetime
    updated_at: datetime


class CrawlRunSummary(BaseModel):
    """The config's latest run, in short."""

    id: uuid.UUID
    status: str
    trigger: str
    snapshot_id: uuid.UUID | None
    started_at: datetime | None
    finished_at: datetime | None


class CrawlConfig(Record):
    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    start_url: str
    host: str
    include_patterns: list[str]
    exclude_patterns: list[str]
    max_pages: int
    max_depth: int
    respect_robots_txt: bool
    requests_per_second: float
    concurrency: int
    sitemap_mode: SitemapMode
    allow_subdomains: bool
    check_external_links: bool
    render_javascript: bool
    user_agent: str = Field(
        description="What every request of a crawl sends as User-Agent (fixed by the service; "
        f"robots.txt rules for `{ROBOTS_TOKEN}` apply)."
    )
    schedule: CrawlSchedule | None
    last_run: CrawlRunSummary | None = Field(description="Null until the config has run.")
    created_at: datetime
    updated_at: datetime


class CrawlConfigPage(Page[CrawlConfig]):
    pass


# --- runs -------------------------------------------------------------------------------------

RunStatus = Literal["queued", "running", "cancelling", "completed", "failed", "cancelled"]
