"""seoPlans.getPerformance: what a plan's published items earned in search, read from stored
Search Console facts (never a provider): each published URL's page rows (web search, every
country and device) from its publication day to endDate, at 30, 60 and 90 days after
publishing, against its forecast (monthly clicks x days / 30); the tracked position of its
primary keyword. AI answers citing it count 0 until AI visibility exists (issue 45)."""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import utcnow
from contentplatform.seo.models import SeoPlanItem
from contentplatform.seo.plans import following, planner, repository, schemas, service
from contentplatform.seo.search_console import service as search_console
from contentplatform.tenants import service as tenants

MILESTONES = (30, 60, 90)
Figures = tuple[int, int, float]  # clicks, impressions, position_sum


def _sum(rows: list[tuple[date, int, int, float]], start: date, end: date) -> Figures:
    clicks = impressions = 0
    position = 0.0
    for day, day_clicks, day_impressions, day_position in rows:
        if start <= day <= end:
            clicks += day_clicks
            impressions += day_impressions
            position += day_position
    return clicks, impressions, position


def _position(figures: Figures) -> float | None:
    return round(figures[2] / figures[1], 1) if figures[1] else None


def _milestones(
    rows: list[tuple[date, int, int, float]], published: date, end: date, monthly: float | None
) -> list[schemas.SeoPlanMilestone]:
    found = []
    for days in MILESTONES:
        last = published + timedelta(days=days - 1)
        figures = _sum(rows, published, min(last, end))
        found.append(
            schemas.SeoPlanMilestone(
                days=days,
                end=last,
                reached=last <= end,
                clicks=figures[0],
                impressions=figures[1],
                position=_position(figures),
                forecast_clicks=None if monthly is None else round(monthly * days / 30, 2),
            )
        )
    return found


async def performance(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.SeoPlanPerformanceInput
) -> schemas.SeoPlanPerformance:
    plan = await service.require_plan(session, tenant_id, data.id)
    await following.follow(session, tenant_id, plan_id=plan.id)
    timezone = await tenants.timezone_of(session, tenant_id)
    end = data.end_date or utcnow().astimezone(ZoneInfo(timezone)).date()
    year, month = service.month_parts(plan.month)
    start = date(year, month, 1)
    rows = await repository.items(session, tenant_id, plan.id)
    live = [row for row in rows if row.published_url and row.published_at]
    selected = await search_console.selected_property(session, tenant_id)
    by_page: dict[str, list[tuple[date, int, int, float]]] = {}
    if selected is not None and live:
        first = min(_day(row, timezone) for row in live)
        for page, day, clicks, impressions, position in await repository.page_days(
            session, tenant_id, selected.id, [str(row.published_url) for row in live], first, end
        ):
            by_page.setdefault(page, []).append((day, clicks, impressions, position))
    tracked = {
        planner.normalize(keyword.keyword): keyword.position
        for keyword in await repository.tracked(session, tenant_id)
    }
    items = []
    totals = [0, 0, 0.0]
    forecast_total = 0.0
    plan_milestones: dict[int, list[schemas.SeoPlanMilestone]] = {days: [] for days in MILESTONES}
    for row in rows:
        forecast = schemas.SeoPlanForecast.model_validate(row.forecast or {})
        figures: Figures = (0, 0, 0.0)
        milestones: list[schemas.SeoPlanMilestone] = []
        if row in live:
            published = _day(row, timezone)
            page_rows = by_page.get(str(row.published_url), [])
            figures = _sum(page_rows, published, end)
            milestones = _milestones(page_rows, published, end, forecast.clicks)
            for milestone in milestones:
                plan_milestones[milestone.days].append(milestone)
            forecast_total += forecast.clicks or 0
        totals[0] += figures[0]
        totals[1] += figures[1]
        totals[2] += figures[2]
        items.append(
            schemas.SeoPlanItemPerformance(
                item_id=row.id,
                title=row.title,
                primary_keyword=row.primary_keyword,
                status=row.status,
                published_url=row.published_url,
                published_at=row.published_at,
                clicks=figures[0],
                impressions=figures[1],
                ctr=round(figures[0] / figures[1], 4) if figures[1] else None,
                position=_position(figures),
                rank_position=tracked.get(row.primary_keyword),
                ai_mentions=0,
                ai_citations=0,
                forecast=forecast,
                milestones=milestones,
            )
        )
    summed = [
        schemas.SeoPlanMilestone(
            days=days,
            end=max((m.end for m in found), default=start + timedelta(days=days - 1)),
            reached=bool(found) and all(m.reached for m in found),
            clicks=sum(m.clicks for m in found),
            impressions=sum(m.impressions for m in found),
            position=_weighted(found),
            forecast_clicks=round(sum(m.forecast_clicks or 0 for m in found), 2),
        )
        for days, found in plan_milestones.items()
    ]
    return schemas.SeoPlanPerformance(
        plan_id=plan.id,
        month=plan.month,
        window=schemas.SeoPlanWindow(start=start, end=end),
        totals=schemas.SeoPlanPerformanceTotals(
            items=len(rows),
            published=sum(1 for row in rows if row.status == "published"),
            skipped=sum(1 for row in rows if row.status == "skipped"),
            failed=sum(1 for row in rows if row.status == "failed"),
            clicks=int(totals[0]),
            impressions=int(totals[1]),
            avg_position=round(totals[2] / totals[1], 1) if totals[1] else None,
            ai_citations=0,
            forecast_clicks=round(forecast_total, 2),
            milestones=summed,
        ),
        items=items,
    )


def _day(row: SeoPlanItem, timezone: str) -> date:
    assert row.published_at is not None
    return row.published_at.astimezone(ZoneInfo(timezone)).date()


def _weighted(found: list[schemas.SeoPlanMilestone]) -> float | None:
    impressions = sum(m.impressions for m in found)
    if not impressions:
        return None
    return round(sum((m.position or 0) * m.impressions for m in found) / impressions, 1)
