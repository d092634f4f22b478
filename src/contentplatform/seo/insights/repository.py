"""The reads insights are computed from, the tenant and its property first: web search rows
of a window of days (the fact tables' index)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy import Integer, cast, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.seo.models import SeoPageDay, SeoQueryDay
from contentplatform.seo.search_console.repository import among

# Insights read web search only: image, video and news results have curves of their own.
SEARCH_TYPE = "web"
Fact = type[SeoPageDay] | type[SeoQueryDay]


def _window(
    fact: Fact, tenant_id: uuid.UUID, property_id: uuid.UUID, first: date, last: date
) -> list[Any]:
    return [
        fact.tenant_id == tenant_id,
        fact.property_id == property_id,
        fact.search_type == SEARCH_TYPE,
        fact.day >= first,
        fact.day <= last,
    ]


async def query_pages(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, first: date, last: date
) -> list[tuple[str, str, int, int, float]]:
    """(query, page, clicks, impressions, position_sum) over the window, every country and
    device."""
    fact = SeoQueryDay
    statement = (
        select(
            fact.query,
            fact.page,
            func.sum(fact.clicks),
            func.sum(fact.impressions),
            func.sum(fact.position_sum),
        )
        .where(*_window(fact, tenant_id, property_id, first, last))
        .group_by(fact.query, fact.page)
    )
    return [
        (query, page, int(clicks), int(impressions), float(position_sum))
        for query, page, clicks, impressions, position_sum in (await session.execute(statement))
    ]


async def ctr_by_position(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, first: date, last: date
) -> list[tuple[int, int, int]]:
    """(position rounded to a whole place, clicks, impressions) of the query rows: the points
    the tenant's CTR curve is fitted on."""
    fact = SeoQueryDay
    # Half up on both databases: PostgreSQL's cast of a float rounds half to even, SQLite's
    # truncates.
    half_up = fact.position_sum / fact.impressions + 0.5
    if session.get_bind().dialect.name == "postgresql":
        place = cast(func.floor(half_up), Integer)
    else:
        place = cast(half_up, Integer)
    statement = (
        select(place, func.sum(fact.clicks), func.sum(fact.impressions))
        .where(*_window(fact, tenant_id, property_id, first, last), fact.impressions > 0)
        .group_by(place)
        .order_by(place)
    )
    return [
        (int(position), int(clicks), int(impressions))
        for position, clicks, impressions in (await session.execute(statement))
    ]


async def page_clicks(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, first: date, last: date
) -> dict[str, tuple[int, int, float]]:
    """Each page's (clicks, impressions, position_sum) over the window, from the page totals
    (anonymized queries included)."""
    fact = SeoPageDay
    statement = (
        select(
            fact.page,
            func.sum(fact.clicks),
            func.sum(fact.impressions),
            func.sum(fact.position_sum),
        )
        .where(*_window(fact, tenant_id, property_id, first, last))
        .group_by(fact.page)
    )
    return {
        page: (int(clicks), int(impressions), float(position_sum))
        for page, clicks, impressions, position_sum in (await session.execute(statement))
    }


async def daily_query_pages(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    first: date,
    last: date,
    queries: Sequence[str],
) -> list[tuple[str, date, str, int, float]]:
    """(query, day, page, impressions, position_sum) of these queries, by day: which page led
    each day."""
    fact = SeoQueryDay
    statement = (
        select(
            fact.query,
            fact.day,
            fact.page,
            func.sum(fact.impressions),
            func.sum(fact.position_sum),
        )
        .where(
            *_window(fact, tenant_id, property_id, first, last),
            among(session, fact.query, tuple(queries)),
        )
        .group_by(fact.query, fact.day, fact.page)
    )
    return [
        (query, day, page, int(impressions), float(position_sum))
        for query, day, page, impressions, position_sum in (await session.execute(statement))
    ]
