"""The time-series kit (kit/series.py): buckets that stay right across clock changes, inclusive
date ranges in a zone, their comparisons, their limits, and filling that tells "none counted"
from "not measured" (issue 38)."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from contentplatform.kit.errors import BadRequest
from contentplatform.kit.series import DateRange, Slots, Span, check_range, fill, floor, spans

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
HOURS = timedelta(hours=1)

# 2026: Berlin springs forward on 29 March and falls back on 25 October; New York on 8 March
# and 1 November.
CHANGES = {
    BERLIN: (date(2026, 3, 29), date(2026, 10, 25)),
    NEW_YORK: (date(2026, 3, 8), date(2026, 11, 1)),
}


@pytest.mark.parametrize("zone", [BERLIN, NEW_YORK], ids=str)
def test_a_year_of_days_across_both_clock_changes_has_every_day_once(zone: ZoneInfo) -> None:
    year = DateRange(date(2026, 1, 1), date(2026, 12, 31))

    days = year.spans("day", zone)

    dates = [span.local_date(zone) for span in days]
    assert dates == [date(2026, 1, 1) + timedelta(days=n) for n in range(365)]
    assert all(span.start.astimezone(zone).time().hour == 0 for span in days)
    assert all(a.end == b.start for a, b in itertools.pairwise(days))  # no gap, no overlap
    assert (days[0].start, days[-1].end) == year.instants(zone)
    spring, autumn = CHANGES[zone]
    lengths = {span.local_date(zone): span.end - span.start for span in days}
    assert lengths[spring] == 23 * HOURS
    assert lengths[autumn] == 25 * HOURS
    assert sum(1 for length in lengths.values() if length != 24 * HOURS) == 2


@pytest.mark.parametrize("zone", [BERLIN, NEW_YORK], ids=str)
def test_weeks_start_on_monday_at_midnight_and_months_on_the_first(zone: ZoneInfo) -> None:
    year = DateRange(date(2026, 1, 1), date(2026, 12, 31))

    weeks = year.spans("week", zone)
    months = year.spans("month", zone)

    # 1 January 2026 is a Thursday: its ISO week began on Monday 29 December 2025.
    assert weeks[0].local_date(zone) == date(2025, 12, 29)
    assert all(week.local_date(zone).weekday() == 0 for week in weeks)
    assert all(week.start.astimezone(zone).hour == 0 for week in weeks)
    assert sorted({week.end - week.start for week in weeks}) == [
        167 * HOURS,
        168 * HOURS,
        169 * HOURS,
    ]
    assert [month.local_date(zone) for month in months] == [date(2026, m, 1) for m in range(1, 13)]
    assert months[-1].end == midnight_utc(date(2027, 1, 1), zone)


def midnight_utc(day: date, zone: ZoneInfo) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)


def test_a_day_whose_midnight_the_zone_skips_starts_at_its_first_instant() -> None:
    santiago = ZoneInfo("America/Santiago")  # 6 September 2026: 00:00 is 01:00

    [day] = DateRange(date(2026, 9, 6), date(2026, 9, 6)).spans("day", santiago)

    assert day.start.astimezone(santiago) == datetime(2026, 9, 6, 1, tzinfo=santiago)
    assert day.end - day.start == 23 * HOURS


def test_a_day_a_zone_skipped_altogether_has_no_span() -> None:
    apia = ZoneInfo("Pacific/Apia")  # Samoa went from 29 to 31 December 2011

    days = DateRange(date(2011, 12, 29), date(2011, 12, 31)).spans("day", apia)

    assert [span.local_date(apia) for span in days] == [date(2011, 12, 29), date(2011, 12, 31)]


def test_hours_follow_the_zone_clock_and_the_repeated_hour_is_two_spans() -> None:
    kolkata = ZoneInfo("Asia/Kolkata")  # UTC+05:30
    moment = datetime(2026, 5, 4, 10, 50, tzinfo=kolkata)
    assert floor(moment, "hour", kolkata) == datetime(2026, 5, 4, 4, 30, tzinfo=UTC)

    # New York's 1 November 2026: 01:00-02:00 happens twice (EDT, then EST).
    # (Arithmetic on an aware datetime of a zone is wall-clock arithmetic: add in UTC.)
    start = datetime(2026, 11, 1, 0, 0, tzinfo=NEW_YORK).astimezone(UTC)
    hours = spans(start, start + 4 * HOURS, "hour", NEW_YORK)
    on_the_clock = [span.start.astimezone(NEW_YORK).strftime("%H:%M %Z") for span in hours]
    assert on_the_clock == ["00:00 EDT", "01:00 EDT", "01:00 EST", "02:00 EST"]
    second = datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=NEW_YORK)
    assert floor(second, "hour", NEW_YORK) == hours[2].start


def test_utc_spans_cover_a_window_from_the_bucket_holding_its_start() -> None:
    start = datetime(2026, 1, 31, 22, 15, tzinfo=UTC)
    end = datetime(2026, 3, 1, 0, 0, tzinfo=UTC)

    months = spans(start, end, "month")
    days = spans(start, end, "day")

    assert months == [
        Span(datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)),
        Span(datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)),
    ]
    assert len(days) == 1 + 28 and days[0].start == datetime(2026, 1, 31, tzinfo=UTC)


def test_previous_period_is_as_many_days_just_before() -> None:
    march = DateRange(date(2026, 3, 1), date(2026, 3, 31))

    assert march.previous_period() == DateRange(date(2026, 1, 29), date(2026, 2, 28))


def test_previous_year_by_date_or_by_weekday() -> None:
    week = DateRange(date(2026, 3, 2), date(2026, 3, 8))  # Monday to Sunday
    leap_day = DateRange(date(2028, 2, 29), date(2028, 2, 29))

    by_weekday = week.previous_year(same_weekday=True)
    by_date = week.previous_year()

    assert [by_weekday.first.weekday(), by_weekday.last.weekday()] == [0, 6]
    assert by_weekday == DateRange(date(2025, 3, 3), date(2025, 3, 9))
    assert by_date == DateRange(date(2025, 3, 2), date(2025, 3, 8))
    assert leap_day.previous_year() == DateRange(date(2027, 2, 28), date(2027, 2, 28))


@pytest.mark.parametrize(
    ("first", "last", "granularity", "named"),
    [
        (date(2026, 3, 2), date(2026, 3, 1), "day", "before it starts"),
        (date(2024, 3, 1), date(2026, 3, 1), "month", "at most 24 months"),
        (date(2025, 1, 1), date(2026, 2, 5), "day", "at most 400 days"),
        (date(2026, 3, 1), date(2026, 3, 2), "hour", "not hours"),
    ],
)
def test_a_range_past_a_limit_is_400_naming_it(
    first: date, last: date, granularity: str, named: str
) -> None:
    with pytest.raises(BadRequest, match=named) as refused:
        check_range(first, last, granularity)  # type: ignore[arg-type]

    assert refused.value.errors is not None and refused.value.errors[0].path == "range"


def test_ranges_at_the_limits_pass() -> None:
    assert check_range(date(2024, 3, 1), date(2026, 2, 28), "month").days == 730
    assert check_range(date(2025, 1, 1), date(2026, 2, 4), "day").days == 400
    assert check_range(date(2026, 3, 1), date(2026, 3, 1), "day").days == 1


def test_filling_tells_nothing_counted_from_not_measured() -> None:
    days = DateRange(date(2026, 3, 1), date(2026, 3, 5)).spans("day", BERLIN)
    counted = {days[3].start: 7}
    # The source began on 3 March at noon: 1 and 2 March were not measured.
    since = datetime(2026, 3, 3, 12, tzinfo=BERLIN)

    assert fill(counted, days, since=since, zero=0) == [None, None, 0, 7, 0]
    assert fill(counted, days, since=None, zero=0) == [None] * 5
    assert fill({}, days, since=datetime(2020, 1, 1, tzinfo=UTC), zero=0.0) == [0.0] * 5


def test_slots_find_the_span_holding_a_moment_and_none_outside():
    berlin = ZoneInfo("Europe/Berlin")
    over = DateRange(date(2026, 3, 28), date(2026, 3, 30)).spans("day", berlin)
    slots = Slots(over)
    # 29 March lasts 23 hours in Berlin: its last instant is still its own.
    assert slots.index(over[1].end - timedelta(microseconds=1)) == 1
    assert [slots.index(span.start) for span in over] == [0, 1, 2]
    assert slots.index(over[0].start - timedelta(microseconds=1)) is None
    assert slots.index(over[-1].end) is None
    assert Slots([]).index(over[0].start) is None
