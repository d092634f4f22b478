"""What sitemaps and URL inspections refuse."""

from __future__ import annotations

from contentplatform.kit.errors import (
    BadRequest,
    Conflict,
    RecordNotFound,
    ServiceUnavailable,
    TooManyRequests,
)


class SitemapNotFound(RecordNotFound):
    """There is no such sitemap in this organization (deleted, or another organization's)."""

    record = "sitemap"


class UrlInspectionNotFound(RecordNotFound):
    """There is no such URL inspection in this organization."""

    record = "URL inspection"


class OutsideProperty(BadRequest):
    """A URL is not within the selected Search Console property: for a domain property
    (`sc-domain:example.com`) an https URL on that host or one of its subdomains; for a
    URL-prefix property (`https://example.com/blog/`) an https URL starting with the prefix."""


class SitemapsReadOnly(Conflict):
    """Sitemaps cannot be submitted or deleted with this Search Console grant: it was connected
    read-only, or Google gives the account only restricted permission (siteRestrictedUser) on
    the property. Reconnect with full access, or ask the property's owner."""


class RobotsSitemap(Conflict):
    """The sitemap is declared in the site's robots.txt (source `robots_txt`): it is read-only
    here; remove its `Sitemap:` line from robots.txt instead."""


class OtherPropertySitemap(Conflict):
    """The sitemap belongs to another Search Console property than the one selected now: select
    that property (seo.updateConnection) to remove it."""


class SearchConsoleRefused(BadRequest):
    """Google refused the request (the detail has Google's words): a sitemap URL it will not
    take, or a permission the account lacks."""


class InspectionQuotaExceeded(TooManyRequests):
    """The new inspections would pass the property's 2,000 URL inspections a day (Google's
    quota, reset at midnight Pacific time): nothing was sent or stored; Retry-After is the
    seconds until the reset."""


class SearchConsoleBusy(TooManyRequests):
    """Google asked us to slow down (its per-property rate or quota): nothing was changed; try
    again after Retry-After."""


class SearchConsoleUnavailable(ServiceUnavailable):
    """Google could not be reached or failed: nothing was changed; try again later."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, extensions={"retryable": True})
