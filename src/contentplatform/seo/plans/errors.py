"""What SEO plans refuse."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound


class SeoPlanNotFound(RecordNotFound):
    """There is no such SEO plan in this organization (or it is another organization's, or it
    was deleted)."""

    record = "SEO plan"


class SeoPlanItemNotFound(RecordNotFound):
    """The plan has no such item."""

    record = "SEO plan item"


class PlanMonthTaken(Conflict):
    """The month already has a plan that is not archived (the detail names it): archive it
    first, or edit it."""


class IllegalPlanTransition(Conflict):
    """The plan's status does not allow this (the detail names it): generating -> draft |
    failed; draft -> approved -> completed; draft | failed -> generating (regenerate); any
    but generating -> archived; only a draft, failed, completed or archived plan is deleted."""


class ItemNotEditable(Conflict):
    """The item's job instance has started (or ended), so the item no longer changes (the
    detail names the instance's status); or the move between item statuses is not allowed."""


class NothingToApprove(Conflict):
    """The plan has no accepted item (and includeProposed was not asked)."""


class PlanFull(BadRequest):
    """A plan holds at most 100 items."""


class DateOutsideMonth(BadRequest):
    """An item's targetDate must be a day of the plan's month."""


class PlanKeyUsed(Conflict):
    """The idempotencyKey was already spent on a plan since deleted: send another key."""
