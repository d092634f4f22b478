"""The rules of SEO plans: the list, manual plans, edits, archive and delete, items by hand,
approval into a job, and items following their job instances and drafts. Never commits.
Generation (the signals made a plan) is generation.py, run by durable.py.

States: a plan generating -> draft | failed; draft -> approved -> completed (every scheduled
item ended: published, skipped or failed); draft | failed -> generating (regenerate); any but
generating -> archived. An item proposed <-> accepted | rejected; accepted -> scheduled (its
job instance) -> in_progress -> drafted -> published; scheduled -> skipped | failed.
"""

from __future__ import annotations

import calendar
import math
import uuid
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import pricing
from contentplatform.credits import service as credits
from contentplatform.credits.schemas import Reservation
from contentplatform.job_instances import service as instances
from contentplatform.jobs import service as jobs
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError, require
from contentplatform.kit.schemas import SUCCESS, Success, window_of
from contentplatform.publishers import service as publishers
from contentplatform.publishers.errors import ConnectionNotFound
from contentplatform.seo import service as seo
from contentplatform.seo.models import SeoPlan, SeoPlanItem
from contentplatform.seo.plans import durable, repository, schemas, writer
from contentplatform.seo.plans.errors import (
    DateOutsideMonth,
    IllegalPlanTransition,
    PlanKeyUsed,
    PlanMonthTaken,
    SeoPlanNotFound,
)
from contentplatform.seo.plans.following import follow
from contentplatform.tenants import service as tenants

KIND = pricing.SEO_PLAN
ITEMS_PER_CREDIT = pricing.SEO_PLAN_ITEMS_PER_CREDIT
MONTHS_AHEAD = 12


def hold_for(item_count: int) -> int:
    """The credits a generation holds: 1 per started ITEMS_PER_CREDIT items asked."""
    return max(1, math.ceil(item_count / ITEMS_PER_CREDIT))


async def require_plan(
    session: AsyncSession, tenant_id: uuid.UUID, plan_id: uuid.UUID, *, for_update: bool = False
) -> SeoPlan:
    found = await repository.get(session, tenant_id, plan_id, for_update=for_update)
    return require(found, SeoPlanNotFound, plan_id)


def record(plan: SeoPlan, counts: dict[str, int]) -> schemas.SeoPlan:
    generation = {"status": "none", **(plan.generation or {})}
    return schemas.SeoPlan(
        id=plan.id,
        month=plan.month,
        name=plan.name,
        status=plan.status,
        goals=plan.goals,
        notes=plan.notes,
        item_count=sum(counts.values()),
        counts=schemas.SeoPlanCounts(**counts),
        signals_used=list(plan.signals_used),
        generation=schemas.SeoPlanGeneration.model_validate(generation),
        job_id=plan.job_id,
        publisher_connection_id=plan.publisher_connection_id,
        created_by=plan.created_by,
        approved_by=plan.approved_by,
        approved_at=plan.approved_at,
        completed_at=plan.completed_at,
        archived_at=plan.archived_at,
        created_at=plan.created_at,
        updated_at=plan.updated_at,
    )


def item_record(row: SeoPlanItem) -> schemas.SeoPlanItem:
    return schemas.SeoPlanItem.model_validate(row)


async def answer(session: AsyncSession, tenant_id: uuid.UUID, plan: SeoPlan) -> schemas.SeoPlan:
    await session.flush()
    counts = await repository.counts(session, tenant_id, [plan.id])
    return record(plan, counts.get(plan.id, {}))


# --- months ---------------------------------------------------------------------------------


def month_parts(month: str) -> tuple[int, int]:
    year, number = month.split("-")
    return int(year), int(number)


def month_label(month: str) -> str:
    year, number = month_parts(month)
    return f"{calendar.month_name[number]} {year}"


def today_in(timezone: str) -> date:
    return utcnow().astimezone(ZoneInfo(timezone)).date()


def _check_month(month: str, timezone: str) -> None:
    """The current month of the tenant's zone up to MONTHS_AHEAD months ahead."""
    today = today_in(timezone)
    year, number = month_parts(month)
    ahead = (year - today.year) * 12 + (number - today.month)
    if not 0 <= ahead <= MONTHS_AHEAD:
        message = f"month must be the current month ({today:%Y-%m}) to {MONTHS_AHEAD} months ahead"
        raise BadRequest(f"The {message}.", errors=[FieldError("month", message)])


def in_month(plan: SeoPlan, day: date, field: str = "targetDate") -> None:
    if f"{day:%Y-%m}" != plan.month:
        raise DateOutsideMonth(
            f"{field} {day.isoformat()} is not a day of the plan's month {plan.month}.",
            errors=[FieldError(field, f"must be a day of {plan.month}")],
        )


async def _month_free(session: AsyncSession, tenant_id: uuid.UUID, month: str) -> None:
    taken = await repository.live_of_month(session, tenant_id, month)
    if taken is not None:
        raise PlanMonthTaken(
            f"{month} already has the plan “{taken.name}” ({taken.id}), {taken.status}: archive "
            "it first, or edit it."
        )


# --- reads ----------------------------------------------------------------------------------


async def list_plans(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListSeoPlansInput
) -> schemas.SeoPlanPage:
    rows, total = await repository.page(
        session, tenant_id, status=data.status, year=data.year, **window_of(data)
    )
    counts = await repository.counts(session, tenant_id, [row.id for row in rows])
    return schemas.SeoPlanPage(
        data=[record(row, counts.get(row.id, {})) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


async def detail(
    session: AsyncSession, tenant_id: uuid.UUID, plan_id: uuid.UUID
) -> schemas.SeoPlanDetail:
    plan = await require_plan(session, tenant_id, plan_id)
    await follow(session, tenant_id, plan_id=plan.id)
    rows = await repository.items(session, tenant_id, plan.id)
    base = await answer(session, tenant_id, plan)
    return schemas.SeoPlanDetail(**base.model_dump(), items=[item_record(row) for row in rows])


async def calendar_of(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.SeoPlanCalendarInput
) -> list[schemas.SeoPlanCalendarEntry]:
    if data.end_date < data.start_date or (data.end_date - data.start_date).days > 365:
        message = "endDate must be on or after startDate, at most 366 days of it"
        raise BadRequest(f"{message}.", errors=[FieldError("endDate", message)])
    await follow(session, tenant_id)
    return [
        schemas.SeoPlanCalendarEntry(
            date=row.target_date,
            plan_id=plan.id,
            month=plan.month,
            item_id=row.id,
            title=row.title,
            primary_keyword=row.primary_keyword,
            kind=row.kind,
            item_status=row.status,
            job_id=plan.job_id if row.job_instance_id else None,
            instance_id=row.job_instance_id,
            draft_id=row.draft_id,
            published_url=row.published_url,
        )
        for row, plan in await repository.calendar(
            session, tenant_id, data.start_date, data.end_date, data.status
        )
    ]


# --- plans ----------------------------------------------------------------------------------


async def create(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, data: schemas.CreateSeoPlanInput
) -> schemas.SeoPlan:
    await tenants.lock_tenant(session, tenant_id)
    _check_month(data.month, await tenants.timezone_of(session, tenant_id))
    await _month_free(session, tenant_id, data.month)
    plan = SeoPlan(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        month=data.month,
        name=data.name or f"SEO plan {month_label(data.month)}",
        status="draft",
        goals=data.goals,
        notes=data.notes,
        signals_used=[],
        generation={"status": "none"},
        params={},
        generation_round=0,
        credits_used=0,
        created_by=actor,
    )
    session.add(plan)
    return await answer(session, tenant_id, plan)


async def _shaping(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas._Shaping
) -> dict[str, Any]:
    """What a generation reads: the input over settings.planning's defaults."""
    planning = (await seo.get(session, tenant_id)).planning
    return {
        "item_count": data.item_count or planning.posts_per_month,
        "content_mix": (data.content_mix or planning.content_mix).model_dump(),
        "signals": list(data.signals or schemas.SIGNALS),
        "focus_topics": list(data.focus_topics or []),
        "exclude_keywords": list(data.exclude_keywords or []),
        "publish_weekdays": list(planning.publish_weekdays),
    }


async def _hold(
    session: AsyncSession, tenant_id: uuid.UUID, key: str, amount: int, plan_id: uuid.UUID
) -> Reservation:
    return await credits.reserve(
        session,
        tenant_id,
        kind=KIND,
        idempotency_key=f"{KIND}:{key}"[: credits.MAX_KEY_LENGTH],
        amount=amount,
        monthly_grant=runtime.current().settings.monthly_credit_grant,
        creator=credits.Creator(resource_type="seo_plan", resource_id=str(plan_id)),
    )


def _running() -> dict[str, Any]:
    return {
        "status": "running",
        "step": "queued",
        "percent": 0,
        "provider": writer.PROVIDER,
        "model": writer.MODEL,
        "error": None,
    }


async def generate(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, data: schemas.GenerateSeoPlanInput
) -> schemas.SeoPlan:
    await tenants.lock_tenant(session, tenant_id)
    if data.idempotency_key is not None:
        known = await repository.by_key(session, tenant_id, data.idempotency_key)
        if known is not None:
            return await answer(session, tenant_id, known)
    _check_month(data.month, await tenants.timezone_of(session, tenant_id))
    await _month_free(session, tenant_id, data.month)
    params = await _shaping(session, tenant_id, data)
    if data.publish_weekdays:
        params["publish_weekdays"] = list(data.publish_weekdays)
    for day in data.blackout_dates or []:
        if f"{day:%Y-%m}" != data.month:
            message = f"{day.isoformat()} is not a day of {data.month}"
            raise BadRequest(f"{message}.", errors=[FieldError("blackoutDates", message)])
    params["blackout_dates"] = sorted({day.isoformat() for day in data.blackout_dates or []})
    if data.document_ids is not None:
        params["document_ids"] = await jobs.checked_documents(session, tenant_id, data.document_ids)
    plan = SeoPlan(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        month=data.month,
        name=data.name or f"SEO plan {month_label(data.month)}",
        status="generating",
        signals_used=[],
        generation=_running(),
        params=params,
        generation_round=1,
        idempotency_key=data.idempotency_key,
        credits_used=0,
        created_by=actor,
    )
    session.add(plan)
    await session.flush()
    hold = await _hold(
        session,
        tenant_id,
        data.idempotency_key or f"plan:{plan.id}",
        hold_for(params["item_count"]),
        plan.id,
    )
    if hold.status != "held":
        raise PlanKeyUsed(
            "This idempotencyKey was already spent on a plan since deleted: send another key."
        )
    plan.reservation_id = hold.id
    durable.enqueue_after_commit(session, tenant_id, plan.id, plan.generation_round)
    return await answer(session, tenant_id, plan)


async def regenerate(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.RegenerateSeoPlanInput
) -> schemas.SeoPlan:
    await tenants.lock_tenant(session, tenant_id)
    plan = await require_plan(session, tenant_id, data.id, for_update=True)
    if plan.status not in ("draft", "failed"):
        raise IllegalPlanTransition(
            f"The plan is {plan.status}: only a draft or failed plan is regenerated."
        )
    shaping = await _shaping(session, tenant_id, data)
    params = {**plan.params, **shaping, "keep_accepted": data.keep_accepted}
    if not data.signals and "signals" in plan.params:
        params["signals"] = plan.params["signals"]
    key = data.idempotency_key or f"plan:{plan.id}:{plan.generation_round + 1}"
    hold = await _hold(
        session, tenant_id, f"regenerate:{key}", hold_for(params["item_count"]), plan.id
    )
    if hold.status != "held":
        return await answer(session, tenant_id, plan)  # this key's regeneration already ran
    plan.params = params
    plan.reservation_id = hold.id
    plan.status = "generating"
    plan.generation = _running()
    plan.generation_round += 1
    plan.updated_at = utcnow()
    durable.enqueue_after_commit(session, tenant_id, plan.id, plan.generation_round)
    return await answer(session, tenant_id, plan)


async def update(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateSeoPlanInput
) -> schemas.SeoPlan:
    plan = await require_plan(session, tenant_id, data.id, for_update=True)
    if plan.status in ("generating", "archived"):
        raise IllegalPlanTransition(f"The plan is {plan.status}: it cannot be edited now.")
    given = data.model_fields_set
    if "publisher_connection_id" in given:
        connection = data.publisher_connection_id
        if connection is not None and await publishers.find(session, tenant_id, connection) is None:
            raise ConnectionNotFound(connection)
        plan.publisher_connection_id = connection
    for name in ("name", "goals", "notes"):
        if name in given and (name != "name" or data.name is not None):
            setattr(plan, name, getattr(data, name))
    plan.updated_at = utcnow()
    return await answer(session, tenant_id, plan)


async def delete(session: AsyncSession, tenant_id: uuid.UUID, plan_id: uuid.UUID) -> Success:
    plan = await require_plan(session, tenant_id, plan_id, for_update=True)
    if plan.status in ("generating", "approved"):
        raise IllegalPlanTransition(
            f"The plan is {plan.status}: "
            + ("archive it first." if plan.status == "approved" else "wait for it to end.")
        )
    plan.deleted_at = utcnow()
    plan.idempotency_key = None  # the key may make a new plan
    return SUCCESS


async def archive(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ArchiveSeoPlanInput
) -> schemas.SeoPlan:
    plan = await require_plan(session, tenant_id, data.id, for_update=True)
    if plan.status in ("generating", "archived"):
        raise IllegalPlanTransition(f"The plan is {plan.status}: it cannot be archived now.")
    await follow(session, tenant_id, plan_id=plan.id)
    for row in await repository.items(session, tenant_id, plan.id, for_update=True):
        if row.status != "scheduled" or row.job_instance_id is None:
            continue
        instance = await instances.find(session, tenant_id, row.job_instance_id)
        if instance is not None and instances.is_waiting(instance):
            instances.skip(instance, "plan archived")
            row.status = "skipped"
    now = utcnow()
    plan.status, plan.archived_at, plan.archive_reason = "archived", now, data.reason
    plan.updated_at = now
    return await answer(session, tenant_id, plan)
