"""The period a report reads: the dates a client asked for (or the last 30 days), checked
against kit/series' limits and read in the organization's time zone, with the period it is
compared to; and the arithmetic every report shares (a change in percent, a percentile)."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics.schemas import (
    ComparedPeriodInput,
    Granularity,
    Metric,
    PeriodInput,
)
from contentplatform.kit import series
from contentplatform.kit.db import utcnow
from contentplatform.tenants import service as tenants

DEFAULT_DAYS = 30


@dataclass(frozen=True)
class Period:
    """A checked range of dates in a zone, as UTC instants [start, end), and the range it is
    compared to (None: no comparison)."""

    zone: ZoneInfo
    dates: series.DateRange
    granularity: Granularity
    previous_dates: series.DateRange | None
    now: datetime

    @property
    def start(self) -> datetime:
        return self.dates.instants(self.zone)[0]

    @property
    def end(self) -> datetime:
        return self.dates.instants(self.zone)[1]

    @property
    def previous(self) -> tuple[datetime, datetime] | None:
        """The compared range as [start, end) instants, or None."""
        return self.previous_dates.instants(self.zone) if self.previous_dates else None

    @property
    def data_through(self) -> datetime:
        """Our own records are complete up to now; a period that ended is complete to its end."""
        return min(self.now, self.end)

    def spans(self) -> list[series.Span]:
        return self.dates.spans(self.granularity, self.zone)


async def zone_of(session: AsyncSession, tenant_id: uuid.UUID) -> ZoneInfo:
    return ZoneInfo(await tenants.timezone_of(session, tenant_id))


async def period(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    data: PeriodInput,
    *,
    now: datetime | None = None,
) -> Period:
    """The period `data` asks for in the organization's zone, or 400 naming the limit it
    passes. Defaults: to today, from 29 days before the end. `granularity` and `compare` are
    read when the input has them (SeriesPeriodInput, ComparedPeriodInput)."""
    zone = await zone_of(session, tenant_id)
    moment = now or utcnow()
    last = data.date_to or moment.astimezone(zone).date()
    first = data.date_from or last - timedelta(days=DEFAULT_DAYS - 1)
    granularity: Granularity = getattr(data, "granularity", "day")
    field = "dateTo" if data.date_to is not None else "dateFrom"
    dates = series.check_range(first, last, granularity, field=field)
    previous: series.DateRange | None = None
    if isinstance(data, ComparedPeriodInput):
        if data.compare == "previous_period":
            previous = dates.previous_period()
        elif data.compare == "previous_year":
            previous = dates.previous_year(same_weekday=data.same_weekday)
    return Period(zone, dates, granularity, previous, moment)


def change_pct(value: float | None, previous: float | None) -> float | None:
    """The change from `previous` to `value` in percent (0.1), None when either is unknown or
    previous is 0 (a change from nothing has no percentage)."""
    if value is None or previous is None or previous == 0:
        return None
    return round((value - previous) / previous * 100, 1)


def metric(value: float | None, previous: float | None, compared: bool) -> Metric[float]:
    """A figure beside its previous one; `compared` False: previous and change are null."""
    if not compared:
        return Metric(value=value, previous=None, change_pct=None)
    return Metric(value=value, previous=previous, change_pct=change_pct(value, previous))


def percentile(sorted_values: list[float], share: float) -> float | None:
    """The nearest-rank percentile (`share` in 0-1) of values sorted ascending: the smallest value
    with at least that share of the values at or below it; None for no values."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(share * len(sorted_values)))
    return sorted_values[rank - 1]


def local_date(moment: datetime, zone: ZoneInfo) -> date:
    return moment.astimezone(zone).date()
