"""The credits API's operations over the rules: estimates, a client's own holds (reserve,
commit, release), and the pages of reservations and of the ledger. Never commits."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Role, TenantAccess
from contentplatform.credits import buckets, pricing, repository, service
from contentplatform.credits.errors import KindNeedsEditor, NotHoldCreator, ReservationAdopted
from contentplatform.credits.models import (
    ActorType,
    BucketSource,
    CreditLedgerEntry,
    EntryType,
    Owner,
)
from contentplatform.credits.schemas import (
    Actor,
    Committed,
    Estimate,
    EstimateInput,
    LedgerEntry,
    LedgerPage,
    ListLedgerInput,
    ListReservationsInput,
    Reservation,
    ReservationPage,
    ReserveInput,
)
from contentplatform.kit.db import utcnow
from contentplatform.kit.schemas import offset_of

# Kinds a member may not hold credits for through the API: they spend an editor's budget.
EDITOR_KINDS = (
    pricing.INGEST,
    pricing.GENERATION,
    pricing.SITE_PROFILE,
    pricing.RANK_CHECK,
    pricing.KEYWORD_RESEARCH,
    pricing.AI_VISIBILITY,
    pricing.SEO_PLAN,
)
# The resource a client's hold of each kind names (with its resourceId): every kind has one.
RESOURCE_OF_KIND = {
    pricing.INGEST: "document",
    pricing.GENERATION: "draft",
    pricing.CHAT: "conversation",
    pricing.SITE_PROFILE: "crawl_config",
    pricing.RANK_CHECK: "seo_sync_run",
    pricing.KEYWORD_RESEARCH: "seo_keyword_research",
    pricing.AI_VISIBILITY: "seo_sync_run",
    pricing.SEO_PLAN: "seo_plan",
}
assert set(RESOURCE_OF_KIND) == set(pricing.KINDS), "a kind without its resource"


# --- the API's operations -----------------------------------------------------------------------


def caller(tenant: TenantAccess, api_key_subject: str | None) -> tuple[ActorType, str]:
    """The actor a request acts as: its API key, else its member (by user id)."""
    if api_key_subject is not None:
        return ActorType.api_key, api_key_subject
    return ActorType.user, str(tenant.user_id)


async def estimate(session: AsyncSession, tenant_id: uuid.UUID, data: EstimateInput) -> Estimate:
    """The price table's amount for the kind, against what is available now."""
    quoted = service.price(data.kind, content_length=data.content_length)
    available = await buckets.available(session, tenant_id, monthly_grant=None, now=utcnow())
    return Estimate(
        kind=quoted.kind,
        amount=quoted.amount,
        price_basis=quoted.basis,
        available=available,
        sufficient=available >= quoted.amount,
    )


async def reserve_for_client(
    session: AsyncSession,
    tenant: TenantAccess,
    actor: tuple[ActorType, str],
    data: ReserveInput,
) -> Reservation:
    """A client-owned hold (pre-flight) under the key the client will send the operation."""
    if data.kind in EDITOR_KINDS and not tenant.role.includes(Role.editor):
        raise KindNeedsEditor(f"Holding credits for {data.kind} needs the editor role.")
    amount = data.amount or service.price(data.kind, content_length=data.content_length).amount
    return await service.reserve(
        session,
        tenant.tenant_id,
        kind=data.kind,
        idempotency_key=data.idempotency_key,
        amount=amount,
        ttl_seconds=data.ttl_seconds,
        creator=service.Creator(
            owner=Owner.client,
            actor_type=actor[0],
            actor_id=actor[1],
            resource_type=RESOURCE_OF_KIND[data.kind] if data.resource_id else None,
            resource_id=str(data.resource_id) if data.resource_id else None,
        ),
    )


async def commit_for_client(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    actor: tuple[ActorType, str],
    reservation_id: uuid.UUID,
    amount: int,
    description: str | None,
) -> Committed:
    """Settle a client-owned hold at `amount`; the same amount again answers the same."""
    row = await service.hold_row(session, tenant_id, reservation_id)
    if row.owner == Owner.operation:
        raise ReservationAdopted()
    reservation, rows = await service.commit_with_rows(
        session, tenant_id, reservation_id, amount, utcnow(), description, actor, None
    )
    if rows is None:
        entries = [
            _ledger_entry(entry)
            for entry in await repository.entries_of_reservation(session, tenant_id, reservation_id)
        ]
    else:
        entries = [_ledger_entry(CreditLedgerEntry(**values)) for values in rows]
    return Committed(
        reservation=reservation,
        ledger_entry=entries[-1] if entries else None,
        ledger_entries=entries,
    )


async def release_for_client(
    session: AsyncSession,
    tenant: TenantAccess,
    actor: tuple[ActorType, str],
    reservation_id: uuid.UUID,
) -> Reservation:
    """Give back a client-owned hold: its creator's or an admin's to release."""
    row = await service.hold_row(session, tenant.tenant_id, reservation_id)
    if row.created_by != actor[1] and not tenant.role.includes(Role.admin):
        raise NotHoldCreator()
    if row.owner == Owner.operation:
        raise ReservationAdopted()
    return await service.release(session, tenant.tenant_id, reservation_id)


async def list_reservations(
    session: AsyncSession, tenant_id: uuid.UUID, data: ListReservationsInput
) -> ReservationPage:
    now = utcnow()
    rows, total = await repository.reservations_page(
        session,
        tenant_id,
        status=data.status,
        kind=data.kind,
        now=now,
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    return ReservationPage(
        data=[service.as_reservation(row, now) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


async def list_ledger(
    session: AsyncSession, tenant_id: uuid.UUID, data: ListLedgerInput
) -> LedgerPage:
    """The ledger as the balance sees it: this month's grant and due expiries written first."""
    await buckets.settle(session, [tenant_id], None, utcnow(), expire=True)
    rows, total = await repository.ledger_page(
        session,
        tenant_id,
        entry_type=data.type,
        kind=data.kind,
        start=data.start_date,
        end=data.end_date,
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    return LedgerPage(
        data=[_ledger_entry(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


# --- an operator's grants and clawbacks (admin.grantCredits) ------------------------------------


async def grant_by_operator(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    amount: int,
    expires_at: datetime | None,
    reference: str,
    description: str,
    operator: str,
) -> LedgerEntry:
    """An `admin_grant` bucket of `amount` credits (once per `reference`): its `grant` row."""
    bucket = await buckets.grant(
        session,
        tenant_id,
        source=BucketSource.admin_grant.value,
        amount=amount,
        expires_at=expires_at,
        reference=reference,
        description=description,
        actor_type=ActorType.admin.value,
        actor_id=operator,
    )
    row = await repository.grant_entry(session, tenant_id, bucket.id)
    assert row is not None, "a bucket is granted with its row"
    return _ledger_entry(row)


async def claw_back_by_operator(
    session: AsyncSession, tenant_id: uuid.UUID, *, amount: int, description: str, operator: str
) -> LedgerEntry | None:
    """Remove `amount` credits with one `adjustment` row (None: fewer are available)."""
    entry = await buckets.claw_back(
        session,
        tenant_id,
        amount,
        description=description,
        actor=(ActorType.admin, operator),
        now=utcnow(),
    )
    return None if entry is None else _ledger_entry(CreditLedgerEntry(**entry))


async def ledger_entry(
    session: AsyncSession, tenant_id: uuid.UUID, entry_id: uuid.UUID
) -> LedgerEntry | None:
    row = await repository.ledger_entry(session, tenant_id, entry_id)
    return None if row is None else _ledger_entry(row)


def _ledger_entry(row: CreditLedgerEntry) -> LedgerEntry:
    return LedgerEntry(
        id=row.id,
        type=EntryType(row.entry_type),
        kind=row.kind,
        amount=row.amount,
        balance_after=row.balance_after,
        bucket_id=row.bucket_id,
        reservation_id=row.reservation_id,
        resource_type=row.resource_type,
        resource_id=row.resource_id,
        actor=Actor(type=ActorType(row.actor_type or ActorType.system.value), id=row.actor_id),
        description=row.description,
        created_at=row.created_at,
    )
