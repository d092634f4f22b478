"""Every query of SEO actions, the tenant first: the actions and their history, and the signals
generation reads from the other SEO parts' tables (audits, URL inspections, the page inventory,
rank positions)."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import ColumnElement, String, cast, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, lock_rows, page_of
from contentplatform.seo.models import (
    SeoAction,
    SeoActionHistory,
    SeoAuditFinding,
    SeoAuditIssue,
    SeoAuditRun,
    SeoKeywordPosition,
    SeoPage,
    SeoTrackedKeyword,
    SeoUrlInspection,
)

get = Owned(SeoAction)
SORTS = {
    "priority": (SeoAction.priority_rank, SeoAction.impact_score),
    "impact": (SeoAction.impact_score,),
    "created_at": (SeoAction.created_at,),
    "due_date": (SeoAction.due_date,),
}


# --- actions --------------------------------------------------------------------------------


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    statuses: Sequence[str] | None,
    filters: dict[str, Any],
    search: str | None,
    page_id: uuid.UUID | None,
    sort_by: str,
    descending: bool,
    limit: int,
    offset: int,
) -> tuple[list[SeoAction], int]:
    """A page of the tenant's actions, filtered, in the order asked then by id; a null due
    date sorts last either way."""
    statement = select(SeoAction).where(SeoAction.tenant_id == tenant_id)
    if statuses is not None:
        statement = statement.where(SeoAction.status.in_(list(statuses)))
    for name, value in filters.items():
        if value is not None:
            statement = statement.where(getattr(SeoAction, name) == value)
    if search:
        statement = statement.where(
            func.lower(SeoAction.title).contains(search.lower(), autoescape=True)
        )
    if page_id is not None:
        # page_ids is a short JSON list of UUID strings: matched through its text form.
        statement = statement.where(
            cast(SeoAction.page_ids, String).contains(f'"{page_id}"', autoescape=True)
        )
    columns = SORTS[sort_by]
    # NULLS LAST only where a null can be (due_date): on a column never null it would keep
    # PostgreSQL from reading the index backwards.
    order = [column.desc() if descending else column.asc() for column in columns]
    order = [
        ordered.nulls_last() if column.nullable else ordered
        for column, ordered in zip(columns, order, strict=True)
    ]
    tie = SeoAction.id.desc() if descending else SeoAction.id.asc()
    return await page_of(session, statement, *order, tie, limit=limit, offset=offset)


async def by_ids(
    session: AsyncSession, tenant_id: uuid.UUID, ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, SeoAction]:
    """The tenant's actions among `ids`, locked, by id (another tenant's are simply absent)."""
    if not ids:
        return {}
    found = await _locked(session, tenant_id, SeoAction.id.in_(list(ids)))
    return {row.id: row for row in found}


async def generated(
    session: AsyncSession, tenant_id: uuid.UUID, sources: Collection[str]
) -> dict[str, SeoAction]:
    """The tenant's actions from `sources`, locked (two generations never move one twice), by
    fingerprint."""
    if not sources:
        return {}
    found = await _locked(session, tenant_id, SeoAction.source.in_(list(sources)))
    return {row.fingerprint: row for row in found}


async def _locked(
    session: AsyncSession, tenant_id: uuid.UUID, *where: ColumnElement[bool]
) -> list[SeoAction]:
    """The tenant's actions matching `where`, locked in id order, read fresh."""
    criteria = (SeoAction.tenant_id == tenant_id, *where)
    await lock_rows(session, SeoAction, *criteria)
    statement = (
        select(SeoAction)
        .where(*criteria)
        .order_by(SeoAction.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return list((await session.execute(statement)).scalars())


async def of_draft(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    instance_id: uuid.UUID | None,
    action_id: uuid.UUID | None,
) -> list[SeoAction]:
    """The open or in-progress actions a published draft completes: the one whose job instance
    wrote it, and the one its job was made for; locked."""
    matches = []
    if instance_id is not None:
        matches.append(SeoAction.job_instance_id == instance_id)
    if action_id is not None:
        matches.append(SeoAction.id == action_id)
    if not matches:
        return []
    return await _locked(
        session, tenant_id, SeoAction.status.in_(("open", "in_progress")), or_(*matches)
    )


async def history(
    session: AsyncSession, tenant_id: uuid.UUID, action_id: uuid.UUID
) -> list[SeoActionHistory]:
    statement = (
        select(SeoActionHistory)
        .where(SeoActionHistory.tenant_id == tenant_id, SeoActionHistory.action_id == action_id)
        .order_by(SeoActionHistory.at, SeoActionHistory.id)
    )
    return list((await session.execute(statement)).scalars())


async def pages_of(
    session: AsyncSession, tenant_id: uuid.UUID, hashes: Collection[str]
) -> dict[str, tuple[uuid.UUID, int, int]]:
    """(page id, clicks, impressions over 28 days) of the inventory's pages by URL hash."""
    if not hashes:
        return {}
    statement = select(
        SeoPage.url_hash, SeoPage.id, SeoPage.clicks_28d, SeoPage.impressions_28d
    ).where(SeoPage.tenant_id == tenant_id, SeoPage.url_hash.in_(list(hashes)))
    return {
        key: (page_id, clicks, impressions)
        for key, page_id, clicks, impressions in (await session.execute(statement)).tuples()
    }


# --- signals --------------------------------------------------------------------------------


async def active_counts(session: AsyncSession, tenant_id: uuid.UUID) -> dict[tuple[str, str], int]:
    """The open and in-progress actions, counted by (status, priority) over the status index."""
    statement = (
        select(SeoAction.status, SeoAction.priority, func.count())
        .where(SeoAction.tenant_id == tenant_id, SeoAction.status.in_(("open", "in_progress")))
        .group_by(SeoAction.status, SeoAction.priority)
    )
    return {(status, priority): n for status, priority, n in await session.execute(statement)}


async def latest_audit(session: AsyncSession, tenant_id: uuid.UUID) -> SeoAuditRun | None:
    """The tenant's newest completed audit."""
    statement = (
        select(SeoAuditRun)
        .where(SeoAuditRun.tenant_id == tenant_id, SeoAuditRun.status == "completed")
        .order_by(SeoAuditRun.finished_at.desc(), SeoAuditRun.created_at.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalars().first()


async def audit_issues(
    session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID
) -> list[SeoAuditIssue]:
    statement = (
        select(SeoAuditIssue)
        .where(SeoAuditIssue.tenant_id == tenant_id, SeoAuditIssue.audit_id == audit_id)
        .order_by(SeoAuditIssue.check_id)
    )
    return list((await session.execute(statement)).scalars())


async def audit_traffic(
    session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID
) -> dict[str, tuple[int, int]]:
    """Per check of the audit: the 28-day clicks and impressions of the pages it found."""
    statement = (
        select(
            SeoAuditFinding.check_id,
            func.coalesce(func.sum(SeoPage.clicks_28d), 0),
            func.coalesce(func.sum(SeoPage.impressions_28d), 0),
        )
        .join(
            SeoPage,
            (SeoPage.tenant_id == SeoAuditFinding.tenant_id)
            & (SeoPage.url_hash == SeoAuditFinding.url_hash),
        )
        .where(
            SeoAuditFinding.tenant_id == tenant_id,
            SeoAuditFinding.audit_id == audit_id,
            SeoAuditFinding.change != "fixed",
        )
        .group_by(SeoAuditFinding.check_id)
    )
    return {
        check: (int(clicks), int(impressions))
        for check, clicks, impressions in (await session.execute(statement)).tuples()
    }


async def latest_inspections(session: AsyncSession, tenant_id: uuid.UUID) -> list[SeoUrlInspection]:
    """The newest completed inspection of each URL the tenant had inspected."""
    newest = (
        func.row_number()
        .over(
            partition_by=SeoUrlInspection.url,
            order_by=(SeoUrlInspection.completed_at.desc(), SeoUrlInspection.created_at.desc()),
        )
        .label("newest")
    )
    ranked = (
        select(SeoUrlInspection.id, newest)
        .where(SeoUrlInspection.tenant_id == tenant_id, SeoUrlInspection.status == "completed")
        .subquery()
    )
    statement = (
        select(SeoUrlInspection)
        .join(ranked, ranked.c.id == SeoUrlInspection.id)
        .where(SeoUrlInspection.tenant_id == tenant_id, ranked.c.newest == 1)
        .order_by(SeoUrlInspection.url)
    )
    return list((await session.execute(statement)).scalars())


async def rank_series(
    session: AsyncSession, tenant_id: uuid.UUID, checks: int
) -> list[tuple[SeoTrackedKeyword, list[int | None]]]:
    """Each active tracked keyword with the positions of its last `checks` completed checks,
    oldest first."""
    newest = (
        func.row_number()
        .over(
            partition_by=SeoKeywordPosition.keyword_id,
            order_by=(SeoKeywordPosition.check_date.desc(), SeoKeywordPosition.checked_at.desc()),
        )
        .label("newest")
    )
    ranked = (
        select(SeoKeywordPosition.keyword_id, SeoKeywordPosition.position, newest)
        .where(SeoKeywordPosition.tenant_id == tenant_id, SeoKeywordPosition.status == "completed")
        .subquery()
    )
    statement = (
        select(SeoTrackedKeyword, ranked.c.position, ranked.c.newest)
        .join(ranked, ranked.c.keyword_id == SeoTrackedKeyword.id)
        .where(
            SeoTrackedKeyword.tenant_id == tenant_id,
            SeoTrackedKeyword.status == "active",
            ranked.c.newest <= checks,
        )
        .order_by(SeoTrackedKeyword.id, ranked.c.newest.desc())
    )
    series: dict[uuid.UUID, tuple[SeoTrackedKeyword, list[int | None]]] = {}
    for keyword, position, _ in (await session.execute(statement)).tuples():
        series.setdefault(keyword.id, (keyword, []))[1].append(position)
    return list(series.values())
