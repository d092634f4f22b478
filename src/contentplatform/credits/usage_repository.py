"""The queries usage reads the ledger's debits with (credits/usage.py, credits.service): the
debits of a window, one line per commit, totals per span and dimension, credits per resource;
and the operators' platform-wide totals (admin.usageOverview, admin.*Tenant*). Each takes the
tenant first but those (`cross_tenant`); they only read. The rest of the ledger's queries are
repository.py's."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    Row,
    Select,
    String,
    and_,
    case,
    cast,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.credits.models import ActorType, CreditLedgerEntry, EntryType
from contentplatform.kit.db import cross_tenant, page_of
from contentplatform.kit.sql_time import plan_for_the_spans, spans_table

# What `debits` reads of one: every column, as a row rather than an object (a window may hold
# many).
_DEBIT_COLUMNS = tuple(CreditLedgerEntry.__table__.columns)


def _debits_with(tenant_id: uuid.UUID, filters: Mapping[str, Any]) -> list[Any]:
    """The conditions of the tenant's debits whose columns hold `filters`' values (a None value:
    any)."""
    return [
        CreditLedgerEntry.tenant_id == tenant_id,
        CreditLedgerEntry.entry_type == EntryType.debit.value,
        *(getattr(CreditLedgerEntry, k) == v for k, v in filters.items() if v is not None),
    ]


def _debits_in(
    tenant_id: uuid.UUID, start: datetime, end: datetime, filters: Mapping[str, Any]
) -> list[Any]:
    """`_debits_with`, written in [start, end)."""
    return [
        *_debits_with(tenant_id, filters),
        CreditLedgerEntry.created_at >= start,
        CreditLedgerEntry.created_at < end,
    ]


async def debits(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime, kind: str | None
) -> list[Row[Any]]:
    """The tenant's debit rows written in [start, end), oldest first (each column an
    attribute)."""
    statement = select(*_DEBIT_COLUMNS).where(*_debits_in(tenant_id, start, end, {"kind": kind}))
    result = await session.execute(statement.order_by(CreditLedgerEntry.created_at))
    return list(result.all())


# One commit's debit rows (one per bucket it drew on) share their time and everything but the
# bucket, amount and tokens: a commit is a group of them, under its hold (a debit without one
# is its own). PostgreSQL has no max() of a uuid, hence the grouping by each column.
def _commit() -> Any:
    return func.coalesce(CreditLedgerEntry.reservation_id, CreditLedgerEntry.id)


# Every column but those that differ between a commit's rows or are the same for all.
_COMMIT_COLUMNS = tuple(
    column
    for column in CreditLedgerEntry.__table__.columns
    if column.name not in {"id", "tenant_id", "entry_type", "amount", "balance_after", "bucket_id"}
    and column.name not in {"period", "description", "input_tokens", "output_tokens"}
)


def _commits(where: list[Any]) -> Any:
    return (
        select(
            _commit().label("id"),
            *_COMMIT_COLUMNS,
            (-func.sum(CreditLedgerEntry.amount)).label("credits"),
            func.coalesce(func.sum(CreditLedgerEntry.input_tokens), 0).label("input_tokens"),
            func.coalesce(func.sum(CreditLedgerEntry.output_tokens), 0).label("output_tokens"),
        )
        .where(*where)
        .group_by(_commit(), *_COMMIT_COLUMNS)
    )


async def commits_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    filters: Mapping[str, Any],
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """A page of the tenant's committed debits in [start, end), one row per commit (its
    credits and tokens summed over its rows), newest first; `filters`: column -> value, each
    (kind, model, workflow_run_id, job_instance_id) None for any."""
    return await page_of(
        session,
        _commits(_debits_in(tenant_id, start, end, filters)),
        CreditLedgerEntry.created_at.desc(),
        _commit().desc(),
        limit=limit,
        offset=offset,
    )


async def commits_after(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """The next commits of the tenant in [start, end), oldest first, after the commit `after`
    names (its time and id; None: from the start): keyset pages for an export, of at most
    `limit` commits, fewer when commits hold several rows (the walk ends at an empty page).

    Each page groups only its own rows: those from the key's time to that of the `limit`-th
    debit row after the key. Grouping the rest of the window each time made an export of a
    million debits quadratic."""
    since = start if after is None else max(start, after[0])
    beyond: list[Any] = []
    if after is not None:
        at, commit_id = after
        later = (CreditLedgerEntry.created_at == at) & (_commit() > commit_id)
        beyond.append(or_(CreditLedgerEntry.created_at > at, later))
    rows_after_key = _debits_in(tenant_id, since, end, {}) + beyond
    edge = (
        await session.execute(
            select(CreditLedgerEntry.created_at)
            .where(*rows_after_key)
            .order_by(CreditLedgerEntry.created_at)
            .offset(limit - 1)
            .limit(1)
        )
    ).scalar()
    where = rows_after_key
    if edge is not None:
        where = [*where, CreditLedgerEntry.created_at <= edge]
    statement = _commits(where).order_by(CreditLedgerEntry.created_at, _commit()).limit(limit)
    result = await (await session.connection()).execute(statement)
    return [dict(row._mapping) for row in result]


# What a debit is under each dimension usage groups by: its kind, model or workflow, the job it
# was for, the member whose action it was (these two as the text ids recorded; None when not a
# job's or a member's).
DIMENSIONS: dict[str, Any] = {
    "kind": CreditLedgerEntry.kind,
    "model": CreditLedgerEntry.model,
    "workflow": CreditLedgerEntry.workflow_id,
    "job": case((CreditLedgerEntry.resource_type == "job", CreditLedgerEntry.resource_id)),
    "user": case(
        (CreditLedgerEntry.actor_type == ActorType.user.value, CreditLedgerEntry.actor_id)
    ),
}

# What `debit_totals` adds up, per group.
_TOTALS = (
    (-func.sum(CreditLedgerEntry.amount)).label("credits"),
    func.count(_commit().distinct()).label("operations"),
    func.coalesce(func.sum(CreditLedgerEntry.input_tokens), 0).label("input_tokens"),
    func.coalesce(func.sum(CreditLedgerEntry.output_tokens), 0).label("output_tokens"),
)


async def debit_totals(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    spans: Sequence[tuple[datetime, datetime]],
    group_by: Sequence[str],
    filters: Mapping[str, Any],
) -> list[Row[Any]]:
    """The tenant's debits (see `_debits_with` for `filters`) added up in SQL per span
    ([start, end) pairs), per value of each dimension of `group_by` and per model. Each row:
    `span` (its index in `spans`), the dimensions' values in order, `model`, `credits`,
    `operations` (commits: a commit's rows, one per bucket it drew on, share its hold, its time
    and all a dimension reads), `input_tokens` and `output_tokens`."""
    await plan_for_the_spans(session)
    table = spans_table(spans)
    groups = [DIMENSIONS[name].label(f"group_{n}") for n, name in enumerate(group_by)]
    keys = [table.c.idx.label("span"), *groups, CreditLedgerEntry.model]
    statement = _per_span(table, keys, _debits_with(tenant_id, filters)).group_by(*keys)
    return list((await session.execute(statement)).all())


def _per_span(
    table: Any, keys: Sequence[Any], debits: Sequence[ColumnElement[bool]]
) -> Select[Any]:
    """The debits `debits` selects joined to the span of `table` each falls in, selected by
    `keys` beside their totals; the caller groups them."""
    return (
        select(*keys)
        .add_columns(*_TOTALS)
        .select_from(table)
        .join(
            CreditLedgerEntry,
            # No other bound on created_at: SQLite would read the index's range by it, not by
            # the span's.
            and_(
                *debits,
                CreditLedgerEntry.created_at >= table.c.start,
                CreditLedgerEntry.created_at < table.c.end,
            ),
        )
    )


# --- the operators' views (admin.*) -------------------------------------------------------------


def debited_since_column(
    tenant_id: ColumnElement[uuid.UUID], since: datetime
) -> ColumnElement[Any]:
    """Credits debited since `since` by the tenant whose id is the enclosing query's
    `tenant_id` (one statement over many tenants)."""
    return (
        select(func.coalesce(-func.sum(CreditLedgerEntry.amount), 0))
        .where(
            CreditLedgerEntry.tenant_id == tenant_id,
            CreditLedgerEntry.entry_type == EntryType.debit.value,
            CreditLedgerEntry.created_at >= since,
        )
        .correlate_except(CreditLedgerEntry)
        .scalar_subquery()
    )


async def debits_by_kind(
    session: AsyncSession, tenant_id: uuid.UUID, since: datetime
) -> list[tuple[str, int, int]]:
    """The tenant's debits since `since` by kind: (kind, credits, operations), by kind's name
    (a debit of no kind: `other`)."""
    statement = (
        select(CreditLedgerEntry.kind, *_TOTALS[:2])
        .where(*_debits_with(tenant_id, {}), CreditLedgerEntry.created_at >= since)
        .group_by(CreditLedgerEntry.kind)
    )
    found = [
        (kind or "other", int(used or 0), int(count))
        for kind, used, count in await session.execute(statement)
    ]
    return sorted(found)


# What a platform-wide total may group by: a column of the debit, or an expression of its
# tenant's id (say, its tenant's plan).
PlatformGroup = Literal["tenant", "kind"] | Callable[[ColumnElement[uuid.UUID]], ColumnElement[Any]]


def _platform_group(group_by: PlatformGroup) -> Any:
    if group_by == "tenant":
        return cast(CreditLedgerEntry.tenant_id, String)
    if group_by == "kind":
        return CreditLedgerEntry.kind
    assert callable(group_by)
    return group_by(CreditLedgerEntry.tenant_id.expression)


@cross_tenant("the platform's consumption, every tenant's debits added up")
async def platform_totals(
    session: AsyncSession, spans: Sequence[tuple[datetime, datetime]], group_by: PlatformGroup
) -> list[tuple[Any, ...]]:
    """Every tenant's debits added up per span, per group and per model in one statement:
    (span, group, model, credits, operations, input_tokens, output_tokens). The tenant as a
    group is its id as text (the database's spelling)."""
    await plan_for_the_spans(session)
    table = spans_table(spans)
    group = _platform_group(group_by).label("grp")
    keys = [table.c.idx.label("span"), group, CreditLedgerEntry.model]
    debits = [CreditLedgerEntry.entry_type == EntryType.debit.value]
    # By the group's output name: its expression may hold bound values (a plan's), which
    # PostgreSQL would not match between the select list and a repeated GROUP BY.
    statement = _per_span(table, keys, debits).group_by(
        table.c.idx, literal_column("grp"), CreditLedgerEntry.model
    )
    return [tuple(row) for row in await session.execute(statement)]


@cross_tenant("how many tenants consumed anything in the period")
async def active_tenants(session: AsyncSession, start: datetime, end: datetime) -> int:
    """How many tenants have a debit in [start, end)."""
    found = await session.scalar(
        select(func.count(CreditLedgerEntry.tenant_id.distinct())).where(
            CreditLedgerEntry.entry_type == EntryType.debit.value,
            CreditLedgerEntry.created_at >= start,
            CreditLedgerEntry.created_at < end,
        )
    )
    return int(found or 0)


async def debited_by_resource(
    session: AsyncSession, tenant_id: uuid.UUID, resource_type: str, start: datetime, end: datetime
) -> dict[str, int]:
    """Credits debited in [start, end) for each resource of this type, by its id."""
    statement = (
        select(CreditLedgerEntry.resource_id, func.sum(CreditLedgerEntry.amount))
        .where(
            CreditLedgerEntry.tenant_id == tenant_id,
            CreditLedgerEntry.entry_type == EntryType.debit.value,
            CreditLedgerEntry.resource_type == resource_type,
            CreditLedgerEntry.created_at >= start,
            CreditLedgerEntry.created_at < end,
        )
        .group_by(CreditLedgerEntry.resource_id)
    )
    rows = (await session.execute(statement)).tuples()
    return {resource_id: -int(amount or 0) for resource_id, amount in rows if resource_id}
