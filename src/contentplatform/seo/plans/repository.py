"""Every query of SEO plans, the tenant first: plans and items, and the stored signals a plan is
made from and measured against (Search Console's rows, tracked keywords and their SERPs, keyword
research, open actions)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import date, datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import cross_tenant, page_of
from contentplatform.seo.models import (
    SeoAction,
    SeoKeywordResearch,
    SeoPageDay,
    SeoPlan,
    SeoPlanItem,
    SeoQueryDay,
    SeoSerpSnapshot,
    SeoTrackedKeyword,
)


def _live(tenant_id: uuid.UUID) -> Select[SeoPlan]:
    return select(SeoPlan).where(SeoPlan.tenant_id == tenant_id, SeoPlan.deleted_at.is_(None))


async def get(
    session: AsyncSession, tenant_id: uuid.UUID, plan_id: uuid.UUID, *, for_update: bool = False
) -> SeoPlan | None:
    statement = _live(tenant_id).where(SeoPlan.id == plan_id)
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def live_of_month(session: AsyncSession, tenant_id: uuid.UUID, month: str) -> SeoPlan | None:
    """The month's plan that is not archived, if any."""
    statement = _live(tenant_id).where(SeoPlan.month == month, SeoPlan.status != "archived")
    return (await session.execute(statement)).scalar_one_or_none()


async def by_key(session: AsyncSession, tenant_id: uuid.UUID, key: str) -> SeoPlan | None:
    """The plan a generate with this idempotency key made (deleted or not)."""
    statement = select(SeoPlan).where(
        SeoPlan.tenant_id == tenant_id, SeoPlan.idempotency_key == key
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    status: str | None,
    year: int | None,
    limit: int,
    offset: int,
) -> tuple[list[SeoPlan], int]:
    statement = _live(tenant_id)
    if status is None:
        statement = statement.where(SeoPlan.status != "archived")
    else:
        statement = statement.where(SeoPlan.status == status)
    if year is not None:
        statement = statement.where(SeoPlan.month.startswith(f"{year:04d}-"))
    return await page_of(
        session,
        statement,
        SeoPlan.month.desc(),
        SeoPlan.created_at.desc(),
        SeoPlan.id,
        limit=limit,
        offset=offset,
    )


async def items(
    session: AsyncSession, tenant_id: uuid.UUID, plan_id: uuid.UUID, *, for_update: bool = False
) -> list[SeoPlanItem]:
    """The plan's items by target date, then position."""
    statement = (
        select(SeoPlanItem)
        .where(SeoPlanItem.tenant_id == tenant_id, SeoPlanItem.plan_id == plan_id)
        .order_by(SeoPlanItem.target_date, SeoPlanItem.position, SeoPlanItem.id)
    )
    if for_update:
        statement = statement.with_for_update()
    return list((await session.scalars(statement)).all())


async def item(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    plan_id: uuid.UUID,
    item_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> SeoPlanItem | None:
    statement = select(SeoPlanItem).where(
        SeoPlanItem.tenant_id == tenant_id,
        SeoPlanItem.plan_id == plan_id,
        SeoPlanItem.id == item_id,
    )
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def counts(
    session: AsyncSession, tenant_id: uuid.UUID, plan_ids: list[uuid.UUID]
) -> dict[uuid.UUID, dict[str, int]]:
    """Items per status of each plan."""
    found: dict[uuid.UUID, dict[str, int]] = defaultdict(dict)
    if not plan_ids:
        return found
    statement = (
        select(SeoPlanItem.plan_id, SeoPlanItem.status, func.count())
        .where(SeoPlanItem.tenant_id == tenant_id, SeoPlanItem.plan_id.in_(plan_ids))
        .group_by(SeoPlanItem.plan_id, SeoPlanItem.status)
    )
    for plan_id, status, count in (await session.execute(statement)).tuples():
        found[plan_id][status] = int(count)
    return found


async def calendar(
    session: AsyncSession, tenant_id: uuid.UUID, start: date, end: date, status: str | None
) -> list[tuple[SeoPlanItem, SeoPlan]]:
    """Items of live plans (not archived) dated start..end, by date."""
    statement = (
        select(SeoPlanItem, SeoPlan)
        .join(SeoPlan, SeoPlan.id == SeoPlanItem.plan_id)
        .where(
            SeoPlanItem.tenant_id == tenant_id,
            SeoPlan.tenant_id == tenant_id,
            SeoPlan.deleted_at.is_(None),
            SeoPlan.status != "archived",
            SeoPlanItem.target_date >= start,
            SeoPlanItem.target_date <= end,
        )
        .order_by(SeoPlanItem.target_date, SeoPlanItem.position, SeoPlanItem.id)
    )
    if status is not None:
        statement = statement.where(SeoPlanItem.status == status)
    return [(row, plan) for row, plan in (await session.execute(statement)).tuples()]


async def following(
    session: AsyncSession, tenant_id: uuid.UUID, instance_ids: list[uuid.UUID] | None = None
) -> list[SeoPlanItem]:
    """Items whose status follows a job instance and may still move (scheduled, in_progress,
    drafted), of these instances when given."""
    statement = select(SeoPlanItem).where(
        SeoPlanItem.tenant_id == tenant_id,
        SeoPlanItem.job_instance_id.is_not(None),
        SeoPlanItem.status.in_(("scheduled", "in_progress", "drafted")),
    )
    if instance_ids is not None:
        statement = statement.where(SeoPlanItem.job_instance_id.in_(instance_ids))
    return list((await session.scalars(statement)).all())


async def recent_keywords(
    session: AsyncSession, tenant_id: uuid.UUID, since: datetime, other_than: uuid.UUID
) -> set[str]:
    """Primary keywords other plans (not deleted) proposed or wrote since `since`, rejected
    ones aside."""
    statement = (
        select(SeoPlanItem.primary_keyword)
        .join(SeoPlan, SeoPlan.id == SeoPlanItem.plan_id)
        .where(
            SeoPlanItem.tenant_id == tenant_id,
            SeoPlan.tenant_id == tenant_id,
            SeoPlan.deleted_at.is_(None),
            SeoPlan.id != other_than,
            SeoPlanItem.status != "rejected",
            SeoPlanItem.created_at >= since,
        )
    )
    return {row for row in (await session.scalars(statement)).all()}


@cross_tenant("the reconciler's sweep of every tenant's plans still generating")
async def generating(session: AsyncSession) -> list[SeoPlan]:
    statement = select(SeoPlan).where(SeoPlan.status == "generating", SeoPlan.deleted_at.is_(None))
    return list((await session.scalars(statement)).all())


# --- the signals ----------------------------------------------------------------------------


async def query_rows(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, start: date, end: date
) -> list[tuple[str, str, int, int, float]]:
    """(query, page, clicks, impressions, position_sum) of the property's web rows start..end,
    summed over days, countries and devices."""
    statement = (
        select(
            SeoQueryDay.query,
            SeoQueryDay.page,
            func.sum(SeoQueryDay.clicks),
            func.sum(SeoQueryDay.impressions),
            func.sum(SeoQueryDay.position_sum),
        )
        .where(
            SeoQueryDay.tenant_id == tenant_id,
            SeoQueryDay.property_id == property_id,
            SeoQueryDay.search_type == "web",
            SeoQueryDay.day >= start,
            SeoQueryDay.day <= end,
        )
        .group_by(SeoQueryDay.query, SeoQueryDay.page)
    )
    return [
        (query, page, int(clicks or 0), int(impressions or 0), float(position or 0))
        for query, page, clicks, impressions, position in (await session.execute(statement))
    ]


async def page_days(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    pages: list[str],
    start: date,
    end: date,
) -> list[tuple[str, date, int, int, float]]:
    """(page, day, clicks, impressions, position_sum) of these pages' web rows start..end."""
    if not pages:
        return []
    statement = (
        select(
            SeoPageDay.page,
            SeoPageDay.day,
            func.sum(SeoPageDay.clicks),
            func.sum(SeoPageDay.impressions),
            func.sum(SeoPageDay.position_sum),
        )
        .where(
            SeoPageDay.tenant_id == tenant_id,
            SeoPageDay.property_id == property_id,
            SeoPageDay.search_type == "web",
            SeoPageDay.page.in_(pages),
            SeoPageDay.day >= start,
            SeoPageDay.day <= end,
        )
        .group_by(SeoPageDay.page, SeoPageDay.day)
    )
    return [
        (page, day, int(clicks or 0), int(impressions or 0), float(position or 0))
        for page, day, clicks, impressions, position in (await session.execute(statement))
    ]


async def tracked(session: AsyncSession, tenant_id: uuid.UUID) -> list[SeoTrackedKeyword]:
    statement = (
        select(SeoTrackedKeyword)
        .where(SeoTrackedKeyword.tenant_id == tenant_id, SeoTrackedKeyword.status == "active")
        .order_by(SeoTrackedKeyword.keyword, SeoTrackedKeyword.id)
    )
    return list((await session.scalars(statement)).all())


async def serp_urls(
    session: AsyncSession, tenant_id: uuid.UUID, keyword_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[str]]:
    """The top-10 organic URLs of each keyword's newest stored SERP."""
    if not keyword_ids:
        return {}
    statement = (
        select(SeoSerpSnapshot)
        .where(
            SeoSerpSnapshot.tenant_id == tenant_id,
            SeoSerpSnapshot.keyword_id.in_(keyword_ids),
        )
        .order_by(SeoSerpSnapshot.keyword_id, SeoSerpSnapshot.check_date.desc())
    )
    found: dict[uuid.UUID, list[str]] = {}
    for snapshot in (await session.scalars(statement)).all():
        if snapshot.keyword_id in found:
            continue
        urls = [
            str(entry["url"])
            for entry in snapshot.items
            if isinstance(entry, dict) and entry.get("type") == "organic" and entry.get("url")
        ]
        found[snapshot.keyword_id] = urls[:10]
    return found


async def research_ideas(
    session: AsyncSession, tenant_id: uuid.UUID, since: datetime
) -> list[dict[str, Any]]:
    """The ideas of keyword research kept since `since`, newest answer first."""
    statement = (
        select(SeoKeywordResearch)
        .where(SeoKeywordResearch.tenant_id == tenant_id, SeoKeywordResearch.fetched_at >= since)
        .order_by(SeoKeywordResearch.fetched_at.desc(), SeoKeywordResearch.id)
    )
    ideas: list[dict[str, Any]] = []
    for row in (await session.scalars(statement)).all():
        ideas.extend(idea for idea in row.ideas if isinstance(idea, dict))
    return ideas


async def open_actions(
    session: AsyncSession, tenant_id: uuid.UUID, types: tuple[str, ...]
) -> list[SeoAction]:
    statement = (
        select(SeoAction)
        .where(
            SeoAction.tenant_id == tenant_id,
            SeoAction.status == "open",
            SeoAction.type.in_(types),
        )
        .order_by(SeoAction.impact_score.desc(), SeoAction.id)
    )
    return list((await session.scalars(statement)).all())


async def action(session: AsyncSession, tenant_id: uuid.UUID, action_id: uuid.UUID) -> bool:
    """Whether the SEO action is this tenant's."""
    statement = select(SeoAction.id).where(
        SeoAction.tenant_id == tenant_id, SeoAction.id == action_id
    )
    return (await session.scalar(statement)) is not None
