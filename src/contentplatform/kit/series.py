"""Time series: the one way every operation that answers a series cuts time (issue 38).

- **Spans**: hour, day, ISO week (Monday first) or calendar month, aligned to a time zone's
  wall clock, as UTC instants [start, end). A day is the time from one local midnight to the
  next, so it lasts 23 or 25 hours on the days the clocks change; where a zone skips midnight
  itself, its day starts at the first instant that exists. Hours are 60 minutes of real time
  from an hour of the zone's clock (its offset may be a half hour).
- **Ranges**: inclusive calendar dates in the tenant's zone (`DateRange`), checked with the
  limit named (`check_range`), and their previous period and previous year (by date, or 52
  weeks back so that weekdays line up).
- **Filling**: every span of a range gets a value: what the source counted, 0 where it counted
  nothing but existed, None (`null`) before it existed, never a 0 that claims a measure.

billing.getUsage cuts its window (UTC instants) into spans here too (credits/usage.py).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Literal, TypeVar

from contentplatform.kit.errors import BadRequest, FieldError

Granularity = Literal["hour", "day", "week", "month"]

# The bounds of a range a client asks for.
MAX_MONTHS = 24
MAX_DAYS_BY_DAY = 400

V = TypeVar("V", int, float)


@dataclass(frozen=True)
class Span:
    """One bucket: [start, end) as UTC instants."""

    start: datetime
    end: datetime

    def local_date(self, zone: tzinfo) -> date:
        """The zone's calendar date the span starts on (a day's, a week's Monday, a month's
        first)."""
        return self.start.astimezone(zone).date()


def midnight(day: date, zone: tzinfo) -> datetime:
    """The first instant of `day` in `zone`, in UTC. Where the zone skips midnight (a clock
    change at 00:00), zoneinfo reads the missing 00:00 with the offset before the change, which
    is the first instant the day has."""
    return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)


def _first_day(day: date, granularity: Granularity) -> date:
    if granularity == "week":
        return day - timedelta(days=day.weekday())
    if granularity == "month":
        return day.replace(day=1)
    return day


def _next_day(first: date, granularity: Granularity) -> date:
    if granularity == "week":
        return first + timedelta(days=7)
    if granularity == "month":
        return add_months(first, 1)
    return first + timedelta(days=1)


def floor(moment: datetime, granularity: Granularity, zone: tzinfo = UTC) -> datetime:
    """The start of the span of `granularity` that holds `moment` (aware), in UTC."""
    if granularity == "hour":
        offset = moment.astimezone(zone).utcoffset() or timedelta()
        on_the_clock = (moment.astimezone(UTC) + offset).replace(minute=0, second=0, microsecond=0)
        return on_the_clock - offset
    return midnight(_first_day(moment.astimezone(zone).date(), granularity), zone)


def spans(
    start: datetime, end: datetime, granularity: Granularity, zone: tzinfo = UTC
) -> list[Span]:
    """Every span from the one holding `start` to the last that begins before `end`. A day a
    zone skipped altogether (Samoa's 30 December 2011) has no span."""
    found: list[Span] = []
    if granularity == "hour":
        cursor = floor(start, granularity, zone)
        while cursor < end:
            found.append(Span(cursor, cursor + timedelta(hours=1)))
            cursor += timedelta(hours=1)
        return found
    day = _first_day(start.astimezone(zone).date(), granularity)
    while (begins := midnight(day, zone)) < end:
        day = _next_day(day, granularity)
        ends = midnight(day, zone)
        if ends > begins:
            found.append(Span(begins, ends))
    return found


class Slots:
    """Which of `spans` (ascending and contiguous, as `spans()` cuts them) holds a moment: a
    bisect over their starts, since a report places every row of its period."""

    def __init__(self, over: Sequence[Span]) -> None:
        self._starts = [span.start for span in over]
        self._end = over[-1].end if over else None

    def index(self, moment: datetime) -> int | None:
        """The index of the span holding `moment`, None when none does."""
        if self._end is None or moment >= self._end:
            return None
        found = bisect_right(self._starts, moment) - 1
        return found if found >= 0 else None


def add_months(day: date, months: int) -> date:
    """`day` moved by whole months, on the month's last day where it has no such day."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = (date(year + (month + 1) // 12, (month + 1) % 12 + 1, 1) - timedelta(days=1)).day
    return date(year, month + 1, min(day.day, last))


@dataclass(frozen=True)
class DateRange:
    """Calendar dates from `first` to `last`, both included, in a time zone."""

    first: date
    last: date

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    def instants(self, zone: tzinfo) -> tuple[datetime, datetime]:
        """[start, end) in UTC: `first`'s local midnight to the one after `last`."""
        return midnight(self.first, zone), midnight(self.last + timedelta(days=1), zone)

    def spans(self, granularity: Granularity, zone: tzinfo) -> list[Span]:
        start, end = self.instants(zone)
        return spans(start, end, granularity, zone)

    def previous_period(self) -> DateRange:
        """As many days, ending the day before this range begins."""
        last = self.first - timedelta(days=1)
        return DateRange(last - timedelta(days=self.days - 1), last)

    def previous_year(self, *, same_weekday: bool = False) -> DateRange:
        """The same dates a year before (29 February on the 28th); with `same_weekday`, 52 weeks
        (364 days) before, so each day lines up with the same day of the week."""
        if same_weekday:
            return DateRange(self.first - timedelta(weeks=52), self.last - timedelta(weeks=52))
        return DateRange(add_months(self.first, -12), add_months(self.last, -12))


def check_range(
    first: date, last: date, granularity: Granularity, *, field: str = "range"
) -> DateRange:
    """The range a client asked for, or 400 naming the limit it passes: an end before the start,
    more than MAX_MONTHS months, day buckets over more than MAX_DAYS_BY_DAY days (hours are not
    a range's granularity)."""
    if last < first:
        problem = f"The range ends ({last}) before it starts ({first})."
    elif first.year > date.max.year - MAX_MONTHS // 12 - 1:
        problem = f"A range must start before the year {date.max.year - MAX_MONTHS // 12}."
    elif last >= add_months(first, MAX_MONTHS):
        problem = f"A range covers at most {MAX_MONTHS} months; {first} to {last} is longer."
    elif granularity == "hour":
        problem = "A range of dates is cut into days, weeks or months, not hours."
    elif granularity == "day" and (last - first).days + 1 > MAX_DAYS_BY_DAY:
        problem = (
            f"Day buckets cover at most {MAX_DAYS_BY_DAY} days; ask for weeks or months over "
            f"{(last - first).days + 1} days."
        )
    else:
        return DateRange(first, last)
    raise BadRequest(problem, errors=[FieldError(path=field, message=problem)])


def fill(
    counted: Mapping[datetime, V], over: list[Span], *, since: datetime | None, zero: V
) -> list[V | None]:
    """A value for each span of `over`: what `counted` (by span start) holds, `zero` where the
    source existed in the span (it began before the span ended) but counted nothing, None
    where it did not exist yet. `since` None: the source never existed, every value is None."""
    return [
        counted.get(span.start, zero) if since is not None and since < span.end else None
        for span in over
    ]
