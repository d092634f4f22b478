"""What the SEO profile and competitors refuse."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound


class CompetitorNotFound(RecordNotFound):
    """There is no such competitor in this organization (deleted, or another organization's)."""

    record = "competitor"


class TooManyCompetitors(BadRequest):
    """The organization already tracks 20 competitors, the most it may: delete one first."""


class CompetitorExists(Conflict):
    """The domain is already one of the organization's competitors, or it is the
    organization's own site (settings.site_url)."""
