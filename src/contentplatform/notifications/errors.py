"""What the notifications domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict, RecordNotFound


class WatchNotFound(RecordNotFound):
    """The caller has no such watch in this organization (deleted, another member's, or another
    organization's)."""

    record = "watch"


class TooManyWatches(Conflict):
    """The caller already watches the most resources one member may in an organization (the
    detail says how many; the tenant watch aside); delete a watch first."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"You already watch {limit} resources in this organization, the most one member "
            "may; delete a watch first (watches.delete)."
        )
