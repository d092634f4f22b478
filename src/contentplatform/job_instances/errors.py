"""What the job instances domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound


class JobInstanceNotFound(RecordNotFound):
    """There is no such job instance in this organization."""

    record = "job instance"


class InstanceNotWaiting(Conflict):
    """Only a pending instance that no run has taken can be changed or skipped."""


class InstanceNotRunnable(Conflict):
    """The instance is queued, running or completed, or its job was deleted: it cannot be
    generated now."""


class InstanceDateTaken(Conflict):
    """The job already has an instance at that date."""


class NothingToSelect(Conflict):
    """A select_existing instance found no approved draft left to take."""


class InstanceOfAnotherJob(BadRequest):
    """The instance named belongs to another job than the one named."""
