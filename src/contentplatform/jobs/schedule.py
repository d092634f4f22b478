"""When a job runs: cron expressions and date lists as UTC instants. Pure: no I/O, no clock.

Every datetime given must be timezone-aware (a naive one is a programming error: ValueError); every
datetime returned is in UTC. A schedule that cannot be used raises `InvalidSchedule`, whose message
is written for the person who typed the schedule.

Job types
---------
- `recurring`: a 5-field cron expression (minute hour day-of-month month day-of-week; no seconds,
  no year, no `@daily` macros) read on the wall clock of the tenant's IANA time zone. Its
  `scheduled_dates` are ignored.
- `scheduled`: a list of instants; duplicates count once.
- `one_off`: like `scheduled` with at most one date; without a date it never runs by itself (only
  when triggered by hand).

Cron expressions, time zones and their daylight-saving rules are kit/cron.py's.

Downtime (`due`)
----------------
When the scheduler finds a job whose stored `next_run_at` has passed, every occurrence from that
`next_run_at` (inclusive; it is what was planned) up to now (inclusive) was missed. Only the latest
one runs; the earlier ones are reported as skipped, at most `MAX_SKIPPED` of them (the most recent
ones; `Due.skipped_truncated` says when older ones were left out). The new `next_run_at` is the
first occurrence strictly after now.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from contentplatform.kit import cron

# Re-exported: what jobs' callers read of a schedule.
from contentplatform.kit.cron import InvalidSchedule as InvalidSchedule
from contentplatform.kit.cron import next_cron as next_cron
from contentplatform.kit.cron import validate_cron as validate_cron
from contentplatform.kit.cron import validate_timezone as validate_timezone

JobType = Literal["one_off", "recurring", "scheduled"]

MAX_SKIPPED = 100  # the most missed occurrences `due` lists as skipped
DEFAULT_LIMIT = 10_000
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class ScheduleSpec:
    """The parts of a job that say when it runs."""

    job_type: JobType
    cron_expression: str | None = None
    scheduled_dates: tuple[datetime, ...] = ()


@dataclass(frozen=True)
class Due:
    """What the scheduler does with a job now.

    `run_at`: the occurrence to run now (None: nothing is due). `skipped`: earlier missed
    occurrences to record as skipped, oldest first, at most MAX_SKIPPED. `next_run_at`: the next
    occurrence strictly after now (None: nothing left). `skipped_truncated`: older missed
    occurrences exist beyond those listed.
    """

    run_at: datetime | None
    skipped: list[datetime]
    next_run_at: datetime | None
    skipped_truncated: bool = False


# --- job schedules ----------------------------------------------------------------------------


def _cron_of(job: ScheduleSpec) -> str:
    if not job.cron_expression:
        raise InvalidSchedule("A recurring job needs a cron expression.")
    return cron.compile_cron(job.cron_expression)


def _dates_of(job: ScheduleSpec) -> list[datetime]:
    """The job's dates in UTC, sorted, each once."""
    dates = sorted({cron.aware("scheduled date", d).astimezone(UTC) for d in job.scheduled_dates})
    if job.job_type == "one_off" and len(dates) > 1:
        raise InvalidSchedule("A one-off job runs at most once: give at most one date.")
    return dates


def occurrences(
    job: ScheduleSpec,
    timezone: str,
    start: datetime,
    end: datetime,
    limit: int = DEFAULT_LIMIT,
) -> list[datetime]:
    """Planned occurrences in [start, end): UTC, sorted, unique; the first `limit` of them."""
    cron.aware("start", start)
    cron.aware("end", end)
    if limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    zone = cron.zone(timezone)
    if job.job_type == "recurring":
        found: list[datetime] = []
        if end <= start or limit == 0:
            _cron_of(job)
            return found
        for instant in cron.forward(_cron_of(job), zone, start - _MICROSECOND):
            if instant >= end or len(found) >= limit:
                break
            found.append(instant)
        return found
    return [d for d in _dates_of(job) if start <= d < end][:limit]


def next_run(job: ScheduleSpec, timezone: str, after: datetime) -> datetime | None:
    """The next occurrence strictly after `after` (UTC); None when nothing is left."""
    cron.aware("after", after)
    zone = cron.zone(timezone)
    if job.job_type == "recurring":
        return cron.first_after(_cron_of(job), zone, after)
    return next((d for d in _dates_of(job) if d > after), None)


def due(job: ScheduleSpec, timezone: str, next_run_at: datetime, now: datetime) -> Due:
    """What to do with a job whose stored next run is `next_run_at`, at `now`.

    Not yet due (`next_run_at` > now): nothing runs, nothing is skipped, next_run_at stays.
    Otherwise the missed occurrences are `next_run_at` itself and every occurrence after it up
    to `now` inclusive: the latest runs now (coalescing after downtime), the earlier ones are
    skipped (at most MAX_SKIPPED, the most recent), and next_run_at moves strictly after now.
    """
    cron.aware("next_run_at", next_run_at)
    cron.aware("now", now)
    planned = next_run_at.astimezone(UTC)
    zone = cron.zone(timezone)
    if planned > now:
        if job.job_type == "recurring":
            _cron_of(job)
        else:
            _dates_of(job)
        return Due(run_at=None, skipped=[], next_run_at=planned)
    # Newest first: up to MAX_SKIPPED + 2 occurrences in (planned, now], then planned itself;
    # anything beyond MAX_SKIPPED + 1 only tells that the list was cut.
    wanted = MAX_SKIPPED + 2
    if job.job_type == "recurring":
        newest = cron.latest(_cron_of(job), zone, planned, now, wanted)
    else:
        newest = [d for d in reversed(_dates_of(job)) if planned < d <= now][:wanted]
    newest.append(planned)
    kept = newest[: MAX_SKIPPED + 1]
    return Due(
        run_at=kept[0],
        skipped=sorted(kept[1:]),
        next_run_at=next_run(job, timezone, now),
        skipped_truncated=len(newest) > len(kept),
    )
