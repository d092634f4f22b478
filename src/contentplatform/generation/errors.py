"""What the generation domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound, TooManyRequests


class RunNotFound(RecordNotFound):
    """There is no such generation run in this organization."""

    record = "generation run"


class IdempotencyKeyReused(Conflict):
    """The idempotencyKey was already used for a different request."""


class RunFinished(Conflict):
    """The run has ended already: only a queued, running or waiting run can be cancelled."""


class TooManyTestRuns(TooManyRequests):
    """The organization already has 3 workflow test runs going; start this one when one ends."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, retry_after=30)


class UnknownStep(BadRequest):
    """`stopAfterStep` names no step of the definition tested."""


class RunNotRetryable(Conflict):
    """Only a failed or cancelled run can be retried, while its draft is still rejected by it
    (not edited, regenerated or deleted since)."""


class SectionNotFound(BadRequest):
    """A section asked for is not a heading (`<h2>` anchor) of the draft's content."""
