"""The page inventory's queries: its rows (upserted in batches, listed by an index), and the
facts of the other SEO tables it is made from. The tenant first, always."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy import Table, and_, bindparam, case, delete, exists, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, page_of, utcnow
from contentplatform.seo.models import (
    SeoAuditFinding,
    SeoAuditIssue,
    SeoPage,
    SeoPageDay,
    SeoQueryDay,
    SeoUrlInspection,
)

# Rows per upsert statement list: a scan of thousands of pages is written in steps this big.
BATCH = 500
SORTS = {
    "clicks": SeoPage.clicks_28d,
    "impressions": SeoPage.impressions_28d,
    "position": SeoPage.position_28d,
    "clicks_change": SeoPage.clicks_change_pct,
    "issues": SeoPage.open_issues,
    "citability": SeoPage.citability_score,
    "url": SeoPage.url,
}
SEVERITIES = ("error", "warning", "notice")


def _table() -> Table:
    table: Table = SeoPage.__table__  # type: ignore[assignment]
    return table


async def upsert(
    session: AsyncSession, tenant_id: uuid.UUID, rows: Sequence[dict[str, Any]]
) -> None:
    """The rows (each `url`, `url_hash` and the same other columns) inserted, or their columns
    written over the tenant's row of the same URL: one statement run over the list."""
    if not rows:
        return
    now = utcnow()
    kept = [name for name in rows[0] if name not in ("url", "url_hash")]
    upsert_ = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = upsert_(_table())
    statement = statement.on_conflict_do_update(
        index_elements=["tenant_id", "url_hash"],
        set_={**{name: statement.excluded[name] for name in kept}, "updated_at": now},
    )
    values = [
        {"id": uuid.uuid4(), "tenant_id": tenant_id, "created_at": now, "updated_at": now, **row}
        for row in rows
    ]
    await session.execute(statement, values)


async def any_page(session: AsyncSession, tenant_id: uuid.UUID) -> bool:
    statement = select(exists().where(SeoPage.tenant_id == tenant_id))
    return bool(await session.scalar(statement))


async def leave_latest_snapshot(session: AsyncSession, tenant_id: uuid.UUID, origin: str) -> None:
    """The tenant's pages under `origin` (`https://host`) marked out of the newest scan."""
    await session.execute(
        update(SeoPage)
        .where(
            SeoPage.tenant_id == tenant_id,
            SeoPage.in_latest_snapshot.is_(True),
            SeoPage.url.startswith(origin + "/", autoescape=True),
        )
        .values(in_latest_snapshot=False, updated_at=utcnow())
    )


async def leave_search_console(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """The tenant's pages' Search Console figures cleared, before they are written again."""
    await session.execute(
        update(SeoPage)
        .where(SeoPage.tenant_id == tenant_id, SeoPage.in_search_console.is_(True))
        .values(
            in_search_console=False,
            search_console_pages=[],
            clicks_28d=0,
            impressions_28d=0,
            ctr_28d=None,
            position_28d=None,
            clicks_change_pct=None,
            updated_at=utcnow(),
        )
    )


async def unpublish(
    session: AsyncSession, tenant_id: uuid.UUID, url_hash: str, draft_id: uuid.UUID
) -> None:
    """The tenant's page of this URL hash no longer a live copy of the draft (the draft stays
    linked: it was ours)."""
    await session.execute(
        update(SeoPage)
        .where(
            SeoPage.tenant_id == tenant_id,
            SeoPage.url_hash == url_hash,
            SeoPage.draft_id == draft_id,
        )
        .values(published=False, updated_at=utcnow())
    )


async def clear_tracked_keywords(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """The tenant's pages' counts of tracked keywords cleared, before they are written again."""
    await session.execute(
        update(SeoPage)
        .where(SeoPage.tenant_id == tenant_id, SeoPage.tracked_keywords > 0)
        .values(tracked_keywords=0, updated_at=utcnow())
    )


async def drop_sourceless(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """The tenant's pages no source knows any more (only Search Console did, and no longer)."""
    await session.execute(
        delete(SeoPage).where(
            SeoPage.tenant_id == tenant_id,
            SeoPage.in_snapshot.is_(False),
            SeoPage.in_search_console.is_(False),
            SeoPage.published.is_(False),
        )
    )


async def set_facts(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    facts: dict[str, dict[str, Any]],
    **same: Any,
) -> None:
    """Each of the tenant's pages with one of these URL hashes given its columns (`facts`, the
    same names for every page) and the columns `same` for all: one statement run over the
    list. Pages the inventory does not hold are left: an inspection, an audit or a PageSpeed
    result alone makes no page."""
    if not facts:
        return
    names = list(next(iter(facts.values())))
    table = _table()
    statement = (
        update(table)
        .where(table.c.tenant_id == tenant_id, table.c.url_hash == bindparam("_hash"))
        .values(**{name: bindparam(f"_{name}") for name in names}, **same, updated_at=utcnow())
    )
    rows = [
        {"_hash": key, **{f"_{name}": value for name, value in columns.items()}}
        for key, columns in facts.items()
    ]
    connection = await session.connection()
    await connection.execute(statement, rows)


async def open_findings(
    session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID, url_hash: str
) -> list[tuple[str, str, str, dict[str, Any]]]:
    """The findings of the audit on the URL still open (not `fixed`): check, severity, category
    and evidence, most severe first."""
    statement = (
        select(
            SeoAuditFinding.check_id,
            SeoAuditIssue.severity,
            SeoAuditIssue.category,
            SeoAuditFinding.evidence,
        )
        .join(
            SeoAuditIssue,
            (SeoAuditIssue.audit_id == SeoAuditFinding.audit_id)
            & (SeoAuditIssue.check_id == SeoAuditFinding.check_id),
        )
        .where(
            SeoAuditFinding.tenant_id == tenant_id,
            SeoAuditFinding.audit_id == audit_id,
            SeoAuditFinding.url_hash == url_hash,
            SeoAuditFinding.change != "fixed",
            SeoAuditIssue.tenant_id == tenant_id,
        )
        .order_by(SeoAuditIssue.severity_rank, SeoAuditFinding.check_id)
    )
    found = await session.execute(statement)
    return [(check, severity, category, evidence) for check, severity, category, evidence in found]


# --- the facts it is made from ------------------------------------------------------------------


async def page_figures(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    before: date,
    first: date,
    last: date,
) -> list[tuple[str, int, int, float, int]]:
    """(page, clicks, impressions, position_sum) of each page of the property's web search in
    [first, last], and its clicks in [before, first): one grouped read of the two windows."""
    current = SeoPageDay.day >= first
    statement = (
        select(
            SeoPageDay.page,
            func.sum(case((current, SeoPageDay.clicks), else_=0)),
            func.sum(case((current, SeoPageDay.impressions), else_=0)),
            func.sum(case((current, SeoPageDay.position_sum), else_=0.0)),
            func.sum(case((current, 0), else_=SeoPageDay.clicks)),
        )
        .where(
            SeoPageDay.tenant_id == tenant_id,
            SeoPageDay.property_id == property_id,
            SeoPageDay.search_type == "web",
            SeoPageDay.day >= before,
            SeoPageDay.day <= last,
        )
        .group_by(SeoPageDay.page)
    )
    return [
        (page, int(clicks or 0), int(shown or 0), float(position or 0), int(earlier or 0))
        for page, clicks, shown, position, earlier in (await session.execute(statement)).tuples()
    ]


async def completed_inspections(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID | None
) -> list[tuple[uuid.UUID, str, str | None]]:
    """(id, URL, verdict) of the completed inspections of the run (of the tenant when None),
    oldest first, so the newest of a URL comes last."""
    statement = (
        select(SeoUrlInspection.id, SeoUrlInspection.url, SeoUrlInspection.verdict)
        .where(SeoUrlInspection.tenant_id == tenant_id, SeoUrlInspection.status == "completed")
        .order_by(SeoUrlInspection.completed_at, SeoUrlInspection.created_at)
    )
    if run_id is not None:
        statement = statement.where(SeoUrlInspection.run_id == run_id)
    return list((await session.execute(statement)).tuples())


# --- reads --------------------------------------------------------------------------------------


get = Owned(SeoPage)


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    search: str | None,
    source: str,
    indexable: bool | None,
    has_issues: bool | None,
    severity: str | None,
    verdict: str | None,
    sort_by: str,
    descending: bool,
    limit: int,
    offset: int,
) -> tuple[list[SeoPage], int]:
    """The tenant's pages as filtered, in the order asked then by id (empty values last)."""
    statement = select(SeoPage).where(SeoPage.tenant_id == tenant_id)
    if search:
        needle = search.lower()
        statement = statement.where(
            or_(
                func.lower(SeoPage.url).contains(needle, autoescape=True),
                func.lower(func.coalesce(SeoPage.title, "")).contains(needle, autoescape=True),
            )
        )
    if source != "all":
        flag = {
            "snapshot": SeoPage.in_snapshot,
            "search_console": SeoPage.in_search_console,
            "published": SeoPage.published,
        }[source]
        statement = statement.where(flag.is_(True))
    if indexable is not None:
        statement = statement.where(SeoPage.indexable.is_(indexable))
    if has_issues is not None:
        issues = SeoPage.open_issues > 0
        statement = statement.where(
            issues if has_issues else or_(SeoPage.open_issues.is_(None), SeoPage.open_issues == 0)
        )
    if severity is not None:
        statement = statement.where(SeoPage.highest_severity == severity)
    if verdict is not None:
        statement = statement.where(SeoPage.inspection_verdict == verdict)
    column = SORTS[sort_by]
    order = column.desc() if descending else column.asc()
    if column.nullable:
        # Only where a null can be: NULLS LAST on a column never null keeps PostgreSQL from
        # reading its index backwards (models.PAGE_NULLABLE_SORTS has the index for it).
        order = order.nulls_last()
    tie = SeoPage.id.desc() if descending else SeoPage.id.asc()
    return await page_of(session, statement, order, tie, limit=limit, offset=offset)


async def series(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    pages: Sequence[str],
    first: date,
    last: date,
) -> list[tuple[date, int, int, float]]:
    """(day, clicks, impressions, position_sum) of these page URLs' web search, by day."""
    statement = (
        select(
            SeoPageDay.day,
            func.sum(SeoPageDay.clicks),
            func.sum(SeoPageDay.impressions),
            func.sum(SeoPageDay.position_sum),
        )
        .where(
            SeoPageDay.tenant_id == tenant_id,
            SeoPageDay.property_id == property_id,
            SeoPageDay.search_type == "web",
            SeoPageDay.day >= first,
            SeoPageDay.day <= last,
            SeoPageDay.page.in_(list(pages)),
        )
        .group_by(SeoPageDay.day)
        .order_by(SeoPageDay.day)
    )
    return [
        (day, int(clicks or 0), int(shown or 0), float(position or 0))
        for day, clicks, shown, position in (await session.execute(statement)).tuples()
    ]


async def top_queries(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    pages: Sequence[str],
    first: date,
    last: date,
    limit: int,
) -> list[tuple[str, int, int, float]]:
    """(query, clicks, impressions, position_sum) of the queries these page URLs were shown
    for, most clicks first (then impressions, then the query)."""
    clicks = func.sum(SeoQueryDay.clicks)
    shown = func.sum(SeoQueryDay.impressions)
    statement = (
        select(SeoQueryDay.query, clicks, shown, func.sum(SeoQueryDay.position_sum))
        .where(
            and_(
                SeoQueryDay.tenant_id == tenant_id,
                SeoQueryDay.property_id == property_id,
                SeoQueryDay.search_type == "web",
                SeoQueryDay.day >= first,
                SeoQueryDay.day <= last,
                SeoQueryDay.page.in_(list(pages)),
            )
        )
        .group_by(SeoQueryDay.query)
        .order_by(clicks.desc(), shown.desc(), SeoQueryDay.query)
        .limit(limit)
    )
    return [
        (query, int(c or 0), int(i or 0), float(p or 0))
        for query, c, i, p in (await session.execute(statement)).tuples()
    ]


async def inspection(
    session: AsyncSession, tenant_id: uuid.UUID, inspection_id: uuid.UUID
) -> SeoUrlInspection | None:
    statement = select(SeoUrlInspection).where(
        SeoUrlInspection.tenant_id == tenant_id, SeoUrlInspection.id == inspection_id
    )
    return (await session.execute(statement)).scalar_one_or_none()
