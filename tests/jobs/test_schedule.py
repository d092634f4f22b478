"""The pure schedule module: cron and time zone validation, DST, windows, date lists, downtime."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from contentplatform.jobs.schedule import (
    MAX_SKIPPED,
    Due,
    InvalidSchedule,
    ScheduleSpec,
    due,
    next_cron,
    next_run,
    occurrences,
    validate_cron,
    validate_timezone,
)

BERLIN = "Europe/Berlin"
NEW_YORK = "America/New_York"
US = timedelta(microseconds=1)


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def local(zone: str, year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(zone))


def recurring(expression: str) -> ScheduleSpec:
    return ScheduleSpec(job_type="recurring", cron_expression=expression)


def dated(*dates: datetime, job_type: str = "scheduled") -> ScheduleSpec:
    return ScheduleSpec(job_type=job_type, scheduled_dates=dates)  # type: ignore[arg-type]


def per_local_day(instants: list[datetime], zone: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for instant in instants:
        day = instant.astimezone(ZoneInfo(zone)).date().isoformat()
        counts[day] = counts.get(day, 0) + 1
    return counts


# --- cron validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "* * * * *",
        "*/15 * * * *",
        "0 9 * * MON-FRI",
        "0 9 * * mon-fri",
        "30 8-18/2 * * 1-5",
        "5,35 * * * *",
        "0 0 1 JAN *",
        "0 0 1 jan,jul *",
        "0 0 * * 0",
        "0 0 * * 7",
        "0 0 L * *",
        "0 0 LW * *",
        "0 12 * * 5L",
        "0 6 * * MON#1",
        "59 23 31 12 SUN",
        "0 0 29 2 *",
        "0 0 * 2 MON#5",  # Feb 29 on a Monday: rare, but real
    ],
)
def test_valid_cron_expressions_are_accepted(expression: str) -> None:
    assert validate_cron(expression) == expression


def test_validate_cron_collapses_whitespace() -> None:
    assert validate_cron("  0   9 *\t* 1-5 ") == "0 9 * * 1-5"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "* * * *",
            "The cron expression needs 5 fields (minute hour day-of-month month day-of-week); "
            "it has 4.",
        ),
        (
            "0 * * * * *",
            "The cron expression needs 5 fields (minute hour day-of-month month day-of-week); "
            "it has 6.",
        ),
        ("0 0 1 1 * 2027", "it has 6."),
        ("", "The cron expression is empty"),
        ("   ", "The cron expression is empty"),
        ("@daily", "Write '@daily' as the 5 fields '0 0 * * *'"),
        ("61 * * * *", "Minute 61 is out of range 0-59."),
        ("0 24 * * *", "Hour 24 is out of range 0-23."),
        ("0 0 0 * *", "Day-of-month 0 is out of range 1-31."),
        ("0 0 32 * *", "Day-of-month 32 is out of range 1-31."),
        ("0 0 * 13 *", "Month 13 is out of range 1-12."),
        ("0 0 * * 8", "Day-of-week 8 is out of range 0-7 (0 and 7 are Sunday)."),
        ("0 0-65 * * *", "Hour 65 is out of range 0-23."),
        ("abc * * * *", "'abc' is not a valid minute"),
        ("0 0 ? * *", "'?' is not a valid day-of-month"),
        ("0 0 * FOO *", "'FOO' is not a valid month: use 1-12 or JAN-DEC."),
        ("0 0 * * FUNDAY", "'FUNDAY' is not a valid day-of-week: use 0-7 or SUN-SAT."),
        ("*/0 * * * *", "The step in '*/0' (minute) must be a whole number of at least 1."),
        ("*/x * * * *", "The step in '*/x' (minute)"),
        ("0 17-9 * * *", "The range '17-9' (hour) runs backwards"),
        ("1,,2 * * * *", "Minute '1,,2' has an empty item in its list."),
        ("0 0 * * MON#6", "the number after '#' must be 1-5"),
        ("0 0 * * FRIL", "'L' must follow a day number"),
        ("0 0 30 2 *", "The cron expression '0 0 30 2 *' never runs"),
        ("0 0 31 4,6,9,11 *", "never runs"),
        # Passes every field check and cronsim's own; only the bounded search finds that the
        # 1st of a month is never its 5th Monday.
        ("0 0 */31 * MON#5", "The cron expression '0 0 */31 * MON#5' never runs"),
    ],
)
def test_invalid_cron_expressions_say_why(expression: str, message: str) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        validate_cron(expression)
    assert message in str(caught.value)


def test_invalid_schedule_is_a_value_error() -> None:
    assert issubclass(InvalidSchedule, ValueError)


def test_runtime_search_is_bounded_and_finds_rare_expressions() -> None:
    # Validation refuses it, but at run time an expression that never fires is simply None.
    assert next_cron("0 0 */31 * MON#5", "UTC", utc(2027, 1, 1)) is None
    assert next_run(recurring("0 0 */31 * MON#5"), "UTC", utc(2027, 1, 1)) is None
    # The next Monday 29 February after 2027 is in 2044.
    assert next_cron("0 0 * 2 MON#5", "UTC", utc(2027, 1, 1)) == utc(2044, 2, 29)


def test_runtime_refuses_an_unreadable_expression() -> None:
    with pytest.raises(InvalidSchedule, match="it has 6"):
        next_cron("0 0 0 * * *", "UTC", utc(2027, 1, 1))


# --- time zones -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"])
def test_valid_time_zones(name: str) -> None:
    assert validate_timezone(name) == name


def test_time_zone_is_stripped() -> None:
    assert validate_timezone(" Asia/Tokyo ") == "Asia/Tokyo"


@pytest.mark.parametrize(
    "name",
    [
        "",
        "   ",
        "Mars/Olympus",
        "../etc",
        "../etc/passwd",
        "/etc/localtime",
        "localtime",
        "posixrules",
        "right/UTC",
        "posix/Europe/Berlin",
        "Europe/../UTC",
        "Europe/Berlin\x00",
        "Europe Berlin",
    ],
)
def test_unknown_time_zones_are_refused(name: str) -> None:
    with pytest.raises(InvalidSchedule, match=r"^Unknown time zone "):
        validate_timezone(name)


def test_unknown_time_zone_message() -> None:
    with pytest.raises(InvalidSchedule) as caught:
        validate_timezone("Mars/Olympus")
    assert str(caught.value).startswith("Unknown time zone 'Mars/Olympus'.")


def test_schedules_refuse_an_unknown_zone() -> None:
    with pytest.raises(InvalidSchedule, match="Unknown time zone"):
        next_cron("0 9 * * *", "Mars/Olympus", utc(2027, 1, 1))
    with pytest.raises(InvalidSchedule, match="Unknown time zone"):
        occurrences(recurring("0 9 * * *"), "Nowhere", utc(2027, 1, 1), utc(2027, 1, 2))


def test_naive_datetimes_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        next_cron("0 9 * * *", "UTC", datetime(2027, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        occurrences(recurring("0 9 * * *"), "UTC", datetime(2027, 1, 1), utc(2027, 1, 2))
    with pytest.raises(ValueError, match="timezone-aware"):
        next_run(dated(datetime(2027, 1, 1)), "UTC", utc(2026, 1, 1))


# --- daylight saving: a daily 02:30 job in Europe/Berlin --------------------------------------


def test_berlin_daily_0230_across_spring_forward() -> None:
    # 28 March 2027, 02:00 CET -> 03:00 CEST: 02:30 does not exist and fires at 03:00 CEST.
    found = occurrences(recurring("30 2 * * *"), BERLIN, utc(2027, 3, 26), utc(2027, 3, 31))
    assert found == [
        utc(2027, 3, 26, 1, 30),  # 02:30 CET
        utc(2027, 3, 27, 1, 30),  # 02:30 CET, the day before
        utc(2027, 3, 28, 1, 0),  # the day of: 03:00 CEST, first instant after the gap
        utc(2027, 3, 29, 0, 30),  # 02:30 CEST, the day after
        utc(2027, 3, 30, 0, 30),
    ]
    assert found[2] == local(BERLIN, 2027, 3, 28, 3, 0)
    assert set(per_local_day(found, BERLIN).values()) == {1}


def test_berlin_daily_0230_across_fall_back() -> None:
    # 31 October 2027, 03:00 CEST -> 02:00 CET: 02:30 happens twice and fires only the first time.
    found = occurrences(recurring("30 2 * * *"), BERLIN, utc(2027, 10, 29), utc(2027, 11, 3))
    assert found == [
        utc(2027, 10, 29, 0, 30),  # 02:30 CEST
        utc(2027, 10, 30, 0, 30),  # 02:30 CEST, the day before
        utc(2027, 10, 31, 0, 30),  # the day of: the first 02:30 (CEST), not 01:30 UTC as well
        utc(2027, 11, 1, 1, 30),  # 02:30 CET, the day after
        utc(2027, 11, 2, 1, 30),
    ]
    assert set(per_local_day(found, BERLIN).values()) == {1}


def test_berlin_next_cron_step_by_step_matches_the_window() -> None:
    after = utc(2027, 3, 27, 12)
    assert next_cron("30 2 * * *", BERLIN, after) == utc(2027, 3, 28, 1, 0)
    assert next_cron("30 2 * * *", BERLIN, utc(2027, 3, 28, 1, 0)) == utc(2027, 3, 29, 0, 30)
    after = utc(2027, 10, 30, 12)
    assert next_cron("30 2 * * *", BERLIN, after) == utc(2027, 10, 31, 0, 30)
    # From inside the second pass of the repeated hour, that day's 02:30 is already behind.
    assert next_cron("30 2 * * *", BERLIN, utc(2027, 10, 31, 0, 30)) == utc(2027, 11, 1, 1, 30)
    assert next_cron("30 2 * * *", BERLIN, utc(2027, 10, 31, 1, 10)) == utc(2027, 11, 1, 1, 30)


def test_several_wall_times_in_one_gap_fire_once_together() -> None:
    found = occurrences(recurring("0,30 2 * * *"), BERLIN, utc(2027, 3, 27), utc(2027, 3, 29))
    assert found == [
        utc(2027, 3, 27, 1, 0),
        utc(2027, 3, 27, 1, 30),
        utc(2027, 3, 28, 1, 0),  # 02:00 and 02:30 both fall in the gap: one run at 03:00 CEST
    ]


# --- daylight saving: an hourly job in America/New_York ---------------------------------------


def test_new_york_hourly_across_spring_forward() -> None:
    # 14 March 2027, 02:00 EST -> 03:00 EDT: the 02:00 hour does not exist.
    found = occurrences(recurring("0 * * * *"), NEW_YORK, utc(2027, 3, 14, 4), utc(2027, 3, 14, 9))
    assert found == [
        utc(2027, 3, 14, 4),  # 23:00 EST (13 March)
        utc(2027, 3, 14, 5),  # 00:00 EST
        utc(2027, 3, 14, 6),  # 01:00 EST
        utc(2027, 3, 14, 7),  # 03:00 EDT: one real hour after 01:00 EST
        utc(2027, 3, 14, 8),  # 04:00 EDT
    ]
    days = occurrences(
        recurring("0 * * * *"),
        NEW_YORK,
        local(NEW_YORK, 2027, 3, 13),
        local(NEW_YORK, 2027, 3, 16),
    )
    assert per_local_day(days, NEW_YORK) == {"2027-03-13": 24, "2027-03-14": 23, "2027-03-15": 24}
    assert all(b - a == timedelta(hours=1) for a, b in pairwise(days))


def test_new_york_hourly_across_fall_back() -> None:
    # 7 November 2027, 02:00 EDT -> 01:00 EST: the 01:00 hour happens twice, in two real hours,
    # and the job fires in each.
    found = occurrences(recurring("0 * * * *"), NEW_YORK, utc(2027, 11, 7, 3), utc(2027, 11, 7, 9))
    assert found == [
        utc(2027, 11, 7, 3),  # 23:00 EDT (6 November)
        utc(2027, 11, 7, 4),  # 00:00 EDT
        utc(2027, 11, 7, 5),  # 01:00 EDT
        utc(2027, 11, 7, 6),  # 01:00 EST, the second 01:00
        utc(2027, 11, 7, 7),  # 02:00 EST
        utc(2027, 11, 7, 8),  # 03:00 EST
    ]
    days = occurrences(
        recurring("0 * * * *"),
        NEW_YORK,
        local(NEW_YORK, 2027, 11, 6),
        local(NEW_YORK, 2027, 11, 9),
    )
    assert per_local_day(days, NEW_YORK) == {"2027-11-06": 24, "2027-11-07": 25, "2027-11-08": 24}
    assert all(b - a == timedelta(hours=1) for a, b in pairwise(days))


def test_wildcard_and_fixed_jobs_in_new_york_repeated_and_skipped_hours() -> None:
    # Fixed-time (no '*' in minute or hour): the repeated 01:30 fires once, the first time.
    fixed = occurrences(recurring("30 1 * * *"), NEW_YORK, utc(2027, 11, 6), utc(2027, 11, 9))
    assert fixed == [utc(2027, 11, 6, 5, 30), utc(2027, 11, 7, 5, 30), utc(2027, 11, 8, 6, 30)]
    # Wildcard minute: follows real time, so each pass of the repeated hour fires...
    window = (utc(2027, 11, 7, 4), utc(2027, 11, 7, 8))
    assert occurrences(recurring("*/30 1 * * *"), NEW_YORK, *window) == [
        utc(2027, 11, 7, 5, 0),
        utc(2027, 11, 7, 5, 30),
        utc(2027, 11, 7, 6, 0),
        utc(2027, 11, 7, 6, 30),
    ]
    # ...and a skipped hour does not fire at all.
    window = (local(NEW_YORK, 2027, 3, 13), local(NEW_YORK, 2027, 3, 16))
    assert occurrences(recurring("*/30 2 * * *"), NEW_YORK, *window) == [
        utc(2027, 3, 13, 7, 0),
        utc(2027, 3, 13, 7, 30),
        utc(2027, 3, 15, 6, 0),
        utc(2027, 3, 15, 6, 30),
    ]


@pytest.mark.parametrize(
    ("expression", "zone", "start", "end"),
    [
        ("30 2 * * *", BERLIN, utc(2027, 3, 20), utc(2027, 4, 5)),
        ("0 * * * *", BERLIN, utc(2027, 10, 29), utc(2027, 11, 2)),
        ("0 * * * *", NEW_YORK, utc(2027, 3, 12), utc(2027, 3, 16)),
        ("*/15 1 * * *", NEW_YORK, utc(2027, 11, 1), utc(2027, 11, 14)),
        ("0,30 2,3 * * *", BERLIN, utc(2027, 3, 25), utc(2027, 4, 1)),
        ("*/15 2 * * *", "Australia/Lord_Howe", utc(2027, 3, 30), utc(2027, 4, 8)),
    ],
)
def test_due_and_next_run_agree_with_occurrences_across_dst(
    expression: str, zone: str, start: datetime, end: datetime
) -> None:
    spec = recurring(expression)
    planned = occurrences(spec, zone, start, end)
    assert planned == sorted(set(planned))
    assert 0 < len(planned) <= MAX_SKIPPED + 1
    # Step by step, each next run is the next planned occurrence.
    chain = [next_run(spec, zone, start - US)]
    while chain[-1] is not None and chain[-1] < planned[-1]:
        chain.append(next_run(spec, zone, chain[-1]))
    assert chain == planned
    # After downtime across the whole window: the latest runs, all earlier ones are skipped.
    result = due(spec, zone, planned[0], end - US)
    assert [*result.skipped, result.run_at] == planned
    assert result.next_run_at == next_run(spec, zone, end - US)


# --- next_cron and occurrences ----------------------------------------------------------------


def test_next_cron_is_strictly_after() -> None:
    assert next_cron("0 9 * * *", "UTC", utc(2027, 6, 1, 9)) == utc(2027, 6, 2, 9)
    assert next_cron("0 9 * * *", "UTC", utc(2027, 6, 1, 9) - US) == utc(2027, 6, 1, 9)
    assert next_cron("0 9 * * *", "UTC", utc(2027, 6, 1, 8, 59, 59)) == utc(2027, 6, 1, 9)


def test_next_cron_reads_the_zone_and_returns_utc() -> None:
    after = datetime(2027, 6, 1, 10, tzinfo=ZoneInfo("Asia/Tokyo"))  # 01:00 UTC
    found = next_cron("0 9 * * MON-FRI", BERLIN, after)
    assert found == utc(2027, 6, 1, 7)  # 09:00 CEST on Tuesday 1 June
    assert found is not None and found.tzinfo is UTC


def test_occurrence_window_includes_start_and_excludes_end() -> None:
    spec = recurring("0 9 * * *")
    assert occurrences(spec, "UTC", utc(2027, 6, 1, 9), utc(2027, 6, 3, 9)) == [
        utc(2027, 6, 1, 9),
        utc(2027, 6, 2, 9),
    ]
    assert occurrences(spec, "UTC", utc(2027, 6, 1, 9) + US, utc(2027, 6, 3, 9) + US) == [
        utc(2027, 6, 2, 9),
        utc(2027, 6, 3, 9),
    ]


def test_occurrence_limit_and_empty_windows() -> None:
    spec = recurring("*/5 * * * *")
    found = occurrences(spec, "UTC", utc(2027, 1, 1), utc(2028, 1, 1), limit=3)
    assert found == [utc(2027, 1, 1, 0, 0), utc(2027, 1, 1, 0, 5), utc(2027, 1, 1, 0, 10)]
    assert len(occurrences(spec, "UTC", utc(2027, 1, 1), utc(2028, 1, 1))) == 10_000
    assert occurrences(spec, "UTC", utc(2027, 1, 1), utc(2027, 1, 1)) == []
    assert occurrences(spec, "UTC", utc(2027, 1, 2), utc(2027, 1, 1)) == []
    assert occurrences(spec, "UTC", utc(2027, 1, 1), utc(2028, 1, 1), limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        occurrences(spec, "UTC", utc(2027, 1, 1), utc(2028, 1, 1), limit=-1)


def test_recurring_job_needs_an_expression() -> None:
    with pytest.raises(InvalidSchedule, match="needs a cron expression"):
        occurrences(recurring(""), "UTC", utc(2027, 1, 1), utc(2027, 1, 2))
    with pytest.raises(InvalidSchedule, match="needs a cron expression"):
        next_run(ScheduleSpec("recurring"), "UTC", utc(2027, 1, 1))


# --- date lists and one-off jobs --------------------------------------------------------------


def test_scheduled_dates_are_sorted_unique_and_windowed() -> None:
    spec = dated(
        utc(2027, 5, 3, 9),
        utc(2027, 5, 1, 9),
        local(BERLIN, 2027, 5, 3, 11),  # the same instant as 09:00 UTC
        utc(2027, 4, 30, 23, 59),  # before the window
        utc(2027, 5, 10),  # at the (exclusive) end
        utc(2027, 5, 2, 12),
    )
    found = occurrences(spec, BERLIN, utc(2027, 5, 1), utc(2027, 5, 10))
    assert found == [utc(2027, 5, 1, 9), utc(2027, 5, 2, 12), utc(2027, 5, 3, 9)]
    assert all(d.tzinfo is UTC for d in found)
    assert occurrences(spec, BERLIN, utc(2027, 5, 1), utc(2027, 5, 10), limit=2) == found[:2]


def test_next_run_of_a_date_list() -> None:
    spec = dated(utc(2027, 5, 1, 9), utc(2027, 5, 3, 9))
    assert next_run(spec, "UTC", utc(2027, 1, 1)) == utc(2027, 5, 1, 9)
    assert next_run(spec, "UTC", utc(2027, 5, 1, 9)) == utc(2027, 5, 3, 9)
    assert next_run(spec, "UTC", utc(2027, 5, 3, 9)) is None  # exhausted
    assert next_run(dated(), "UTC", utc(2027, 1, 1)) is None


def test_one_off_jobs() -> None:
    once = dated(utc(2027, 7, 1, 8), job_type="one_off")
    assert occurrences(once, "UTC", utc(2027, 7, 1), utc(2027, 7, 2)) == [utc(2027, 7, 1, 8)]
    assert occurrences(once, "UTC", utc(2027, 7, 2), utc(2027, 7, 3)) == []
    assert next_run(once, "UTC", utc(2027, 6, 1)) == utc(2027, 7, 1, 8)
    assert next_run(once, "UTC", utc(2027, 7, 1, 8)) is None
    # Without a date it only runs when triggered.
    manual = ScheduleSpec("one_off")
    assert next_run(manual, "UTC", utc(2027, 1, 1)) is None
    assert occurrences(manual, "UTC", utc(2027, 1, 1), utc(2028, 1, 1)) == []
    twice = dated(utc(2027, 7, 1), utc(2027, 7, 2), job_type="one_off")
    with pytest.raises(InvalidSchedule, match="at most once"):
        next_run(twice, "UTC", utc(2027, 1, 1))


# --- due: what the scheduler runs now ---------------------------------------------------------


def test_due_coalesces_three_days_of_downtime() -> None:
    spec = recurring("0 9 * * *")  # 09:00 in Berlin = 07:00 UTC in June
    result = due(spec, BERLIN, next_run_at=utc(2027, 6, 1, 7), now=utc(2027, 6, 3, 12))
    assert result == Due(
        run_at=utc(2027, 6, 3, 7),
        skipped=[utc(2027, 6, 1, 7), utc(2027, 6, 2, 7)],
        next_run_at=utc(2027, 6, 4, 7),
        skipped_truncated=False,
    )


def test_due_on_time_runs_just_that_occurrence() -> None:
    spec = recurring("0 9 * * *")
    result = due(spec, "UTC", next_run_at=utc(2027, 6, 1, 9), now=utc(2027, 6, 1, 9))
    assert result == Due(run_at=utc(2027, 6, 1, 9), skipped=[], next_run_at=utc(2027, 6, 2, 9))
    result = due(spec, "UTC", next_run_at=utc(2027, 6, 1, 9), now=utc(2027, 6, 1, 9, 0, 3))
    assert result.run_at == utc(2027, 6, 1, 9)
    assert result.skipped == []


def test_due_not_yet() -> None:
    spec = recurring("0 9 * * *")
    result = due(spec, "UTC", next_run_at=utc(2027, 6, 2, 9), now=utc(2027, 6, 1, 12))
    assert result == Due(run_at=None, skipped=[], next_run_at=utc(2027, 6, 2, 9))


def test_due_caps_the_skipped_list() -> None:
    spec = recurring("* * * * *")
    result = due(spec, "UTC", next_run_at=utc(2027, 6, 1), now=utc(2027, 6, 2, 0, 0, 30))
    assert result.run_at == utc(2027, 6, 2)
    assert len(result.skipped) == MAX_SKIPPED
    assert result.skipped == [utc(2027, 6, 2) - timedelta(minutes=n) for n in range(100, 0, -1)]
    assert result.skipped_truncated
    assert result.next_run_at == utc(2027, 6, 2, 0, 1)


def test_due_for_a_date_list() -> None:
    spec = dated(utc(2027, 5, 1, 9), utc(2027, 5, 2, 9), utc(2027, 5, 3, 9), utc(2027, 5, 9, 9))
    result = due(spec, "UTC", next_run_at=utc(2027, 5, 1, 9), now=utc(2027, 5, 4))
    assert result == Due(
        run_at=utc(2027, 5, 3, 9),
        skipped=[utc(2027, 5, 1, 9), utc(2027, 5, 2, 9)],
        next_run_at=utc(2027, 5, 9, 9),
    )
    last = due(spec, "UTC", next_run_at=utc(2027, 5, 9, 9), now=utc(2027, 5, 9, 9, 0, 5))
    assert last == Due(run_at=utc(2027, 5, 9, 9), skipped=[], next_run_at=None)


def test_due_returns_utc() -> None:
    spec = recurring("0 9 * * *")
    planned = local(BERLIN, 2027, 6, 1, 9)
    result = due(spec, BERLIN, next_run_at=planned, now=local(BERLIN, 2027, 6, 2, 10))
    assert result.run_at == utc(2027, 6, 2, 7)
    assert result.skipped == [utc(2027, 6, 1, 7)]
    for value in [result.run_at, *result.skipped, result.next_run_at]:
        assert value is not None and value.tzinfo is UTC
