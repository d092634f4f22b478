"""Cron expressions read on an IANA time zone's wall clock, as UTC instants. Pure: no I/O, no
clock. Shared by everything that runs on a schedule (jobs, website-scan crawls).

Every datetime given must be timezone-aware (a naive one is a programming error: ValueError); every
datetime returned is in UTC. A cron expression or zone that cannot be used raises
`InvalidSchedule`, whose message is written for the person who typed it: 5 fields (minute hour
day-of-month month day-of-week; no seconds, no year, no `@daily` macros).

Cron semantics are cronsim's (https://github.com/cuu508/cronsim), which follows Debian cron:
day-of-month and day-of-week are OR-ed unless one of them starts with `*`, then AND-ed;
`L`, `LW`, `5L` and `MON#2` are understood; names (JAN-DEC, SUN-SAT) are case-insensitive.

Daylight-saving rules (exactly cronsim's, mirroring Debian cron)
---------------------------------------------------------------
A cron expression is one of two kinds, decided by its text:

1. **Fixed-time**: neither the minute nor the hour field starts with `*` (`30 2 * * *`,
   `0 9 * * MON-FRI`, `0,30 8-17 * * *`). It is matched against the local wall clock:

   - a wall time that does not exist (inside a spring-forward gap: 02:30 in Europe/Berlin on
     28 March 2027) fires once, at the first real instant after the gap (03:00 CEST = 01:00 UTC).
     Several wall times inside one gap (`0,30 2 * * *`) fire once together at that instant;
   - a wall time that occurs twice (inside a fall-back overlap: 02:30 in Europe/Berlin on
     31 October 2027) fires once, at its first occurrence (02:30 CEST = 00:30 UTC), never twice.

   So a daily fixed-time job fires exactly once every local day.

2. **Wildcard**: the minute or the hour field starts with `*` (`0 * * * *`, `*/15 * * * *`,
   `*/30 2 * * *`). It is matched against real elapsed time, reading the wall clock of each real
   instant:

   - an hourly job (`0 * * * *`) fires once per real hour: 23 times on a spring-forward day
     (02:00 does not exist) and 25 times on a fall-back day (01:00 EDT and 01:00 EST in
     America/New_York are two different real instants, one hour apart);
   - wall times inside a gap do not fire at all (`*/30 2 * * *` in America/New_York does not
     run on 14 March 2027), and wall times inside an overlap fire in each real pass
     (`*/30 1 * * *` runs four times on 7 November 2027).

   Note that "starts with `*`" is literal: `*/15 2 * * *` is a wildcard job while the
   equivalent `0-59/15 2 * * *` is a fixed-time one.

In both kinds each occurrence is a distinct UTC instant and fires exactly once.

Bounded searches
----------------
No function here loops without bound. `validate_cron` rejects an expression that matches no date
at all: it searches from 2001-01-01, and cronsim gives up after 50 years, which covers a whole
28-year cycle of the Gregorian calendar (every combination of date and weekday that exists between
1901 and 2099 occurs in 2001-2028). At run time each search looks at most about 50 years ahead
(cronsim's own limit), enough for any expression that passed validation (even a rare one such
as `0 0 * 2 MON#5`, a Monday 29 February, recurs within 40 years); when nothing is found the
answer is None. `due` searches forwards over windows growing from one hour back from now.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

MAX_CRON_LENGTH = 1000

# Validation searches from here: 2001-2028 is one whole 28-year cycle of weekdays and leap years.
_VALIDATION_START = datetime(2001, 1, 1, tzinfo=UTC)
# A search gives up after this many results that do not move forward (they never should).
_MAX_STALE = 1000

_FIELD_HELP = "minute hour day-of-month month day-of-week"
_MACROS = {
    "@YEARLY": "0 0 1 1 *",
    "@ANNUALLY": "0 0 1 1 *",
    "@MONTHLY": "0 0 1 * *",
    "@WEEKLY": "0 0 * * 0",
    "@DAILY": "0 0 * * *",
    "@MIDNIGHT": "0 0 * * *",
    "@HOURLY": "0 * * * *",
}
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)*")
# Loadable on some systems but not a place: the host's own zone, a tzdata internal, leap-second
# variants and duplicate trees.
_NOT_ZONES = frozenset({"localtime", "posixrules"})
_NOT_ZONE_PREFIXES = ("posix/", "right/")


class InvalidSchedule(ValueError):
    """A cron expression, time zone or schedule that cannot be used; the message says why."""


# --- validation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    label: str  # as the first word of a sentence
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] means low + i
    note: str = ""


_FIELDS = (
    _Field("Minute", 0, 59),
    _Field("Hour", 0, 23),
    _Field("Day-of-month", 1, 31),
    _Field("Month", 1, 12, _MONTHS),
    _Field("Day-of-week", 0, 7, _DAYS, " (0 and 7 are Sunday)"),
)


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _check_value(field: _Field, text: str) -> int:
    """One number or name of a field; its value."""
    if field.names and text.upper() in field.names:
        return field.low + field.names.index(text.upper())
    if _is_number(text):
        value = int(text)
        if not field.low <= value <= field.high:
            raise InvalidSchedule(
                f"{field.label} {value} is out of range {field.low}-{field.high}{field.note}."
            )
        return value
    if field.names:
        raise InvalidSchedule(
            f"{text!r} is not a valid {field.label.lower()}: use {field.low}-{field.high} "
            f"or {field.names[0]}-{field.names[-1]}."
        )
    raise InvalidSchedule(
        f"{text!r} is not a valid {field.label.lower()}: use a number from {field.low} to "
        f"{field.high}, a range (1-5), a step (*/15) or a list (1,15,30)."
    )


def _check_field(field: _Field, text: str) -> None:
    """The grammar cronsim accepts, field by field, with a sentence for each mistake."""
    for term in text.split(","):
        if term == "":
            raise InvalidSchedule(f"{field.label} {text!r} has an empty item in its list.")
        base, slash, step = term.partition("/")
        upper = base.upper()
        if slash and (not _is_number(step) or int(step) == 0):
            raise InvalidSchedule(
                f"The step in {term!r} ({field.label.lower()}) must be a whole number of at "
                "least 1."
            )
        if base == "*":
            continue
        if field.label == "Day-of-month" and upper in ("L", "LW"):
            continue
        if field.label == "Day-of-week" and not slash and "#" in base:
            day, _, nth = base.partition("#")
            _check_value(field, day)
            if not _is_number(nth) or not 1 <= int(nth) <= 5:
                raise InvalidSchedule(
                    f"In {term!r} (day-of-week) the number after '#' must be 1-5: the 1st to "
                    "5th such weekday of the month."
                )
            continue
        if field.label == "Day-of-week" and not slash and len(base) > 1 and upper.endswith("L"):
            if not _is_number(base[:-1]):
                raise InvalidSchedule(
                    f"In {term!r} (day-of-week) 'L' must follow a day number, e.g. '5L' for "
                    "the last Friday of the month."
                )
            _check_value(field, base[:-1])
            continue
        if "-" in base:
            first, _, last = base.partition("-")
            if _check_value(field, first) > _check_value(field, last):
                raise InvalidSchedule(
                    f"The range {base!r} ({field.label.lower()}) runs backwards; write it from "
                    "low to high."
                )
            continue
        _check_value(field, base)


@lru_cache(maxsize=1024)
def compile_cron(expression: str) -> str:
    """The normalized expression when its syntax is valid (InvalidSchedule otherwise)."""
    if len(expression) > MAX_CRON_LENGTH:
        raise InvalidSchedule(
            f"The cron expression is too long: at most {MAX_CRON_LENGTH} characters."
        )
    parts = expression.split()
    if not parts:
        raise InvalidSchedule(
            f"The cron expression is empty; it needs 5 fields ({_FIELD_HELP}), "
            "e.g. '0 9 * * MON-FRI'."
        )
    if len(parts) == 1 and parts[0].upper() in _MACROS:
        raise InvalidSchedule(
            f"Write '{parts[0]}' as the 5 fields '{_MACROS[parts[0].upper()]}' ({_FIELD_HELP})."
        )
    if len(parts) != 5:
        raise InvalidSchedule(
            f"The cron expression needs 5 fields ({_FIELD_HELP}); it has {len(parts)}."
        )
    for field, text in zip(_FIELDS, parts, strict=True):
        _check_field(field, text)
    normalized = " ".join(parts)
    try:
        CronSim(normalized, _VALIDATION_START)
    except CronSimError as error:
        if str(error) == "Bad day-of-month":
            # cronsim's only check after parsing: a day no allowed month has (30 February).
            raise InvalidSchedule(_never(normalized)) from None
        raise InvalidSchedule(f"{normalized!r} is not a valid cron expression ({error}).") from None
    return normalized


def _never(expression: str) -> str:
    return (
        f"The cron expression {expression!r} never runs: no date matches its day-of-month, "
        "month and day-of-week together."
    )


def validate_cron(expression: str) -> str:
    """The expression with its whitespace collapsed, or InvalidSchedule saying what is wrong.

    Exactly 5 fields; an expression that matches no date at all is refused too (a bounded
    search, see the module docstring).
    """
    normalized = compile_cron(expression)
    if first_after(normalized, ZoneInfo("UTC"), _VALIDATION_START) is None:
        raise InvalidSchedule(_never(normalized))
    return normalized


def validate_timezone(name: str) -> str:
    """The IANA zone name (surrounding whitespace removed), or InvalidSchedule."""
    zone(name)
    return name.strip()


@lru_cache(maxsize=512)
def zone(name: str) -> ZoneInfo:
    key = name.strip()
    unknown = InvalidSchedule(
        f"Unknown time zone {name!r}. Use an IANA time zone name such as 'Europe/Berlin', "
        "'America/New_York' or 'UTC'."
    )
    if (
        not _ZONE_NAME.fullmatch(key)
        or key in _NOT_ZONES
        or key.startswith(_NOT_ZONE_PREFIXES)
        or any(part in (".", "..") for part in key.split("/"))
    ):
        raise unknown
    try:
        return ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise unknown from None


# --- cron -------------------------------------------------------------------------------------


def aware(what: str, value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware, got {value!r}")
    return value


def forward(expression: str, zone: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """Occurrences strictly after `after`, in UTC, increasing; ends when cronsim gives up."""
    try:
        ticks = CronSim(expression, after.astimezone(zone))
    except (CronSimError, OverflowError):
        return  # unreachable for a compiled expression; nothing fires
    last = after
    stale = 0
    while True:
        try:
            instant = next(ticks).astimezone(UTC)
        except (StopIteration, OverflowError):
            return
        # In a fall-back overlap, a fixed-time search started in the second pass reports that
        # day's occurrence at its first pass, which is already behind us: skip it.
        if instant <= last:
            stale += 1
            if stale > _MAX_STALE:
                return
            continue
        stale = 0
        last = instant
        yield instant


def first_after(expression: str, zone: ZoneInfo, after: datetime) -> datetime | None:
    return next(forward(expression, zone, after), None)


def latest(
    expression: str, zone: ZoneInfo, after: datetime, upto: datetime, count: int
) -> list[datetime]:
    """The last `count` occurrences in (after, upto], newest first.

    Searched forwards (cronsim's reverse search disagrees with its forward one around some
    half-hour transitions, and the forward one is what next_run promises) over a window that
    grows eightfold from one hour back until it holds `count` or reaches `after`.
    """
    window = timedelta(hours=1)
    while True:
        start = max(after, upto - window)
        found: deque[datetime] = deque(maxlen=count)
        for instant in forward(expression, zone, start):
            if instant > upto:
                break
            found.append(instant)
        if len(found) >= count or start == after:
            return list(reversed(found))
        window *= 8


def next_cron(expression: str, timezone: str, after: datetime) -> datetime | None:
    """The first occurrence strictly after `after` (UTC), read on `timezone`'s wall clock.

    None when the expression matches nothing within about 50 years. InvalidSchedule for an
    expression or zone that cannot be read.
    """
    aware("after", after)
    return first_after(compile_cron(expression), zone(timezone), after)
