"""Input and answer of websiteScan.discoverSitemap: the input camelCase on the wire, the answer
named as the catalog names it (snake_case)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contentplatform.kit.schemas import Input
from contentplatform.kit.text import Identifier

MAX_LIMIT = 5000


class DiscoverSitemapInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"url": "https://www.example.com/", "search": "/blog/", "limit": 100}]
        }
    )

    url: Identifier | None = Field(
        None,
        min_length=1,
        max_length=2048,
        description="The site to read, as a crawl's start URL: https and a public host (checked "
        "before anything is sent). Required unless `configId` is given.",
    )
    config_id: uuid.UUID | None = Field(
        None,
        description="Read the site of this crawl configuration instead (its start URL, request "
        "rate and robots.txt choice).",
    )
    search: str | None = Field(
        None,
        max_length=200,
        description="Keep only the URLs that contain this text (case-insensitive).",
    )
    include_subdomains: bool = Field(
        False, description="Keep URLs on subdomains of the site's host too."
    )
    limit: int = Field(
        1000, ge=1, le=MAX_LIMIT, description="URLs answered at most; `total` counts them all."
    )

    @model_validator(mode="after")
    def _one_site(self) -> DiscoverSitemapInput:
        if (self.url is None) == (self.config_id is None):
            raise ValueError("give either url or configId")
        return self


class RobotsTxtSummary(BaseModel):
    found: bool = Field(description="The site answers a robots.txt.")
    sitemaps_declared: list[str] = Field(description="Its `Sitemap:` lines, in order.")
    disallow_count: int = Field(
        description="Its Disallow rules that disallow something, in all groups."
    )
    error: str | None = Field(
        description="Why it could not be read (a 5xx status, a timeout, a refused address): then "
        "nothing else is read, as a crawl would read nothing. Null otherwise (a 404 is no error: "
        "the site allows everything)."
    )


class SitemapSummary(BaseModel):
    url: str
    type: Literal["index", "urlset"] | None = Field(description="Null when it could not be read.")
    url_count: int = Field(description="Entries in the file (sitemaps for an index, pages else).")
    error: str | None = Field(
        description="Why it was not read: `HTTP 404`, `timeout` (the 30 s ran out first), `not a "
        "sitemap (...)`, or the fetch error (`dns`, `refused`, `too_large`, ...). Null when read."
    )


class DiscoveredUrl(BaseModel):
    url: str = Field(description="Normalized, as a crawl stores it.")
    lastmod: str | None = Field(description="The sitemap's `lastmod`, as written there.")
    source: Literal["sitemap", "robots", "link"] = Field(
        description="`robots`: from a sitemap robots.txt declares (or an index it declares); "
        "`sitemap`: from one found without it (/sitemap.xml); `link`: a link of the start page, "
        "when the sitemaps gave no URL."
    )


class SitemapDiscovery(BaseModel):
    robots_txt: RobotsTxtSummary
    sitemaps: list[SitemapSummary] = Field(description="Every sitemap read or tried, in order.")
    urls: list[DiscoveredUrl] = Field(description="In the order found, at most `limit`.")
    total: int = Field(
        description="URLs found that match `search` (all of them when there is none), before "
        "`limit`; at most 50,000 are read."
    )
