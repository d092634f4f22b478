"""What the jobs domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound


class JobNotFound(RecordNotFound):
    """There is no such job in this organization (deleted, or another organization's)."""

    record = "job"


class IllegalJobTransition(Conflict):
    """The job's status does not allow this (pause: active, processing or error; resume:
    paused or error)."""


class JobBusy(Conflict):
    """A run of the job is still in flight: one run at a time per job."""


class BadSchedule(BadRequest):
    """The schedule does not fit the job type (a recurring job needs a valid cronExpression, a
    scheduled one dates, a one-off at most one date), a manual job has no topic, or topicSource
    is not available."""


class UnknownTimezone(BadRequest):
    """The time zone is not an IANA zone name."""


class CalendarWindowRefused(BadRequest):
    """The calendar window ends before it starts or spans more days than allowed."""


class NoTopic(BadRequest):
    """The job has nothing to write about: no topics, and no ready primary knowledge document
    for topicSource knowledge."""
