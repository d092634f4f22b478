"""What the drafts domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, NotFound, RecordNotFound


class DraftNotFound(RecordNotFound):
    """There is no such draft in this organization (deleted, or another organization's)."""

    record = "draft"


class DraftVersionNotFound(NotFound):
    """The draft has no revision with that version number."""


class IllegalDraftTransition(Conflict):
    """The draft's status does not allow this move (see the state machine); the detail names
    the current status."""


class StaleDraftVersion(Conflict):
    """`expectedVersion` is not the draft's current version: someone changed it meanwhile."""


class AssigneeNotMember(BadRequest):
    """The assignee is not a member of the organization."""


class SeoMetaInvalid(BadRequest):
    """A known seo_meta key has the wrong type (seo_title, meta_description and slug are
    strings, focus_keywords a list of strings)."""
