"""Every query of the Admin operations. Most look across tenants by nature (the operators'
views of the platform): each says why (`cross_tenant`), and each is one statement however many
tenants there are (subqueries and joins, never a query per tenant).

Other domains' tables are never named here: the statements and columns over them come from
their services (the tenants' list from tenants, a tenant's plan from billing, its credits from
credits, each source's inbound events from team and billing), correlated with the enclosing
query's tenant or event, and are put together here with Admin's own tables."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Select, func, literal, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.admin.models import AdminCreditGrant, ImpersonationSession, InboundReplay
from contentplatform.billing import service as billing
from contentplatform.credits import service as credits
from contentplatform.credits import usage as credit_usage
from contentplatform.kit.db import cross_tenant
from contentplatform.team import service as team
from contentplatform.tenants import service as tenants

# --- tenants ------------------------------------------------------------------------------------


def _summaries(
    now: datetime,
    since: datetime,
    billing_configured: bool,
    *,
    search: str | None = None,
    status: str | None = None,
    plan_id: uuid.UUID | None = None,
) -> tuple[Select[Any], Select[Any]]:
    """The tenants' summaries (tenants' directory, with each tenant's plan and subscription
    status from billing, its credits from credits) and the ids of the same tenants, to count."""
    directory = tenants.directory(search=search, status=status)
    tenant_id = directory.selected_columns.id
    if plan_id is not None:
        plan = billing.plan_id_column(tenant_id, now=now, billing_configured=billing_configured)
        directory = directory.where(plan == plan_id)
    summaries = directory.add_columns(
        billing.plan_id_column(tenant_id, now=now, billing_configured=billing_configured).label(
            "plan_id"
        ),
        billing.subscription_status_column(tenant_id).label("subscription_status"),
        credits.available_column(tenant_id, now).label("credits_available"),
        credit_usage.debited_since_column(tenant_id, since).label("credits_used_30d"),
    )
    return summaries, directory.with_only_columns(tenant_id)


@cross_tenant("the operators' list of every tenant")
async def tenants_page(
    session: AsyncSession,
    *,
    now: datetime,
    since: datetime,
    billing_configured: bool,
    search: str | None,
    status: str | None,
    plan_id: uuid.UUID | None,
    sort_by: str,
    limit: int,
    offset: int,
) -> tuple[list[Row[Any]], int]:
    """One page of tenant summaries (`_summaries`) and how many match, in two statements."""
    summaries, ids = _summaries(
        now, since, billing_configured, search=search, status=status, plan_id=plan_id
    )
    columns = summaries.selected_columns
    orders: dict[str, Any] = {
        "created_at": columns.created_at.desc(),
        "name": func.lower(columns.name),
        "credits_used_30d": columns.credits_used_30d.desc(),
    }
    statement = summaries.order_by(orders[sort_by], columns.id).limit(limit).offset(offset)
    rows = list((await session.execute(statement)).all())
    total = await session.scalar(select(func.count()).select_from(ids.subquery()))
    return rows, int(total or 0)


async def tenant_summary(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    now: datetime,
    since: datetime,
    billing_configured: bool,
) -> Row[Any] | None:
    summaries, _ = _summaries(now, since, billing_configured)
    statement = summaries.where(summaries.selected_columns.id == tenant_id)
    found: Row[Any] | None = (await session.execute(statement)).first()
    return found


async def active_impersonations(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> int:
    """Impersonation sessions open on the tenant (not ended, not expired)."""
    found = await session.scalar(
        select(func.count()).where(
            ImpersonationSession.tenant_id == tenant_id,
            ImpersonationSession.ended_at.is_(None),
            ImpersonationSession.expires_at > now,
        )
    )
    return int(found or 0)


# --- credit grants by key -----------------------------------------------------------------------


@cross_tenant("an idempotency key is unique across the platform; the row names its tenant")
async def grant_by_key(session: AsyncSession, key: str) -> AdminCreditGrant | None:
    return await session.scalar(
        select(AdminCreditGrant).where(AdminCreditGrant.idempotency_key == key)
    )


async def add_grant(session: AsyncSession, tenant_id: uuid.UUID, **values: Any) -> None:
    session.add(AdminCreditGrant(tenant_id=tenant_id, **values))
    await session.flush()


# --- inbound provider events --------------------------------------------------------------------

# Each source's stored events, as its domain lists them (kit/inbound.py `listing`).
SOURCES: dict[str, Callable[[], Select[Any]]] = {
    "identity": team.inbound_events,
    "payments": billing.inbound_events,
}


def _inbound(source: str) -> Select[Any]:
    """The source's events with their source and attempts (1 plus each replay recorded here)."""
    events = SOURCES[source]()
    replays = (
        select(func.count())
        .where(InboundReplay.source == source, InboundReplay.event_id == events.selected_columns.id)
        .correlate_except(InboundReplay)
        .scalar_subquery()
    )
    return events.add_columns(literal(source).label("source"), (replays + 1).label("attempts"))


@cross_tenant("inbound provider events are platform rows; the tenant is read from each")
async def inbound_page(
    session: AsyncSession,
    *,
    sources: Collection[str],
    status: str | None,
    type_: str | None,
    tenant_id: uuid.UUID | None,
    limit: int,
    offset: int,
) -> tuple[list[Row[Any]], int]:
    """Both sources' events in one UNION, newest first: one page and how many match."""
    parts = [_inbound(source) for source in SOURCES if source in sources]
    events = union_all(*parts).subquery("inbound")
    where: list[Any] = []
    if status is not None:
        where.append(events.c.status == status)
    if type_ is not None:
        where.append(events.c.type == type_)
    if tenant_id is not None:
        where.append(events.c.tenant_id == tenant_id)
    rows = (
        await session.execute(
            select(events)
            .where(*where)
            .order_by(events.c.received_at.desc(), events.c.id)
            .limit(limit)
            .offset(offset)
        )
    ).all()
    total = await session.scalar(select(func.count()).select_from(events).where(*where))
    return list(rows), int(total or 0)


@cross_tenant("an inbound event is found by its own id, whichever tenant it names")
async def inbound_event(session: AsyncSession, event_id: uuid.UUID) -> Row[Any] | None:
    """The event of either source, as `inbound_page` shows it."""
    for source in SOURCES:
        part = _inbound(source)
        statement = part.where(part.selected_columns.id == event_id)
        found: Row[Any] | None = (await session.execute(statement)).first()
        if found is not None:
            return found
    return None


@cross_tenant("inbound provider events are platform rows")
async def add_replay(
    session: AsyncSession, source: str, event_id: uuid.UUID, by: str, at: datetime
) -> None:
    """Record an operator's replay of the event (each counts as an attempt)."""
    session.add(InboundReplay(source=source, event_id=event_id, replayed_by=by, created_at=at))
    await session.flush()
