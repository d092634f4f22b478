"""Every query of the Admin operations. Most look across tenants by nature (the operators'
views of the platform): each says why (`cross_tenant`), and each is one statement however many
tenants there are (subqueries and joins, never a query per tenant)."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Row,
    String,
    and_,
    case,
    cast,
    func,
    literal,
    literal_column,
    or_,
    select,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.admin.models import AdminCreditGrant, ImpersonationSession, InboundReplay
from contentplatform.billing.models import PaymentEvent, Plan, Subscription
from contentplatform.credits.models import (
    CreditBucket,
    CreditLedgerEntry,
    CreditReservation,
    EntryType,
    ReservationStatus,
)
from contentplatform.kit.db import cross_tenant
from contentplatform.kit.sql_time import plan_for_the_spans, spans_table
from contentplatform.team.models import IdentityEvent
from contentplatform.tenants.models import Membership, Tenant

# The subscription statuses on which the subscribed plan applies (billing/service.py).
PAID_STATUSES = ("trialing", "active", "past_due")


def _escaped_like(value: str) -> str:
    return "%" + value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# --- tenants ------------------------------------------------------------------------------------


def _plan_of(now: datetime, billing_configured: bool) -> ColumnElement[Any]:
    """The plan that applies to the row's tenant (billing/service.py `_current_plan`): the
    operator's override until its end, else the subscribed plan on a paid status (when billing
    is configured), else None (the free plan)."""
    subscribed = (
        select(Subscription.plan_id)
        .where(
            Subscription.tenant_id == Tenant.id,
            Subscription.status.in_(PAID_STATUSES),
            literal(billing_configured),
        )
        .limit(1)
        .scalar_subquery()
    )
    override = case(
        (
            and_(
                Tenant.plan_override_id.is_not(None),
                or_(Tenant.plan_override_until.is_(None), Tenant.plan_override_until > now),
            ),
            Tenant.plan_override_id,
        ),
        else_=None,
    )
    return func.coalesce(override, subscribed)


def _summary_columns(now: datetime, since: datetime, billing_configured: bool) -> list[Any]:
    members = (
        select(func.count())
        .where(Membership.tenant_id == Tenant.id, Membership.status == "active")
        .scalar_subquery()
    )
    last_active = (
        select(func.max(Membership.last_active_at))
        .where(Membership.tenant_id == Tenant.id)
        .scalar_subquery()
    )
    remaining = (
        select(func.coalesce(func.sum(CreditBucket.remaining), 0))
        .where(
            CreditBucket.tenant_id == Tenant.id,
            or_(CreditBucket.expires_at.is_(None), CreditBucket.expires_at > now),
        )
        .scalar_subquery()
    )
    held = (
        select(func.coalesce(func.sum(CreditReservation.amount), 0))
        .where(
            CreditReservation.tenant_id == Tenant.id,
            CreditReservation.status == ReservationStatus.held.value,
            CreditReservation.expires_at > now,
        )
        .scalar_subquery()
    )
    used = (
        select(func.coalesce(-func.sum(CreditLedgerEntry.amount), 0))
        .where(
            CreditLedgerEntry.tenant_id == Tenant.id,
            CreditLedgerEntry.entry_type == EntryType.debit.value,
            CreditLedgerEntry.created_at >= since,
        )
        .scalar_subquery()
    )
    subscription_status = (
        select(Subscription.status).where(Subscription.tenant_id == Tenant.id).limit(1)
    ).scalar_subquery()
    return [
        Tenant.id,
        Tenant.idp_org_id,
        Tenant.name,
        Tenant.status,
        _plan_of(now, billing_configured).label("plan_id"),
        func.coalesce(subscription_status, "none").label("subscription_status"),
        members.label("members"),
        (remaining - held).label("credits_available"),
        used.label("credits_used_30d"),
        Tenant.created_at,
        last_active.label("last_active_at"),
    ]


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
    """One page of tenant summaries (`_summary_columns`) and how many match, in two
    statements."""
    columns = _summary_columns(now, since, billing_configured)
    where: list[Any] = []
    if search:
        pattern = _escaped_like(search.lower())
        where.append(
            or_(
                func.lower(Tenant.name).like(pattern, escape="\\"),
                func.lower(Tenant.idp_org_id).like(pattern, escape="\\"),
            )
        )
    if status is not None:
        where.append(Tenant.status == status)
    if plan_id is not None:
        where.append(_plan_of(now, billing_configured) == plan_id)
    order: list[Any] = {
        "created_at": [Tenant.created_at.desc()],
        "name": [func.lower(Tenant.name)],
        "credits_used_30d": [columns[8].desc()],
    }[sort_by]  # type: ignore[assignment]
    statement = (
        select(*columns).where(*where).order_by(*order, Tenant.id).limit(limit).offset(offset)
    )
    rows = list((await session.execute(statement)).all())
    total = await session.scalar(select(func.count()).select_from(Tenant).where(*where))
    return rows, int(total or 0)


async def tenant_summary(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    now: datetime,
    since: datetime,
    billing_configured: bool,
) -> Row[Any] | None:
    statement = select(*_summary_columns(now, since, billing_configured)).where(
        Tenant.id == tenant_id
    )
    return (await session.execute(statement)).first()


async def usage_by_kind(
    session: AsyncSession, tenant_id: uuid.UUID, since: datetime
) -> list[tuple[str, int, int]]:
    """The tenant's debits since `since` by kind: (kind, credits, operations), by kind's name."""
    operation = func.coalesce(CreditLedgerEntry.reservation_id, CreditLedgerEntry.id)
    statement = (
        select(
            CreditLedgerEntry.kind,
            -func.sum(CreditLedgerEntry.amount),
            func.count(operation.distinct()),
        )
        .where(
            CreditLedgerEntry.tenant_id == tenant_id,
            CreditLedgerEntry.entry_type == EntryType.debit.value,
            CreditLedgerEntry.created_at >= since,
        )
        .group_by(CreditLedgerEntry.kind)
    )
    found = [
        (kind or "other", int(used or 0), int(count))
        for kind, used, count in await session.execute(statement)
    ]
    return sorted(found)


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


# --- usage across the platform ------------------------------------------------------------------


def _group_column(group_by: str, now: datetime, billing_configured: bool) -> Any:
    if group_by == "tenant":
        return cast(CreditLedgerEntry.tenant_id, String)
    if group_by == "kind":
        return CreditLedgerEntry.kind
    # The tenant's current plan's key (the free plan's when none applies).
    plan = (
        select(Plan.key)
        .select_from(Tenant)
        .join(Plan, Plan.id == _plan_of(now, billing_configured))
        .where(Tenant.id == CreditLedgerEntry.tenant_id)
        .scalar_subquery()
    )
    return func.coalesce(plan, "free")


@cross_tenant("the platform's consumption, every tenant's debits added up")
async def usage_totals(
    session: AsyncSession,
    spans: Sequence[tuple[datetime, datetime]],
    group_by: str,
    *,
    now: datetime,
    billing_configured: bool,
) -> list[tuple[Any, ...]]:
    """Every tenant's debits added up per span, per group and per model in one statement:
    (span, group, model, credits, operations, input_tokens, output_tokens)."""
    await plan_for_the_spans(session)
    table = spans_table(spans)
    group = _group_column(group_by, now, billing_configured).label("grp")
    operation = func.coalesce(CreditLedgerEntry.reservation_id, CreditLedgerEntry.id)
    keys = [table.c.idx.label("span"), group, CreditLedgerEntry.model]
    statement = (
        select(*keys)
        .add_columns(
            (-func.sum(CreditLedgerEntry.amount)).label("credits"),
            func.count(operation.distinct()).label("operations"),
            func.coalesce(func.sum(CreditLedgerEntry.input_tokens), 0).label("input_tokens"),
            func.coalesce(func.sum(CreditLedgerEntry.output_tokens), 0).label("output_tokens"),
        )
        .select_from(table)
        .join(
            CreditLedgerEntry,
            and_(
                CreditLedgerEntry.entry_type == EntryType.debit.value,
                CreditLedgerEntry.created_at >= table.c.start,
                CreditLedgerEntry.created_at < table.c.end,
            ),
        )
        # By the group's output name: its expression holds bound values (the plan's), which
        # PostgreSQL would not match between the select list and a repeated GROUP BY.
        .group_by(table.c.idx, literal_column("grp"), CreditLedgerEntry.model)
    )
    return [tuple(row) for row in await session.execute(statement)]


@cross_tenant("how many tenants consumed anything in the period")
async def active_tenants(session: AsyncSession, start: datetime, end: datetime) -> int:
    found = await session.scalar(
        select(func.count(CreditLedgerEntry.tenant_id.distinct())).where(
            CreditLedgerEntry.entry_type == EntryType.debit.value,
            CreditLedgerEntry.created_at >= start,
            CreditLedgerEntry.created_at < end,
        )
    )
    return int(found or 0)


# --- inbound provider events --------------------------------------------------------------------


def _identity_events() -> Any:
    # An organization event names the organization itself; a membership or an invitation names
    # it as `organization`; a user event names none.
    org = case(
        (
            IdentityEvent.type.like("organization.%"),
            IdentityEvent.payload["data"]["id"].as_string(),
        ),
        else_=IdentityEvent.payload["data"]["organization"]["id"].as_string(),
    )
    tenant = select(Tenant.id).where(Tenant.idp_org_id == org).limit(1).scalar_subquery()
    return _inbound_columns(IdentityEvent, "identity", tenant)


def _payment_events() -> Any:
    customer = PaymentEvent.payload["data"]["object"]["customer"].as_string()
    tenant = (
        select(Subscription.tenant_id)
        .where(Subscription.customer_id == customer)
        .limit(1)
        .scalar_subquery()
    )
    return _inbound_columns(PaymentEvent, "payments", tenant)


def _inbound_columns(model: Any, source: str, tenant: Any) -> Any:
    replays = (
        select(func.count())
        .where(InboundReplay.source == source, InboundReplay.event_id == model.id)
        .scalar_subquery()
    )
    return select(
        model.id.label("id"),
        literal(source).label("source"),
        model.event_id.label("provider_event_id"),
        model.type.label("type"),
        tenant.label("tenant_id"),
        model.status.label("status"),
        (replays + 1).label("attempts"),
        model.error.label("error"),
        model.created_at.label("received_at"),
        model.processed_at.label("processed_at"),
    )


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
    parts = []
    if "identity" in sources:
        parts.append(_identity_events())
    if "payments" in sources:
        parts.append(_payment_events())
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
    for part, model in ((_identity_events(), IdentityEvent), (_payment_events(), PaymentEvent)):
        found = (await session.execute(part.where(model.id == event_id))).first()
        if found is not None:
            return found
    return None


@cross_tenant("inbound provider events are platform rows")
async def reset_for_replay(
    session: AsyncSession, source: str, event_id: uuid.UUID, by: str, at: datetime
) -> None:
    """Back to `received` (its error cleared), the replay recorded."""
    model: Any = IdentityEvent if source == "identity" else PaymentEvent
    row = await session.get(model, event_id, with_for_update=True)
    assert row is not None, "found just before"
    row.status, row.error, row.processed_at = "received", None, None
    session.add(InboundReplay(source=source, event_id=event_id, replayed_by=by, created_at=at))
    await session.flush()
