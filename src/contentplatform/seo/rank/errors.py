"""What rank tracking refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict, RecordNotFound


class TrackedKeywordNotFound(RecordNotFound):
    """There is no such tracked keyword in this organization (deleted, or another
    organization's)."""

    record = "tracked keyword"


class SerpNotFound(RecordNotFound):
    """The keyword has no stored SERP for that date (no check succeeded on it)."""

    record = "SERP snapshot"


class SerpProviderNotConnected(Conflict):
    """No SERP provider is connected: connect `dataforseo` (or, in the local environment,
    `offline`) with seo.connect."""


class NothingToCheck(Conflict):
    """None of the keywords asked for (or, by default, none of the organization's) is an
    active tracked keyword."""
