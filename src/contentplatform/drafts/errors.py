"""What the drafts domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, Forbidden, NotFound, RecordNotFound


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


class CommentNotFound(RecordNotFound):
    """There is no such comment on this draft (another draft's, or another organization's)."""

    record = "comment"


class ReplyToReply(BadRequest):
    """`parentId` names a reply: replies are one level deep, so reply to the thread's first
    comment."""


class CommentThreadFull(Conflict):
    """The thread has the most replies a thread holds; start a new comment."""


class MentionNotMember(BadRequest):
    """The body @mentions someone who is not an active member of the organization; the detail
    names them."""


class AnchorOutOfRange(BadRequest):
    """The anchor's `end` is past the end of the draft's text at its current version."""


class BulkDeleteNeedsAdmin(Forbidden):
    """drafts.bulk's `delete` needs the admin role, as drafts.delete does."""


class BulkActionNeedsField(BadRequest):
    """drafts.bulk's action needs a field that was not given: `reason` to reject, `assigneeId`
    to assign."""
