"""The inputs every analytics report shares (a period in the organization's time zone, its
comparison, its granularity) and the shapes of their answers (a metric beside its previous
value, a series' points, a group's key and label)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import Input

Compare = Literal["none", "previous_period", "previous_year"]
Granularity = Literal["day", "week", "month"]

V = TypeVar("V")


# The days a period may name: a date far outside them is a client's mistake, not a report.
FIRST_DAY, LAST_DAY = date(1970, 1, 1), date(2999, 12, 31)


class PeriodInput(Input):
    date_from: date | None = Field(
        None,
        ge=FIRST_DAY,
        le=LAST_DAY,
        description="First day of the period (inclusive), in the organization's time zone; "
        "default: 29 days before dateTo.",
    )
    date_to: date | None = Field(
        None,
        ge=FIRST_DAY,
        le=LAST_DAY,
        description="Last day of the period (inclusive); default: today. At most 24 months "
        "after dateFrom.",
    )


class ComparedPeriodInput(PeriodInput):
    compare: Compare = Field(
        "previous_period",
        description="`previous_period`: as many days just before; `previous_year`: the same "
        "dates a year before; `none`: no comparison (`previous` is null).",
    )
    same_weekday: bool = Field(
        False,
        description="With compare=previous_year: 52 weeks (364 days) before instead of the same "
        "dates, so each day lines up with the same day of the week.",
    )


class SeriesPeriodInput(PeriodInput):
    granularity: Granularity = Field(
        "day",
        description="Buckets: days, ISO weeks (Monday first) or calendar months of the "
        "organization's time zone (right across clock changes). Day buckets cover at most 400 "
        "days.",
    )


class Metric(BaseModel, Generic[V]):
    """A figure for the period beside the same figure for the compared period."""

    value: V | None
    previous: V | None = Field(description="Null when compare=none or nothing to compare.")
    change_pct: float | None = Field(
        description="(value - previous) / previous x 100, rounded to 0.1; null when previous is "
        "null or 0."
    )


class Group(BaseModel):
    """What a breakdown's row is about: its key (an id, a code) and a label to show."""

    key: str | None
    label: str


class Point(BaseModel):
    """One bucket of a series: [start, end) as instants, and its values (null: no source)."""

    start: datetime
    end: datetime
    values: dict[str, float | int | None]


class Series(BaseModel):
    granularity: Granularity
    date_from: date
    date_to: date
    data_through: datetime = Field(
        description="The instant up to which the figures are complete: now for the platform's "
        "own records, capped at the period's end."
    )
    data: list[Point]
