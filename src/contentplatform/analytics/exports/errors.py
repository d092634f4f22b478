"""The errors of analytics exports."""

from __future__ import annotations

from contentplatform.kit.errors import Forbidden, RecordNotFound, TooManyRequests


class ExportNotFound(RecordNotFound):
    """There is no such export in this organization."""

    record = "export"


class TooManyActiveExports(TooManyRequests):
    """The organization already has 5 exports queued or running; create this one when one
    ends."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, retry_after=30)


class NotYourExport(Forbidden):
    """A member deletes only the exports they created; an admin deletes any."""
