"""`replace_day`, the storage the sync calls: a day's three facts replaced whole, the day marked
synced, the property's final/fresh days moved forward and never back; and `replace_empty_days`,
many final days without impressions at once."""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any

from sqlalchemy import func, select

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.seo.models import (
    SeoPageDay,
    SeoProperty,
    SeoQueryDay,
    SeoSiteDay,
    SeoSyncedDay,
)
from contentplatform.seo.search_console.repository import Figures, replace_empty_days
from tests.conftest import Run
from tests.seo.search_console.support import Day, days, make_property, p, plant, q
from tests.support.database import run_on
from tests.support.orgs import new_tenant


def _state(settings: Settings, tenant_id: uuid.UUID, property_id: uuid.UUID) -> dict[str, Any]:
    async def scenario(db: Database) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            prop = await session.get(SeoProperty, property_id)
            assert prop is not None
            counts = {}
            for model in (SeoSiteDay, SeoPageDay, SeoQueryDay):
                counts[model.__tablename__] = await session.scalar(
                    select(func.count()).where(model.tenant_id == tenant_id)
                )
            synced = (
                await session.execute(
                    select(SeoSyncedDay.day, SeoSyncedDay.is_final, SeoSyncedDay.rows)
                    .where(SeoSyncedDay.tenant_id == tenant_id)
                    .order_by(SeoSyncedDay.day)
                )
            ).all()
            clicks = await session.scalar(
                select(func.sum(SeoQueryDay.clicks)).where(SeoQueryDay.tenant_id == tenant_id)
            )
            position_sum = await session.scalar(
                select(func.sum(SeoSiteDay.position_sum)).where(SeoSiteDay.tenant_id == tenant_id)
            )
            return {
                "final_through": prop.final_through,
                "fresh_through": prop.fresh_through,
                "last_synced_at": prop.last_synced_at,
                "counts": counts,
                "synced": [tuple(row) for row in synced],
                "query_clicks": clicks,
                "site_position_sum": position_sum,
            }

    result: dict[str, Any] = run_on(settings, scenario)
    return result


def test_a_day_is_replaced_whole_and_the_property_moves_forward(
    run: Run, settings: Settings
) -> None:
    tenant_id = run(new_tenant)
    property_id = make_property(settings, tenant_id)
    d1, d2, d3 = date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)
    fresh = Day(
        d2,
        Figures(10, 100, 4.0),
        pages=[p("https://example.com/a", 10, 100, 4.0)],
        queries=[
            q("a", "https://example.com/a", 3, 30, 2.0),
            q("b", "https://example.com/a", 2, 9, 6.0),
        ],
        is_final=False,
    )
    assert plant(settings, tenant_id, property_id, [Day(d1, Figures(5, 50, 3.0)), fresh]) == 5
    state = _state(settings, tenant_id, property_id)
    assert state["final_through"] == d1
    assert state["fresh_through"] == d2
    assert state["last_synced_at"] is not None
    assert state["synced"] == [(d1, True, 1), (d2, False, 4)]
    assert state["query_clicks"] == 5
    # position x impressions: 3 x 50 + 4 x 100
    assert state["site_position_sum"] == 550.0

    # The fresh day comes back final with other rows: the old ones are gone, not added to.
    final = Day(d2, Figures(12, 120, 4.0), queries=[q("a", "https://example.com/a", 4, 40, 2.0)])
    assert plant(settings, tenant_id, property_id, [final]) == 2
    state = _state(settings, tenant_id, property_id)
    assert state["final_through"] == d2
    assert state["counts"] == {"seo_site_days": 2, "seo_page_days": 0, "seo_query_days": 1}
    assert state["synced"] == [(d1, True, 1), (d2, True, 2)]
    assert state["query_clicks"] == 4

    # A backfill writes an older day after: the property's days do not go back.
    plant(settings, tenant_id, property_id, [Day(date(2025, 1, 1), Figures(1, 1, 1.0))])
    state = _state(settings, tenant_id, property_id)
    assert (state["final_through"], state["fresh_through"]) == (d2, d2)
    plant(settings, tenant_id, property_id, [Day(d3, Figures(1, 1, 1.0), is_final=False)])
    state = _state(settings, tenant_id, property_id)
    assert (state["final_through"], state["fresh_through"]) == (d2, d3)


def test_another_tenants_day_is_left_alone(run: Run, settings: Settings) -> None:
    first, second = run(new_tenant), run(new_tenant)
    first_property = make_property(settings, first)
    second_property = make_property(settings, second)
    day = date(2026, 3, 1)
    plant(
        settings,
        second,
        second_property,
        [Day(day, Figures(7, 70, 2.0), queries=[q("x", "/x", 7, 70, 2.0)])],
    )
    plant(settings, first, first_property, [Day(day, Figures(1, 10, 2.0))])
    assert _state(settings, second, second_property)["counts"] == {
        "seo_site_days": 1,
        "seo_page_days": 0,
        "seo_query_days": 1,
    }


def test_empty_days_are_stored_together_as_final_zeros(run: Run, settings: Settings) -> None:
    tenant_id, other = run(new_tenant), run(new_tenant)
    property_id = make_property(settings, tenant_id)
    other_property = make_property(settings, other)
    start = date(2025, 1, 1)
    empty = days(start, 600)  # more than one `day IN (...)` batch
    # A day stored fresh with rows, now final without impressions; another tenant's same day.
    fresh = Day(
        empty[-1],
        Figures(3, 30, 2.0),
        pages=[p("https://example.com/a", 3, 30, 2.0)],
        queries=[q("a", "https://example.com/a", 3, 30, 2.0)],
        is_final=False,
    )
    plant(settings, tenant_id, property_id, [fresh])
    plant(settings, other, other_property, [Day(empty[-1], Figures(1, 10, 1.0))])

    async def scenario(db: Database) -> int:
        async with db.unit_of_work() as session:
            return await replace_empty_days(
                session, tenant_id, property_id, "web", empty, run_id=uuid.uuid4()
            )

    assert run_on(settings, scenario) == 600
    state = _state(settings, tenant_id, property_id)
    assert state["counts"] == {"seo_site_days": 600, "seo_page_days": 0, "seo_query_days": 0}
    assert state["synced"] == [(day, True, 1) for day in empty]
    assert state["site_position_sum"] == 0.0
    assert (state["final_through"], state["fresh_through"]) == (empty[-1], empty[-1])
    assert _state(settings, other, other_property)["counts"]["seo_site_days"] == 1
