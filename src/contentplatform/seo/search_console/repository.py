"""Every query on Search Console's stored facts, the tenant first: a day's rows replaced whole,
or many days without impressions at once (what the sync calls), and the reads of
queryPerformance and the insights."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import (
    String,
    Table,
    any_,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import json_dumps, utcnow
from contentplatform.seo.connections import offline
from contentplatform.seo.models import (
    SeoPageDay,
    SeoProperty,
    SeoQueryDay,
    SeoSiteDay,
    SeoSyncedDay,
)
from contentplatform.seo.search_console.schemas import Figures, PageRow, QueryRow

__all__ = ["Figures", "PageRow", "QueryRow", "replace_day", "replace_empty_days"]


# Rows per INSERT statement: bounded so a 25,000-row day is a few executemany batches, not one
# statement whose parameters pass a driver's limit.
_BATCH = 5_000
# Days per `day IN (...)`: well within every driver's parameter limit.
_DAYS = 500


def _table(model: type[Any]) -> Table:
    """A model's table, for statements run many times over with a list of parameters."""
    table: Table = model.__table__
    return table


async def replace_day(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    search_type: str,
    day: date,
    *,
    site: Figures,
    pages: Sequence[PageRow],
    queries: Sequence[QueryRow],
    is_final: bool,
    run_id: uuid.UUID | None,
) -> int:
    """Replace the day's three facts of the property and search type with these rows, mark the
    day synced (final or fresh) and move the property's `final_through` / `fresh_through`
    forward; how many rows were written (1 + pages + queries).

    The caller's unit of work makes it atomic: a reader sees the old day or the new one. The
    rows are written with the Core table's executemany (no ORM objects): the backfill writes
    25,000 query rows a day for 16 months. Country and device are stored lowercase (`usa`,
    `mobile`), as queryPerformance filters and answers them, whatever case Google sent."""
    for model in (SeoSiteDay, SeoPageDay, SeoQueryDay):
        await session.execute(
            delete(model).where(
                model.tenant_id == tenant_id,
                model.property_id == property_id,
                model.search_type == search_type,
                model.day == day,
            )
        )
    key = {
        "tenant_id": tenant_id,
        "property_id": property_id,
        "search_type": search_type,
        "day": day,
    }
    await session.execute(
        insert(_table(SeoSiteDay)),
        [
            {
                **key,
                "clicks": site.clicks,
                "impressions": site.impressions,
                "position_sum": site.position_sum,
            }
        ],
    )
    page_rows = [
        {
            **key,
            "page": row.page,
            "country": row.country.lower(),
            "device": row.device.lower(),
            "clicks": row.clicks,
            "impressions": row.impressions,
            "position_sum": row.position * row.impressions,
        }
        for row in pages
    ]
    query_rows = [
        {
            **key,
            "query": row.query,
            "page": row.page,
            "country": row.country.lower(),
            "device": row.device.lower(),
            "clicks": row.clicks,
            "impressions": row.impressions,
            "position_sum": row.position * row.impressions,
        }
        for row in queries
    ]
    for table, rows in ((_table(SeoPageDay), page_rows), (_table(SeoQueryDay), query_rows)):
        for start in range(0, len(rows), _BATCH):
            await session.execute(insert(table), rows[start : start + _BATCH])
    written = 1 + len(page_rows) + len(query_rows)
    now = utcnow()
    synced = {"is_final": is_final, "rows": written, "run_id": run_id, "synced_at": now}
    await _mark_synced(session, tenant_id, [{**key, **synced}])
    await _move_through(session, tenant_id, property_id, day, is_final=is_final, now=now)
    return written


async def replace_empty_days(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    search_type: str,
    days: Sequence[date],
    *,
    run_id: uuid.UUID | None,
) -> int:
    """`replace_day` of final days without impressions, all in the caller's transaction and a
    few statements whatever their number (a new property's 16 months): each stored as the
    site's zeros, marked synced final; how many rows were written (one a day)."""
    if not days:
        return 0
    key = {"tenant_id": tenant_id, "property_id": property_id, "search_type": search_type}
    for start in range(0, len(days), _DAYS):
        chunk = list(days[start : start + _DAYS])
        for model in (SeoSiteDay, SeoPageDay, SeoQueryDay):
            await session.execute(
                delete(model).where(
                    model.tenant_id == tenant_id,
                    model.property_id == property_id,
                    model.search_type == search_type,
                    model.day.in_(chunk),
                )
            )
    zeros = {"clicks": 0, "impressions": 0, "position_sum": 0.0}
    await session.execute(insert(_table(SeoSiteDay)), [{**key, "day": d, **zeros} for d in days])
    now = utcnow()
    synced = {"is_final": True, "rows": 1, "run_id": run_id, "synced_at": now}
    await _mark_synced(session, tenant_id, [{**key, "day": day, **synced} for day in days])
    await _move_through(session, tenant_id, property_id, max(days), is_final=True, now=now)
    return len(days)


async def _mark_synced(
    session: AsyncSession, tenant_id: uuid.UUID, rows: list[dict[str, object]]
) -> None:
    """The tenant's SeoSyncedDay rows (property, search type, day, is_final, rows, run,
    synced_at) inserted or updated in place, in one statement run over the list."""
    rows = [{**row, "tenant_id": tenant_id} for row in rows]
    upsert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = upsert(_table(SeoSyncedDay))
    kept = ("is_final", "rows", "run_id", "synced_at")
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["tenant_id", "property_id", "search_type", "day"],
            set_={name: statement.excluded[name] for name in kept},
        ),
        rows,
    )


async def _move_through(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    day: date,
    *,
    is_final: bool,
    now: object,
) -> None:
    """`fresh_through` is the latest day stored, `final_through` the latest final one; neither
    goes back (a backfill writes old days after new ones), in one UPDATE so two syncs of the
    same property cannot lose each other's move."""

    def later(column: object) -> object:
        return case(
            ((column.is_(None)) | (column < day), day),  # type: ignore[attr-defined,operator]
            else_=column,
        )

    values: dict[str, object] = {
        "fresh_through": later(SeoProperty.fresh_through),
        "last_synced_at": now,
    }
    if is_final:
        values["final_through"] = later(SeoProperty.final_through)
    await session.execute(
        update(SeoProperty)
        .where(SeoProperty.tenant_id == tenant_id, SeoProperty.id == property_id)
        .values(**values)
    )


# --- reads --------------------------------------------------------------------------------------

Fact = type[SeoSiteDay] | type[SeoPageDay] | type[SeoQueryDay]
FACTS: dict[str, Fact] = {"site": SeoSiteDay, "page": SeoPageDay, "query": SeoQueryDay}


@dataclass(frozen=True, slots=True)
class Scope:
    """The rows a read may touch, beside the tenant: its property, search type and days (the
    fact tables' index, so a read never scans another tenant's rows or other days)."""

    property_id: uuid.UUID
    search_type: str
    first: date
    last: date


@dataclass(frozen=True, slots=True)
class Condition:
    """`column` equals `value`, or is one of `values` (sent as one array parameter, however
    many: a regex may match 100,000 distinct queries)."""

    column: str
    value: str | None = None
    values: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Sums:
    clicks: int
    impressions: int
    position_sum: float


@dataclass(frozen=True, slots=True)
class Group:
    keys: dict[str, Any]
    sums: Sums


async def selected_property(session: AsyncSession, tenant_id: uuid.UUID) -> SeoProperty | None:
    """The property chosen on the tenant's Search Console connection, if any (the offline
    provider's, made-up, when it is the one in use: offline.in_use)."""
    return await offline.property_in_use(session, tenant_id)


def _column(fact: Fact, name: str) -> Any:
    return fact.day if name == "date" else getattr(fact, name)


def among(session: AsyncSession, column: Any, values: tuple[str, ...]) -> Any:
    """`column IN values` as one parameter: an array on PostgreSQL, a JSON list on SQLite."""
    if session.get_bind().dialect.name == "postgresql":
        return column == any_(bindparam(None, list(values), type_=ARRAY(String)))
    listed = func.json_each(bindparam(None, json_dumps(list(values)), type_=String))
    return column.in_(select(literal_column("value")).select_from(listed))


def _where(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    fact: Fact,
    scope: Scope,
    conditions: Sequence[Condition],
) -> list[Any]:
    criteria = [
        fact.tenant_id == tenant_id,
        fact.property_id == scope.property_id,
        fact.search_type == scope.search_type,
        fact.day >= scope.first,
        fact.day <= scope.last,
    ]
    for condition in conditions:
        column = _column(fact, condition.column)
        if condition.values is not None:
            criteria.append(among(session, column, condition.values))
        else:
            criteria.append(column == condition.value)
    return criteria


async def distinct_values(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    fact: Fact,
    scope: Scope,
    column: str,
    conditions: Sequence[Condition] = (),
) -> list[str]:
    """Every value of `column` in the scope: what a filter the database cannot run (RE2, a
    case-insensitive contains that must mean the same on both databases) is matched against."""
    statement = (
        select(_column(fact, column))
        .where(*_where(session, tenant_id, fact, scope, conditions))
        .distinct()
    )
    return list((await session.execute(statement)).scalars())


async def values_with_sums(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    fact: Fact,
    scope: Scope,
    column: str,
    conditions: Sequence[Condition] = (),
) -> tuple[list[str], Sums]:
    """`distinct_values`, and the sums of every row they come from, in the same scan (the query
    rows' total the hidden share needs, when the filtered column is the query)."""
    statement = (
        select(
            _column(fact, column),
            func.sum(fact.clicks),
            func.sum(fact.impressions),
            func.sum(fact.position_sum),
        )
        .where(*_where(session, tenant_id, fact, scope, conditions))
        .group_by(_column(fact, column))
    )
    values: list[str] = []
    clicks = impressions = 0
    position_sum = 0.0
    for value, value_clicks, value_impressions, value_position_sum in await session.execute(
        statement
    ):
        values.append(value)
        clicks += int(value_clicks)
        impressions += int(value_impressions)
        position_sum += float(value_position_sum)
    return values, Sums(clicks, impressions, position_sum)


async def totals(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    fact: Fact,
    scope: Scope,
    conditions: Sequence[Condition] = (),
) -> Sums:
    statement = select(
        func.coalesce(func.sum(fact.clicks), 0),
        func.coalesce(func.sum(fact.impressions), 0),
        func.coalesce(func.sum(fact.position_sum), 0.0),
    ).where(*_where(session, tenant_id, fact, scope, conditions))
    clicks, impressions, position_sum = (await session.execute(statement)).one()
    return Sums(int(clicks), int(impressions), float(position_sum))


async def grouped(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    fact: Fact,
    scope: Scope,
    conditions: Sequence[Condition],
    dimensions: Sequence[str],
    *,
    sort_by: str,
    descending: bool,
    limit: int | None,
    offset: int = 0,
) -> tuple[list[Group], int, Sums | None]:
    """One page of the rows grouped by `dimensions`, sorted; with the number of groups and the
    sums over all of them (window functions over the same scan: one read of the facts), or
    None for those when the page is empty."""
    keys = [_column(fact, name).label(f"k_{name}") for name in dimensions]
    clicks = func.sum(fact.clicks)
    impressions = func.sum(fact.impressions)
    position_sum = func.sum(fact.position_sum)
    statement = select(
        *keys,
        clicks.label("clicks"),
        impressions.label("impressions"),
        position_sum.label("position_sum"),
        func.count().over().label("groups"),
        func.sum(clicks).over().label("all_clicks"),
        func.sum(impressions).over().label("all_impressions"),
        func.sum(position_sum).over().label("all_position_sum"),
    ).where(*_where(session, tenant_id, fact, scope, conditions))
    if keys:
        statement = statement.group_by(*(_column(fact, name) for name in dimensions))
    shown: Any = {
        "clicks": clicks,
        "impressions": impressions,
        "ctr": clicks * 1.0 / func.nullif(impressions, 0),
        "position": position_sum / func.nullif(impressions, 0),
        "date": fact.day,
    }[sort_by]
    order = shown.desc() if descending else shown.asc()
    # Ties in a stable order, so pages do not overlap.
    statement = statement.order_by(
        order.nulls_last(), *(_column(fact, name).asc() for name in dimensions)
    )
    if limit is not None:
        statement = statement.limit(limit).offset(offset)
    rows = (await session.execute(statement)).all()
    if not rows or rows[0].groups == 0 or rows[0].impressions is None:
        return [], 0, None
    groups = [
        Group(
            keys={name: row[index] for index, name in enumerate(dimensions)},
            sums=Sums(int(row.clicks), int(row.impressions), float(row.position_sum)),
        )
        for row in rows
    ]
    first = rows[0]
    whole = Sums(int(first.all_clicks), int(first.all_impressions), float(first.all_position_sum))
    return groups, int(first.groups), whole


async def page_days(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, first: date, last: date
) -> list[tuple[date, str, str, str, int, int, float]]:
    """(day, page, country, device, clicks, impressions, position_sum) of the property's web
    page facts of [first, last] (content analytics reads them; it never syncs Google again)."""
    statement = select(
        SeoPageDay.day,
        SeoPageDay.page,
        SeoPageDay.country,
        SeoPageDay.device,
        SeoPageDay.clicks,
        SeoPageDay.impressions,
        SeoPageDay.position_sum,
    ).where(
        SeoPageDay.tenant_id == tenant_id,
        SeoPageDay.property_id == property_id,
        SeoPageDay.search_type == "web",
        SeoPageDay.day >= first,
        SeoPageDay.day <= last,
    )
    return [tuple(row) for row in (await session.execute(statement)).all()]  # type: ignore[misc]


async def top_queries(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    pages: Sequence[str],
    first: date,
    last: date,
    limit: int,
) -> list[tuple[str, int, int, float]]:
    """(query, clicks, impressions, position_sum) of the web queries that showed `pages` in
    [first, last], most clicked first."""
    if not pages:
        return []
    clicks = func.sum(SeoQueryDay.clicks)
    statement = (
        select(
            SeoQueryDay.query,
            clicks,
            func.sum(SeoQueryDay.impressions),
            func.sum(SeoQueryDay.position_sum),
        )
        .where(
            SeoQueryDay.tenant_id == tenant_id,
            SeoQueryDay.property_id == property_id,
            SeoQueryDay.search_type == "web",
            SeoQueryDay.day >= first,
            SeoQueryDay.day <= last,
            SeoQueryDay.page.in_(list(pages)),
        )
        .group_by(SeoQueryDay.query)
        .order_by(clicks.desc(), SeoQueryDay.query)
        .limit(limit)
    )
    return [
        (str(q), int(c or 0), int(i or 0), float(p or 0.0))
        for q, c, i, p in (await session.execute(statement)).all()
    ]
