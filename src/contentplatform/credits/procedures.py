"""The Credits operations: declarations only; the rules live in service.py and operations.py,
the prices in pricing.py.

Every member reads the balance, the ledger and the holds, and may estimate; reserving
documents.ingest, generation.blog, website_scan.profile, seo.checkRankings,
seo.researchKeywords, seo.runAiVisibility or seoPlans.generate credits needs an editor
(chat.message: any member);
committing a client-owned hold is an admin's; releasing one is its creator's or an admin's.
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.credits import operations, schemas, service
from contentplatform.credits.errors import (
    InsufficientCredits,
    KindNeedsEditor,
    NotHoldCreator,
    ReservationAdopted,
    ReservationNotFound,
    ReservationSettled,
)
from contentplatform.credits.models import ActorType
from contentplatform.kit.schemas import Empty

router = ProcedureRouter("credits", tag="Billing and Credits")


def _caller(ctx: Context) -> tuple[ActorType, str]:
    key = ctx.identity.subject if ctx.identity.auth == "api_key" else None
    return operations.caller(ctx.tenant, key)


@router.get("getBalance", "/v1/credits/balance", access=Access.member)
async def get_balance(ctx: Context, _: Empty) -> schemas.Balance:
    """Available, held and granted credits, by bucket.

    available = the unexpired buckets' remainders (`total`) - open holds (`reserved`). Debits
    draw from the earliest-expiring bucket first; buckets that never expire last. `period` is
    the current calendar month (UTC)."""
    return await service.balance(ctx.session, ctx.tenant.tenant_id)


@router.get("listLedger", "/v1/credits/ledger", access=Access.member)
async def list_ledger(ctx: Context, data: schemas.ListLedgerInput) -> schemas.LedgerPage:
    """Append-only credit ledger, newest first.

    Rows are never updated or deleted. A hold alone writes no row; a commit writes one `debit`
    row per bucket it draws on, and grants, expiries, refunds and adjustments one each. The
    sum of the ledger is the sum of the buckets' remainders; `balance_after` is that sum after
    the row."""
    return await operations.list_ledger(ctx.session, ctx.tenant.tenant_id, data)


@router.get("listReservations", "/v1/credits/reservations", access=Access.member)
async def list_reservations(
    ctx: Context, data: schemas.ListReservationsInput
) -> schemas.ReservationPage:
    """Credit holds and how they settled, newest first.

    A hold past its `expires_at` reads as `expired` at once."""
    return await operations.list_reservations(ctx.session, ctx.tenant.tenant_id, data)


@router.post("estimate", "/v1/credits/estimate", access=Access.member)
async def estimate(ctx: Context, data: schemas.EstimateInput) -> schemas.Estimate:
    """Price a metered operation before running it.

    The same price table sizes the holds the metered operations take (documents.ingest: 1
    credit per started megabyte of `contentLength`; generation.blog and chat.message: their
    configured hold, the most one can cost; website_scan.profile: 10 credits, the most a site
    profile can cost; seo.checkRankings: 1 credit, one SERP page of one keyword and device,
    which a check holds keywords x devices x pages of: seo.checkRankings with `preview` prices a
    whole check; seo.researchKeywords: 1 credit, one keyword-provider request, which a research
    holds one of per seed, or one for metrics; seo.runAiVisibility: 1 credit, one answer of one
    engine to one prompt, which a run holds prompts x engines x samples of; seoPlans.generate:
    1 credit per started ten plan items asked). Deterministic for the same inputs."""
    return await operations.estimate(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "reserve",
    "/v1/credits/reservations",
    access=Access.member,
    errors=[InsufficientCredits, ReservationSettled, KindNeedsEditor],
)
async def reserve(ctx: Context, data: schemas.ReserveInput) -> schemas.Reservation:
    """Hold credits for a kind under an idempotency key (pre-flight).

    Unique per (organization, kind, idempotencyKey): a replay returns the original hold, a
    replay with another amount is 409. `amount` defaults to the estimate. documents.ingest and
    generation.blog holds need an editor. Too few credits: 402 with what is needed and what is
    available. The metered operation called later with the same kind and key adopts this hold
    (`owner` becomes `operation`) instead of taking a second one."""
    return await operations.reserve_for_client(ctx.session, ctx.tenant, _caller(ctx), data)


@router.post(
    "commit",
    "/v1/credits/reservations/{id}/commit",
    access=Access.admin,
    errors=[ReservationNotFound, ReservationSettled, ReservationAdopted],
)
async def commit(ctx: Context, data: schemas.CommitInput) -> schemas.Committed:
    """Settle a client-owned hold at the actual amount; the rest returns to the balance.

    Idempotent: the same amount again answers the same, another amount is 409. Holds adopted
    by an operation settle themselves (409); released or expired holds: 409."""
    return await operations.commit_for_client(
        ctx.session, ctx.tenant.tenant_id, _caller(ctx), data.id, data.amount, data.description
    )


@router.post(
    "release",
    "/v1/credits/reservations/{id}/release",
    access=Access.member,
    errors=[ReservationNotFound, ReservationSettled, ReservationAdopted, NotHoldCreator],
)
async def release(ctx: Context, data: schemas.ReleaseInput) -> schemas.Reservation:
    """Give back a client-owned hold that will not be used.

    Its creator or an admin. Adopted holds: 409; a committed hold: 409. Idempotent on an
    already released (or expired) hold."""
    return await operations.release_for_client(ctx.session, ctx.tenant, _caller(ctx), data.id)
