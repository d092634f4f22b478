"""What SEO actions refuse."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound


class SeoActionNotFound(RecordNotFound):
    """There is no such SEO action in this organization (or it is another organization's)."""

    record = "SEO action"


class IllegalActionTransition(Conflict):
    """The action's status does not allow this move (the detail names its current status):
    open <-> in_progress; open | in_progress -> done or dismissed; done -> open (reopen);
    dismissed -> open (restore). verified is set by generation only."""


class ActionNotForContent(Conflict):
    """Only an open or in-progress action of a content type (create_content, close_ai_gap,
    target_striking_distance, improve_snippet, improve_geo) becomes a job; refresh_content
    needs a run that revises an existing draft as a new revision, which is not built yet."""


class AssigneeNotMember(BadRequest):
    """The assignee is not a member of the organization."""
