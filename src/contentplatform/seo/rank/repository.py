"""Every query of rank tracking, the tenant first (but for the reconciler's, which looks across
tenants for checks with tasks still open)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import String, cast, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, counts_by, cross_tenant, page_of
from contentplatform.seo.models import SeoKeywordPosition, SeoSerpSnapshot, SeoTrackedKeyword

get = Owned(SeoTrackedKeyword)
get_position = Owned(SeoKeywordPosition)
OPEN = ("pending", "posted")
# Where each bucket's positions fall (not ranking: position null).
BUCKETS: dict[str, tuple[int, int]] = {
    "top3": (1, 3),
    "top10": (1, 10),
    "top20": (1, 20),
    "top100": (1, 100),
}


# --- tracked keywords -------------------------------------------------------------------------


async def keywords_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    filters: dict[str, Any],
    sort_by: str,
    descending: bool,
    limit: int,
    offset: int,
) -> tuple[list[SeoTrackedKeyword], int]:
    """A page of the tenant's keywords, filtered, sorted on an indexed column (then id). A
    null sorts as the largest value both ways (PostgreSQL's order for an ascending index)."""
    criteria: list[Any] = [SeoTrackedKeyword.tenant_id == tenant_id]
    if filters.get("search"):
        needle = filters["search"].lower().replace("\\", "\\\\").replace("%", "\\%")
        needle = needle.replace("_", "\\_")
        criteria.append(SeoTrackedKeyword.keyword.like(f"%{needle}%", escape="\\"))
    for name in ("status", "device", "location_code", "movement"):
        if filters.get(name) is not None:
            criteria.append(getattr(SeoTrackedKeyword, name) == filters[name])
    bucket = filters.get("bucket")
    if bucket == "not_ranking":
        # Checked and not found; a keyword never checked is in no bucket.
        criteria.append(SeoTrackedKeyword.position.is_(None))
        criteria.append(SeoTrackedKeyword.last_checked_at.is_not(None))
    elif bucket is not None:
        low, high = BUCKETS[bucket]
        criteria.append(SeoTrackedKeyword.position.between(low, high))
    statement = select(SeoTrackedKeyword).where(*criteria)
    if filters.get("tag"):
        # Tags are a short JSON list: matched in Python-free SQL through its text form.
        statement = statement.where(_has_tag(filters["tag"]))
    column = getattr(SeoTrackedKeyword, sort_by)
    ordered = column.desc().nulls_first() if descending else column.asc().nulls_last()
    tie = SeoTrackedKeyword.id.desc() if descending else SeoTrackedKeyword.id.asc()
    return await page_of(session, statement, ordered, tie, limit=limit, offset=offset)


def _has_tag(tag: str) -> Any:
    text = cast(SeoTrackedKeyword.tags, String)
    quoted = tag.replace("\\", "\\\\").replace('"', '\\"')
    return text.contains(f'"{quoted}"', autoescape=True)


async def count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    statement = select(func.count()).where(SeoTrackedKeyword.tenant_id == tenant_id)
    return int(await session.scalar(statement) or 0)


async def markets_of(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    keywords: Sequence[str],
    location: int,
    language: str,
) -> set[tuple[str, str]]:
    """(keyword, device) of `keywords` the tenant tracks in this market already."""
    if not keywords:
        return set()
    statement = select(SeoTrackedKeyword.keyword, SeoTrackedKeyword.device).where(
        SeoTrackedKeyword.tenant_id == tenant_id,
        SeoTrackedKeyword.location_code == location,
        SeoTrackedKeyword.language_code == language,
        SeoTrackedKeyword.keyword.in_(list(keywords)),
    )
    return {(keyword, device) for keyword, device in (await session.execute(statement)).tuples()}


async def to_check(
    session: AsyncSession, tenant_id: uuid.UUID, ids: Sequence[uuid.UUID] | None
) -> list[SeoTrackedKeyword]:
    """The active keywords among `ids` (None: all the tenant's), oldest first."""
    statement = select(SeoTrackedKeyword).where(
        SeoTrackedKeyword.tenant_id == tenant_id, SeoTrackedKeyword.status == "active"
    )
    if ids is not None:
        statement = statement.where(SeoTrackedKeyword.id.in_(list(ids)))
    statement = statement.order_by(SeoTrackedKeyword.created_at, SeoTrackedKeyword.id)
    return list((await session.execute(statement)).scalars())


async def ranking(session: AsyncSession, tenant_id: uuid.UUID) -> list[SeoTrackedKeyword]:
    """The keywords whose newest check found one of our URLs (at most the 500 tracked), best
    position first."""
    statement = (
        select(SeoTrackedKeyword)
        .where(SeoTrackedKeyword.tenant_id == tenant_id, SeoTrackedKeyword.url.is_not(None))
        .order_by(SeoTrackedKeyword.position, SeoTrackedKeyword.keyword, SeoTrackedKeyword.id)
    )
    return list((await session.execute(statement)).scalars())


async def by_ids(
    session: AsyncSession, tenant_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, SeoTrackedKeyword]:
    """The tenant's keywords among `ids`, whatever their status, by id."""
    if not ids:
        return {}
    statement = select(SeoTrackedKeyword).where(
        SeoTrackedKeyword.tenant_id == tenant_id, SeoTrackedKeyword.id.in_(list(ids))
    )
    return {row.id: row for row in (await session.execute(statement)).scalars()}


async def in_scope(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    tag: str | None,
    device: str | None,
    location_code: int | None,
) -> list[SeoTrackedKeyword]:
    statement = select(SeoTrackedKeyword).where(SeoTrackedKeyword.tenant_id == tenant_id)
    if device is not None:
        statement = statement.where(SeoTrackedKeyword.device == device)
    if location_code is not None:
        statement = statement.where(SeoTrackedKeyword.location_code == location_code)
    if tag is not None:
        statement = statement.where(_has_tag(tag))
    return list((await session.execute(statement)).scalars())


async def delete_keyword(
    session: AsyncSession, tenant_id: uuid.UUID, keyword_id: uuid.UUID
) -> None:
    """The keyword, its positions and its stored SERPs."""
    for model in (SeoSerpSnapshot, SeoKeywordPosition):
        await session.execute(
            delete(model).where(model.tenant_id == tenant_id, model.keyword_id == keyword_id)
        )
    await session.execute(
        delete(SeoTrackedKeyword).where(
            SeoTrackedKeyword.tenant_id == tenant_id, SeoTrackedKeyword.id == keyword_id
        )
    )


# --- positions and SERPs --------------------------------------------------------------------


async def positions(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    keyword_ids: Sequence[uuid.UUID],
    first: date | None,
    last: date,
) -> list[SeoKeywordPosition]:
    """The completed positions of `keyword_ids` from `first` (None: any) to `last`, oldest
    first."""
    if not keyword_ids:
        return []
    statement = select(SeoKeywordPosition).where(
        SeoKeywordPosition.tenant_id == tenant_id,
        SeoKeywordPosition.keyword_id.in_(list(keyword_ids)),
        SeoKeywordPosition.status == "completed",
        SeoKeywordPosition.check_date <= last,
    )
    if first is not None:
        statement = statement.where(SeoKeywordPosition.check_date >= first)
    statement = statement.order_by(SeoKeywordPosition.check_date, SeoKeywordPosition.checked_at)
    return list((await session.execute(statement)).scalars())


async def latest_before(
    session: AsyncSession, tenant_id: uuid.UUID, keyword_id: uuid.UUID, day: date, run_id: uuid.UUID
) -> SeoKeywordPosition | None:
    """The keyword's newest completed position on or before `day`, of another check."""
    statement = (
        select(SeoKeywordPosition)
        .where(
            SeoKeywordPosition.tenant_id == tenant_id,
            SeoKeywordPosition.keyword_id == keyword_id,
            SeoKeywordPosition.status == "completed",
            SeoKeywordPosition.sync_run_id != run_id,
            SeoKeywordPosition.check_date <= day,
        )
        .order_by(SeoKeywordPosition.check_date.desc(), SeoKeywordPosition.checked_at.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalars().first()


async def best_position(
    session: AsyncSession, tenant_id: uuid.UUID, keyword_id: uuid.UUID
) -> int | None:
    statement = select(func.min(SeoKeywordPosition.position)).where(
        SeoKeywordPosition.tenant_id == tenant_id,
        SeoKeywordPosition.keyword_id == keyword_id,
        SeoKeywordPosition.status == "completed",
    )
    found = await session.scalar(statement)
    return int(found) if found is not None else None


async def snapshot(
    session: AsyncSession, tenant_id: uuid.UUID, keyword_id: uuid.UUID, day: date | None
) -> SeoSerpSnapshot | None:
    """The keyword's newest stored SERP (of `day`, when given)."""
    statement = select(SeoSerpSnapshot).where(
        SeoSerpSnapshot.tenant_id == tenant_id, SeoSerpSnapshot.keyword_id == keyword_id
    )
    if day is not None:
        statement = statement.where(SeoSerpSnapshot.check_date == day)
    statement = statement.order_by(
        SeoSerpSnapshot.check_date.desc(), SeoSerpSnapshot.checked_at.desc()
    ).limit(1)
    return (await session.execute(statement)).scalars().first()


# --- the durable work -------------------------------------------------------------------------


async def of_run(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, statuses: Sequence[str]
) -> list[SeoKeywordPosition]:
    statement = (
        select(SeoKeywordPosition)
        .where(
            SeoKeywordPosition.tenant_id == tenant_id,
            SeoKeywordPosition.sync_run_id == run_id,
            SeoKeywordPosition.status.in_(list(statuses)),
        )
        .order_by(SeoKeywordPosition.created_at, SeoKeywordPosition.id)
    )
    return list((await session.execute(statement)).scalars())


async def run_counts(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> dict[str, int]:
    return await counts_by(
        session,
        SeoKeywordPosition.status,
        SeoKeywordPosition.tenant_id == tenant_id,
        SeoKeywordPosition.sync_run_id == run_id,
    )


async def pages_used(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> int:
    """The SERP pages the run's completed tasks read: what it commits."""
    statement = select(func.coalesce(func.sum(SeoKeywordPosition.pages), 0)).where(
        SeoKeywordPosition.tenant_id == tenant_id,
        SeoKeywordPosition.sync_run_id == run_id,
        SeoKeywordPosition.status == "completed",
    )
    return int(await session.scalar(statement) or 0)


async def run_failures(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, limit: int
) -> list[dict[str, Any]]:
    statement = (
        select(SeoTrackedKeyword.keyword, SeoTrackedKeyword.device, SeoKeywordPosition.error)
        .join(SeoTrackedKeyword, SeoTrackedKeyword.id == SeoKeywordPosition.keyword_id)
        .where(
            SeoKeywordPosition.tenant_id == tenant_id,
            SeoKeywordPosition.sync_run_id == run_id,
            SeoKeywordPosition.status == "failed",
        )
        .order_by(SeoTrackedKeyword.keyword, SeoTrackedKeyword.device)
        .limit(limit)
    )
    return [
        {"keyword": keyword, "device": device, **(error or {})}
        for keyword, device, error in (await session.execute(statement)).tuples()
    ]


@cross_tenant("the reconciler looks for checks with tasks still open, of every tenant")
async def open_runs(session: AsyncSession) -> list[tuple[uuid.UUID, uuid.UUID, datetime]]:
    """(tenant, run, when a task of it last moved) of every check with open tasks."""
    statement = (
        select(
            SeoKeywordPosition.tenant_id,
            SeoKeywordPosition.sync_run_id,
            func.max(SeoKeywordPosition.updated_at),
        )
        .where(or_(*(SeoKeywordPosition.status == status for status in OPEN)))
        .group_by(SeoKeywordPosition.tenant_id, SeoKeywordPosition.sync_run_id)
    )
    return [(t, r, moved) for t, r, moved in (await session.execute(statement)).tuples()]
