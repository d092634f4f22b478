"""What website scan refuses."""

from __future__ import annotations

from contentplatform.kit.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    RecordNotFound,
    TooManyRequests,
)


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


# --- runs -------------------------------------------------------------------------------------


class CrawlRunNotFound(RecordNotFound):
    """There is no such crawl run in this organization."""

    record = "crawl run"


class CrawlAlreadyActive(Conflict):
    """The configuration already has a queued or running crawl (`runId` names it)."""


class TooManyActiveCrawls(TooManyRequests):
    """The organization already has 2 crawls queued or running; start this one when one ends."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, retry_after=60)


class CrawlNotCancellable(Conflict):
    """The crawl already ended (completed, failed or cancelled)."""


# --- snapshots and pages ------------------------------------------------------------------------


class SnapshotNotFound(RecordNotFound):
    """There is no such snapshot in this organization."""

    record = "snapshot"


class PageNotFound(RecordNotFound):
    """There is no such crawled page in this organization."""

    record = "crawled page"


class ContentPurged(Gone):
    """The page's content was removed by retention (only the latest 20 snapshots of a
    configuration keep content); its metadata remains."""


class SnapshotsNotComparable(BadRequest):
    """The two snapshots belong to different crawl configurations."""


class ImportKeyReused(Conflict):
    """The idempotency key was used within 24 hours for an import of other pages."""


# --- site profile ----------------------------------------------------------------------------


class NoSnapshotToProfile(BadRequest):
    """The configuration has no finished, non-partial snapshot to infer a site profile from."""


class SiteProfileGenerating(Conflict):
    """The site profile is already being generated."""
