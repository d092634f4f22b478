"""What website scan refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, Forbidden, RecordNotFound


class CrawlConfigNotFound(RecordNotFound):
    """There is no such crawl configuration in this organization (deleted, or another
    organization's)."""

    record = "crawl configuration"


class CrawlScheduleNotFound(RecordNotFound):
    """The crawl configuration has no schedule."""

    record = "crawl schedule for the configuration"


class StartUrlRefused(BadRequest):
    """The start URL may not be crawled: not https, credentials in it, a host that does not
    resolve, or one that resolves to a private, loopback, link-local or metadata address (the
    detail says which); nothing was sent to it."""


class DuplicateStartUrl(Conflict):
    """Another crawl configuration of the organization already starts at this URL."""


class RobotsOverrideForbidden(Forbidden):
    """Only an admin may turn off respecting robots.txt (`respectRobotsTxt: false`)."""


class CrawlSettingUnavailable(BadRequest):
    """A setting this service cannot honour yet: `renderJavascript: true` (no browser renders
    pages here)."""


class BadCrawlSchedule(BadRequest):
    """The schedule cannot be used: a cron expression that is not 5 valid fields, that never
    runs, or that fires more often than once a day; or a time zone that is not an IANA name
    (`errors` names the field)."""
