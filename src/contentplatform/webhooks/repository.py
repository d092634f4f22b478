"""Every query on webhook endpoints, deliveries and attempts; the tenant always comes first
(the fan-out reads the endpoints of the tenants its events belong to, in one query)."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Table, bindparam, delete, func, insert, literal, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import (
    Owned,
    UTCDateTime,
    cross_tenant,
    insert_ignoring_conflicts,
    page_of,
)
from contentplatform.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

endpoint = Owned(WebhookEndpoint)
delivery = Owned(WebhookDelivery)

# Rows per INSERT: well within SQLite's bound parameters (16 columns each).
_CHUNK = 500


async def endpoints(session: AsyncSession, tenant_id: uuid.UUID) -> list[WebhookEndpoint]:
    result = await session.execute(
        select(WebhookEndpoint)
        .where(WebhookEndpoint.tenant_id == tenant_id)
        .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
    )
    return list(result.scalars())


async def endpoint_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    found = await session.scalar(select(func.count()).where(WebhookEndpoint.tenant_id == tenant_id))
    return int(found or 0)


async def subscribers(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID]
) -> list[tuple[uuid.UUID, uuid.UUID, list[str]]]:
    """(tenant, endpoint, event types) of every enabled endpoint of these tenants."""
    if not tenant_ids:
        return []
    result = await session.execute(
        select(WebhookEndpoint.tenant_id, WebhookEndpoint.id, WebhookEndpoint.events).where(
            WebhookEndpoint.tenant_id.in_(tenant_ids), WebhookEndpoint.enabled.is_(True)
        )
    )
    return [(tenant, found, list(events)) for tenant, found, events in result.tuples()]


@cross_tenant("the rows carry their tenants")
async def insert_deliveries(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Store new deliveries; one already there for its endpoint and event is left as it is."""
    dialect = session.get_bind().dialect.name
    insert_ = pg_insert if dialect == "postgresql" else sqlite_insert
    for start in range(0, len(rows), _CHUNK):
        chunk = list(rows[start : start + _CHUNK])
        await session.execute(insert_(WebhookDelivery).values(chunk).on_conflict_do_nothing())


@cross_tenant("the row carries its tenant")
async def add_attempt(session: AsyncSession, values: dict[str, Any]) -> bool:
    """Record an attempt; False when attempt `n` of the delivery was recorded already."""
    result = await session.execute(insert_ignoring_conflicts(session, WebhookAttempt, **values))
    return bool(getattr(result, "rowcount", 0))


async def mark_endpoint(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    *,
    succeeded: bool,
    at: datetime,
) -> None:
    """A delivery attempt's mark on its endpoint: `last_delivery`, and the failure streak (a
    success ends it, a failure starts it unless it runs already)."""
    streak = func.coalesce(WebhookEndpoint.failing_since, literal(at, UTCDateTime()))
    await session.execute(
        update(WebhookEndpoint)
        .where(WebhookEndpoint.tenant_id == tenant_id, WebhookEndpoint.id == endpoint_id)
        .values(
            # Its own settings did not change: updated_at stays.
            updated_at=WebhookEndpoint.updated_at,
            failing_since=None if succeeded else streak,
            last_delivery_status="succeeded" if succeeded else "failed",
            last_delivery_at=at,
        )
        .execution_options(synchronize_session=False)
    )


async def disable_failing(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    *,
    reason: str,
    failing_before: datetime | None,
    at: datetime,
) -> bool:
    """Disable the endpoint for `reason` if it is enabled (and, with `failing_before`, failing
    since then at least); whether this did. One transaction wins, so one says so."""
    criteria = [
        WebhookEndpoint.tenant_id == tenant_id,
        WebhookEndpoint.id == endpoint_id,
        WebhookEndpoint.enabled.is_(True),
    ]
    if failing_before is not None:
        criteria.append(WebhookEndpoint.failing_since <= failing_before)
    result = await session.execute(
        update(WebhookEndpoint)
        .where(*criteria)
        .values(enabled=False, disabled_reason=reason, updated_at=at)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


async def cancel_pending(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    reason: str,
    at: datetime,
) -> None:
    """Every pending delivery of the endpoint cancelled: a step under way records its attempt,
    and nothing is tried after it."""
    await session.execute(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.tenant_id == tenant_id,
            WebhookDelivery.endpoint_id == endpoint_id,
            WebhookDelivery.status == "pending",
        )
        .values(status="cancelled", error=reason, next_attempt_at=None, updated_at=at)
        .execution_options(synchronize_session=False)
    )


async def deliveries(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    *,
    status: str | None,
    event_type: str | None,
    start: datetime | None,
    end: datetime | None,
    limit: int,
    offset: int,
) -> tuple[list[WebhookDelivery], int]:
    """A page of the endpoint's deliveries, newest first."""
    statement = select(WebhookDelivery).where(
        WebhookDelivery.tenant_id == tenant_id, WebhookDelivery.endpoint_id == endpoint_id
    )
    if status is not None:
        statement = statement.where(WebhookDelivery.status == status)
    if event_type is not None:
        statement = statement.where(WebhookDelivery.event_type == event_type)
    if start is not None:
        statement = statement.where(WebhookDelivery.created_at >= start)
    if end is not None:
        statement = statement.where(WebhookDelivery.created_at < end)
    return await page_of(
        session,
        statement,
        WebhookDelivery.created_at.desc(),
        WebhookDelivery.id.desc(),
        limit=limit,
        offset=offset,
    )


async def attempts_of(
    session: AsyncSession, tenant_id: uuid.UUID, delivery_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, list[WebhookAttempt]]:
    """The attempts of each delivery, in order."""
    found: dict[uuid.UUID, list[WebhookAttempt]] = {key: [] for key in delivery_ids}
    if not delivery_ids:
        return found
    result = await session.execute(
        select(WebhookAttempt)
        .where(
            WebhookAttempt.tenant_id == tenant_id,
            WebhookAttempt.delivery_id.in_(delivery_ids),
        )
        .order_by(WebhookAttempt.delivery_id, WebhookAttempt.n)
    )
    for attempt in result.scalars():
        found[attempt.delivery_id].append(attempt)
    return found


async def stats_since(
    session: AsyncSession, tenant_id: uuid.UUID, endpoint_id: uuid.UUID, since: datetime
) -> tuple[int, int, int | None]:
    """(succeeded, failed, median latency in ms) of the endpoint's attempts since `since`."""
    recent = (
        WebhookAttempt.tenant_id == tenant_id,
        WebhookAttempt.endpoint_id == endpoint_id,
        WebhookAttempt.at >= since,
    )
    result = await session.execute(
        select(WebhookAttempt.succeeded, func.count())
        .where(*recent)
        .group_by(WebhookAttempt.succeeded)
    )
    counts = {bool(succeeded): int(count) for succeeded, count in result.tuples()}
    total = sum(counts.values())
    median = None
    if total:
        # The lower median: one row read at an offset, the same on SQLite and PostgreSQL.
        median = await session.scalar(
            select(WebhookAttempt.latency_ms)
            .where(*recent)
            .order_by(WebhookAttempt.latency_ms)
            .limit(1)
            .offset((total - 1) // 2)
        )
    return counts.get(True, 0), counts.get(False, 0), median


async def first_round_pending(
    session: AsyncSession, tenant_id: uuid.UUID, event_id: uuid.UUID
) -> list[WebhookDelivery]:
    """The event's deliveries whose first attempt has not been made yet."""
    result = await session.execute(
        select(WebhookDelivery).where(
            WebhookDelivery.tenant_id == tenant_id,
            WebhookDelivery.event_id == event_id,
            WebhookDelivery.status == "pending",
            WebhookDelivery.round == 0,
            WebhookDelivery.round_attempts == 0,
        )
    )
    return list(result.scalars())


async def endpoints_by_id(
    session: AsyncSession, tenant_id: uuid.UUID, endpoint_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, WebhookEndpoint]:
    result = await session.execute(
        select(WebhookEndpoint).where(
            WebhookEndpoint.tenant_id == tenant_id, WebhookEndpoint.id.in_(endpoint_ids)
        )
    )
    return {found.id: found for found in result.scalars()}


def _table(model: type[Any]) -> Table:
    """A model's table, for statements run many times over with a list of parameters."""
    table: Table = model.__table__
    return table


async def lock_endpoints(
    session: AsyncSession, tenant_id: uuid.UUID, endpoint_ids: Collection[uuid.UUID]
) -> None:
    """Lock these endpoints in one order (by id), the order every transaction taking several
    takes them in (PostgreSQL; SQLite has one writer at a time)."""
    if session.get_bind().dialect.name == "sqlite" or not endpoint_ids:
        return
    await session.execute(
        select(WebhookEndpoint.id)
        .where(WebhookEndpoint.tenant_id == tenant_id, WebhookEndpoint.id.in_(endpoint_ids))
        .order_by(WebhookEndpoint.id)
        .with_for_update()
    )


async def awaiting_first(
    session: AsyncSession, tenant_id: uuid.UUID, delivery_ids: Collection[uuid.UUID]
) -> set[uuid.UUID]:
    """Of these deliveries, those whose first attempt is not recorded yet (pending, or
    cancelled while it was sent), locked."""
    deliveries = WebhookDelivery
    result = await session.execute(
        select(deliveries.id)
        .where(
            deliveries.tenant_id == tenant_id,
            deliveries.id.in_(delivery_ids),
            deliveries.status.in_(("pending", "cancelled")),
            deliveries.round == 0,
            deliveries.round_attempts == 0,
        )
        .order_by(deliveries.id)
        .with_for_update()
    )
    return set(result.scalars())


async def record_first_successes(
    session: AsyncSession, tenant_id: uuid.UUID, marks: Sequence[dict[str, Any]], at: datetime
) -> None:
    """First attempts that succeeded, in three statements whatever their number: the
    deliveries succeeded, their attempts (n 1) added, their endpoints marked. Each mark:
    delivery_id, endpoint_id, at, response_status, latency_ms, response_excerpt."""
    if not marks:
        return
    connection = await session.connection()
    deliveries = _table(WebhookDelivery)
    await connection.execute(
        deliveries.update()
        .where(deliveries.c.tenant_id == tenant_id, deliveries.c.id == bindparam("b_delivery"))
        .values(
            status="succeeded",
            error=None,
            next_attempt_at=None,
            round_attempts=1,
            attempt_count=deliveries.c.attempt_count + 1,
            round_started_at=bindparam("b_at"),
            response_excerpt=bindparam("b_excerpt"),
            updated_at=at,
        ),
        [
            {"b_delivery": m["delivery_id"], "b_at": m["at"], "b_excerpt": m["response_excerpt"]}
            for m in marks
        ],
    )
    await connection.execute(
        insert(_table(WebhookAttempt)),
        [
            {
                "id": uuid.uuid4(),
                "tenant_id": tenant_id,
                "n": 1,
                "succeeded": True,
                "error": None,
                **{key: m[key] for key in ("delivery_id", "endpoint_id", "at", "response_status")},
                "latency_ms": m["latency_ms"],
                "response_excerpt": m["response_excerpt"],
            }
            for m in marks
        ],
    )
    endpoints = _table(WebhookEndpoint)
    await connection.execute(
        endpoints.update()
        .where(endpoints.c.tenant_id == tenant_id, endpoints.c.id == bindparam("b_endpoint"))
        .values(
            failing_since=None, last_delivery_status="succeeded", last_delivery_at=bindparam("b_at")
        ),
        [
            {"b_endpoint": m["endpoint_id"], "b_at": m["at"]}
            for m in sorted(marks, key=lambda m: m["endpoint_id"])
        ],
    )


@cross_tenant("the dispatcher's sweep of every tenant's overdue deliveries")
async def overdue(session: AsyncSession, before: datetime, limit: int) -> list[WebhookDelivery]:
    """Pending deliveries whose next attempt was due before `before` (every tenant's: the
    reconciler's view), oldest first."""
    result = await session.execute(
        select(WebhookDelivery)
        .where(WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at < before)
        .order_by(WebhookDelivery.next_attempt_at)
        .limit(limit)
    )
    return list(result.scalars())


@cross_tenant("retention, over every tenant's deliveries")
async def delete_older_than(session: AsyncSession, cutoff: datetime) -> int:
    """Deliveries created before `cutoff`, with their attempts (every tenant's: retention).
    Looked for first: on SQLite a DELETE takes the one write turn even when it finds nothing."""
    old = WebhookDelivery.created_at < cutoff
    if await session.scalar(select(WebhookDelivery.id).where(old).limit(1)) is None:
        return 0
    result = await session.execute(delete(WebhookDelivery).where(old))
    return int(getattr(result, "rowcount", 0) or 0)


@cross_tenant("the rows carry their tenant")
async def add_delivery_and_attempt(
    session: AsyncSession, delivery_values: dict[str, Any], attempt_values: dict[str, Any]
) -> None:
    """A delivery made whole at once (a test): the row and its one attempt."""
    await session.execute(insert(WebhookDelivery).values(**delivery_values))
    await session.execute(insert(WebhookAttempt).values(**attempt_values))
