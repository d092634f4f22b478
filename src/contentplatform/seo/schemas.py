"""Inputs and answers of the SEO profile (settings) and competitors: inputs camelCase on the
wire, answers snake_case.

Hosts are compared in one form, said here once: lowercase, IDNA 2008 with UTS #46 mapping (the
`idna` package) to its ASCII form (`bücher.de` -> `xn--bcher-kva.de`), no trailing dot. A
competitor's domain also loses a leading `www.`; the site URL keeps its host as given (a site
on `www.` is another Search Console URL-prefix property than one without).
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

import idna
from pydantic import BaseModel, Field, field_validator, model_validator

from contentplatform.kit.schemas import Input, Listing, Record
from contentplatform.kit.text import Identifier, Name, PlainText

Device = Literal["desktop", "mobile"]
SearchType = Literal["web", "image", "video", "news", "discover"]
Frequency = Literal["daily", "weekly", "off"]
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
Engine = Literal["chatgpt", "perplexity", "gemini", "claude", "google_ai_overview"]
AuditTrigger = Literal["after_scan", "weekly", "manual"]

MAX_COMPETITORS = 20
MAX_TERMS = 20
MAX_HOST_LENGTH = 253

# The defaults of every block, as stored (snake_case): what a block reads as before it is set,
# and under what was set (a key added later reads as its default).
DEFAULT_DEVICES: list[str] = ["desktop", "mobile"]
DEFAULT_BLOCKS: dict[str, dict[str, Any]] = {
    "search_console": {"sync_enabled": True, "search_types": ["web"], "backfill_months": 16},
    "rank": {"frequency": "weekly", "weekday": "mon", "depth": 20, "stop_at_own_domain": False},
    "ai_visibility": {"engines": [], "frequency": "weekly", "samples_per_prompt": 3},
    "audit": {"trigger": "after_scan", "pagespeed_top_pages": 10},
    "actions": {"auto_generate": True},
    "planning": {
        "posts_per_month": 8,
        "publish_weekdays": ["tue", "thu"],
        "content_mix": {"new": 70, "refresh": 20, "geo": 10},
        "auto_generate_day": None,
        "auto_track_keywords": True,
        "default_job_id": None,
        "default_publisher_connection_id": None,
    },
}

# BCP 47, as far as a form needs: a language, then subtags ("en", "en-GB", "zh-Hant-TW").
_LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")

T = TypeVar("T")


@cache
def _countries() -> frozenset[str]:
    """ISO 3166-1 alpha-2 codes, from the table the tz database ships (tzdata, a dependency)."""
    table = resources.files("tzdata").joinpath("zoneinfo/iso3166.tab").read_text("utf-8")
    return frozenset(
        line.split("\t", 1)[0] for line in table.splitlines() if line and line[0] != "#"
    )


def ascii_host(value: str) -> str:
    """A domain name in the one form hosts are compared in (see the module), or ValueError: an
    IP address, a name without a dot, or one IDNA refuses."""
    host = value.strip().rstrip(".").lower()
    if not host:
        raise ValueError("must name a host")
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    else:
        raise ValueError("must be a domain name, not an IP address")
    try:
        encoded = idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError) as error:
        raise ValueError(f"is not a valid domain name ({error})") from None
    if "." not in encoded or len(encoded) > MAX_HOST_LENGTH:
        raise ValueError("must be a domain name such as example.com")
    return encoded


def site_url_of(value: str) -> str:
    """`value` as a stored site URL: `https://host[:port]/`, host in the compared form, the
    default port dropped; refused (ValueError) unless an https origin (path `/` allowed)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        raise ValueError("must be an https URL such as https://example.com/") from None
    if parts.scheme.lower() != "https" or not parts.hostname:
        raise ValueError("must be an https URL such as https://example.com/")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user name or password")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("must be the site's origin (https://example.com/), without a path")
    host = ascii_host(parts.hostname)
    return f"https://{host}{'' if port in (None, 443) else f':{port}'}/"


def competitor_domain(value: str) -> str:
    """`value` as a stored competitor domain: a bare host in the compared form without `www.`.
    A URL is taken for its host when it has no path (`https://www.Example.com/` ->
    `example.com`); a path, port or user name is refused (ValueError)."""
    text = value.strip()
    if "://" not in text:
        text = f"https://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError("must be a domain name such as example.com") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("must be a domain name such as example.com")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("must be a domain without a path (example.com, not example.com/blog)")
    if port is not None or parts.username is not None:
        raise ValueError("must be a domain without a port or user name")
    host = ascii_host(parts.hostname)
    return host.removeprefix("www.") if host.count(".") > 1 else host


def _unique(values: list[T] | None) -> list[T] | None:
    if values is not None and len(set(values)) != len(values):
        raise ValueError("must not repeat a value")
    return values


def _distinct_terms(values: list[str] | None) -> list[str] | None:
    """Terms without repeats (compared case-insensitively; the first spelling kept) or blanks."""
    if values is None:
        return None
    seen: dict[str, str] = {}
    for term in values:
        if not term.strip():
            raise ValueError("must not hold a blank term")
        seen.setdefault(term.casefold(), term)
    return list(seen.values())


Term = Annotated[PlainText, Field(min_length=1, max_length=100)]

# --- settings -------------------------------------------------------------------------------


class SearchConsolePatch(Input):
    sync_enabled: bool | None = Field(None, description="Pull Search Console data every day.")
    search_types: list[SearchType] | None = Field(None, min_length=1, max_length=5)
    backfill_months: int | None = Field(
        None, ge=1, le=16, description="How far back the first sync reaches (Google keeps 16)."
    )

    _distinct = field_validator("search_types")(_unique)


def _page_multiple(value: int | None) -> int | None:
    if value is not None and value % 10:
        raise ValueError("must be a multiple of 10 (search engines give 10 results a page)")
    return value


class RankPatch(Input):
    frequency: Frequency | None = Field(
        None,
        description="Scheduled checks at 05:00 of the organization's zone: daily, weekly "
        "(on `weekday`) or off.",
    )
    weekday: Weekday | None = Field(None, description="The day of weekly checks.")
    depth: int | None = Field(
        None,
        ge=10,
        le=100,
        description="Results read per check, 10 to 100 in tens (default 20): providers bill "
        "per SERP page of 10, so a check costs depth/10 credits per keyword and device.",
    )
    stop_at_own_domain: bool | None = Field(
        None,
        description="Stop reading a SERP at the page our domain shows on (cheaper); "
        "competitors past it then show as unknown (default false).",
    )

    _depth = field_validator("depth")(_page_multiple)


class AiVisibilityPatch(Input):
    engines: list[Engine] | None = Field(None, max_length=5)
    frequency: Frequency | None = None
    samples_per_prompt: int | None = Field(None, ge=1, le=5)

    _distinct = field_validator("engines")(_unique)


class AuditPatch(Input):
    trigger: AuditTrigger | None = None
    page_speed_top_pages: int | None = Field(
        None, ge=0, le=50, description="Pages (by clicks) measured by PageSpeed in each audit."
    )


class ActionsPatch(Input):
    auto_generate: bool | None = None


class ContentMixInput(Input):
    """The month's plan by kind of post, in percent: all three, summing to 100."""

    new: int = Field(ge=0, le=100)
    refresh: int = Field(ge=0, le=100)
    geo: int = Field(ge=0, le=100)

    @model_validator(mode="after")
    def _sums_to_100(self) -> ContentMixInput:
        if self.new + self.refresh + self.geo != 100:
            raise ValueError("new, refresh and geo must sum to 100")
        return self


class PlanningPatch(Input):
    posts_per_month: int | None = Field(None, ge=1, le=100)
    publish_weekdays: list[Weekday] | None = Field(None, min_length=1, max_length=7)
    content_mix: ContentMixInput | None = None
    auto_generate_day: int | None = Field(
        None, ge=1, le=28, description="Day of the month the plan is generated; null: never."
    )
    auto_track_keywords: bool | None = None
    default_job_id: uuid.UUID | None = Field(
        None, description="A job of this organization (404 otherwise); null clears it."
    )
    default_publisher_connection_id: uuid.UUID | None = Field(
        None, description="A publisher connection of this organization (404 otherwise)."
    )

    _distinct = field_validator("publish_weekdays")(_unique)


class UpdateSeoSettingsInput(Input):
    """Only the fields sent change, within a block too (blocks are merged). null clears a
    nullable field (siteUrl, brandName, country, language, locationCode and planning's
    autoGenerateDay, defaultJobId, defaultPublisherConnectionId); on any other it changes
    nothing."""

    site_url: Identifier | None = Field(
        None,
        max_length=2048,
        description="The site's https origin (path `/` allowed), stored as "
        "`https://host[:port]/` with the host lowercased and IDNA-encoded.",
        examples=["https://example.com/"],
    )
    brand_name: Name | None = Field(None, min_length=1, max_length=100)
    brand_terms: list[Term] | None = Field(
        None,
        max_length=MAX_TERMS,
        description="Words that make a query branded and an AI answer a mention (repeats, "
        "compared case-insensitively, are dropped).",
    )
    country: Identifier | None = Field(
        None, min_length=2, max_length=2, description="ISO 3166-1 alpha-2 (stored uppercase)."
    )
    language: Identifier | None = Field(None, max_length=35, examples=["en", "en-GB"])
    location_code: int | None = Field(
        None, ge=1, description="SERP location code (2840 = United States)."
    )
    devices: list[Device] | None = Field(None, min_length=1, max_length=2)
    search_console: SearchConsolePatch | None = None
    rank: RankPatch | None = None
    ai_visibility: AiVisibilityPatch | None = None
    audit: AuditPatch | None = None
    actions: ActionsPatch | None = None
    planning: PlanningPatch | None = None

    @field_validator("site_url")
    @classmethod
    def _site_url(cls, value: str | None) -> str | None:
        return None if value is None else site_url_of(value)

    @field_validator("brand_name")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return value

    _terms = field_validator("brand_terms")(_distinct_terms)
    _devices = field_validator("devices")(_unique)

    @field_validator("country")
    @classmethod
    def _country(cls, value: str | None) -> str | None:
        if value is None:
            return None
        code = value.upper()
        if code not in _countries():
            raise ValueError("must be an ISO 3166-1 alpha-2 country code (US, GB, DE)")
        return code

    @field_validator("language")
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        if value is not None and not _LANGUAGE_TAG.match(value):
            raise ValueError("must be a BCP 47 language tag (en, en-GB, pt-BR)")
        return value


class SearchConsoleBlock(BaseModel):
    sync_enabled: bool
    search_types: list[SearchType]
    backfill_months: int


class RankBlock(BaseModel):
    frequency: Frequency
    weekday: Weekday
    depth: int = Field(description="Results read per check (10-100, in tens).")
    stop_at_own_domain: bool


class AiVisibilityBlock(BaseModel):
    engines: list[Engine]
    frequency: Frequency
    samples_per_prompt: int


class AuditBlock(BaseModel):
    trigger: AuditTrigger
    pagespeed_top_pages: int


class ActionsBlock(BaseModel):
    auto_generate: bool


class ContentMix(BaseModel):
    new: int
    refresh: int
    geo: int


class PlanningBlock(BaseModel):
    posts_per_month: int
    publish_weekdays: list[Weekday]
    content_mix: ContentMix
    auto_generate_day: int | None
    auto_track_keywords: bool
    default_job_id: uuid.UUID | None
    default_publisher_connection_id: uuid.UUID | None


class SeoSettings(BaseModel):
    site_url: str | None = Field(description="null until set.")
    brand_name: str | None
    brand_terms: list[str]
    country: str | None
    language: str | None
    location_code: int | None
    devices: list[Device]
    search_console: SearchConsoleBlock
    rank: RankBlock
    ai_visibility: AiVisibilityBlock
    audit: AuditBlock
    actions: ActionsBlock
    planning: PlanningBlock
    updated_at: datetime | None = Field(description="null until the first update.")
    updated_by: str | None


class UpdatedSettings(SeoSettings):
    warnings: list[str] = Field(
        description="What is saved but deserves a look: the site URL outside the selected "
        "Search Console property."
    )


# --- competitors ----------------------------------------------------------------------------


class CompetitorFields(Input):
    aliases: list[Term] | None = Field(
        None,
        max_length=MAX_TERMS,
        description="Other names the competitor goes by, for mentions in AI answers (repeats, "
        "compared case-insensitively, are dropped).",
    )
    track_rank: bool | None = None
    track_ai: bool | None = None

    _aliases = field_validator("aliases")(_distinct_terms)


class CreateCompetitorInput(CompetitorFields):
    name: Name = Field(min_length=1, max_length=100)
    domain: Identifier = Field(
        max_length=MAX_HOST_LENGTH,
        description="A host name; a URL without a path is taken for its host. Stored "
        "lowercase, IDNA-encoded, without a leading `www.`.",
        examples=["competitor.com"],
    )

    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        return competitor_domain(value)

    @field_validator("name")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class UpdateCompetitorInput(CompetitorFields):
    id: uuid.UUID
    name: Name | None = Field(None, min_length=1, max_length=100)

    @field_validator("name")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return value


class CompetitorIdInput(Input):
    id: uuid.UUID


class SeoCompetitor(Record):
    id: uuid.UUID
    name: str
    domain: str
    aliases: list[str]
    track_rank: bool
    track_ai: bool
    created_at: datetime
    updated_at: datetime


class SeoCompetitorListing(Listing[SeoCompetitor]):
    pass
