"""Items of a plan by hand: seoPlans.addItem, updateItem, deleteItem. Before approval an item is
edited freely and moves between proposed, accepted and rejected; after approval only while its
job instance is pending, the change mirrored to it. Never commits."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.job_instances import service as instances
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs import service as jobs
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError, require
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.seo.models import SeoPlan, SeoPlanItem
from contentplatform.seo.plans import approval, repository, schemas
from contentplatform.seo.plans.errors import (
    IllegalPlanTransition,
    ItemNotEditable,
    PlanFull,
    SeoPlanItemNotFound,
)
from contentplatform.seo.plans.following import ENDED, FOLLOWING
from contentplatform.seo.plans.service import in_month, item_record, require_plan
from contentplatform.tenants import service as tenants


async def _item(
    session: AsyncSession, tenant_id: uuid.UUID, plan: SeoPlan, item_id: uuid.UUID
) -> SeoPlanItem:
    found = await repository.item(session, tenant_id, plan.id, item_id, for_update=True)
    return require(found, SeoPlanItemNotFound, item_id)


def _brief(data: schemas.SeoPlanBriefInput | None) -> dict[str, Any]:
    if data is None:
        return {"outline": [], "questions": [], "word_count_target": None, "instructions": None}
    return {
        "outline": list(data.outline),
        "questions": list(data.questions),
        "word_count_target": data.word_count_target,
        "instructions": data.instructions,
    }


async def add_item(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, data: schemas.AddSeoPlanItemInput
) -> schemas.SeoPlanItem:
    plan = await require_plan(session, tenant_id, data.id, for_update=True)
    if plan.status in ("generating", "archived", "completed"):
        raise IllegalPlanTransition(f"The plan is {plan.status}: items are not added now.")
    in_month(plan, data.target_date)
    rows = await repository.items(session, tenant_id, plan.id)
    if len(rows) >= schemas.MAX_ITEMS:
        raise PlanFull(f"A plan holds at most {schemas.MAX_ITEMS} items.")
    if data.seo_action_id is not None and not await repository.action(
        session, tenant_id, data.seo_action_id
    ):
        raise BadRequest(
            "seoActionId is not an SEO action of this organization.",
            errors=[FieldError("seoActionId", "no such SEO action")],
        )
    documents = (
        await jobs.checked_documents(session, tenant_id, data.document_ids)
        if data.document_ids
        else []
    )
    row = SeoPlanItem(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        plan_id=plan.id,
        title=data.title,
        primary_keyword=data.primary_keyword.strip().lower(),
        secondary_keywords=list(dict.fromkeys(k.strip().lower() for k in data.secondary_keywords)),
        kind=data.kind,
        target_date=data.target_date,
        target_url=data.target_url,
        source="manual",
        evidence={},
        brief=_brief(data.brief),
        forecast={},
        document_ids=documents,
        seo_action_id=data.seo_action_id,
        ai_prompt_id=data.ai_prompt_id,
        locked=True,
        status="accepted",
        position=sum(1 for other in rows if other.target_date == data.target_date),
    )
    session.add(row)
    await session.flush()
    if plan.status == "approved" and plan.job_id is not None:
        timezone = await tenants.timezone_of(session, tenant_id)
        await approval.schedule(session, tenant_id, plan.job_id, row, timezone, row.position)
        await approval.start_action(session, tenant_id, actor, row, plan.job_id)
    await session.flush()
    await session.refresh(row)
    return item_record(row)


async def _pending(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoPlanItem
) -> JobInstance | None:
    """The item's instance when it has not started; 409 naming its status otherwise. None when
    the item has no instance."""
    if row.job_instance_id is None:
        if row.status in FOLLOWING or row.status in ENDED:
            raise ItemNotEditable(f"The item is {row.status}: it no longer changes.")
        return None
    instance = await instances.find(session, tenant_id, row.job_instance_id)
    if instance is None or not instances.is_waiting(instance):
        state = instances.state_of(instance) if instance is not None else "gone"
        raise ItemNotEditable(
            f"The item's job instance is {state}: only an item whose instance is pending changes."
        )
    return instance


async def update_item(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateSeoPlanItemInput
) -> schemas.SeoPlanItem:
    plan = await require_plan(session, tenant_id, data.id, for_update=True)
    if plan.status in ("generating", "archived", "completed"):
        raise IllegalPlanTransition(f"The plan is {plan.status}: its items do not change now.")
    row = await _item(session, tenant_id, plan, data.item_id)
    instance = await _pending(session, tenant_id, row)
    given = data.model_fields_set
    if "status" in given and data.status is not None and data.status != row.status:
        if instance is not None or row.status not in ("proposed", "accepted", "rejected"):
            raise ItemNotEditable(
                f"The item is {row.status}: only a proposed, accepted or rejected item moves "
                "between those."
            )
        row.status = data.status
    if data.target_date is not None:
        in_month(plan, data.target_date)
        row.target_date = data.target_date
    for name in ("title", "kind", "locked", "position"):
        if name in given and getattr(data, name) is not None:
            setattr(row, name, getattr(data, name))
    if data.primary_keyword is not None:
        row.primary_keyword = data.primary_keyword.strip().lower()
    if data.secondary_keywords is not None:
        row.secondary_keywords = list(
            dict.fromkeys(k.strip().lower() for k in data.secondary_keywords)
        )
    if "target_url" in given:
        row.target_url = data.target_url
    if row.kind == "refresh" and not row.target_url:
        raise BadRequest(
            "A refresh item needs targetUrl.", errors=[FieldError("targetUrl", "required")]
        )
    if data.brief is not None:
        row.brief = _brief(data.brief)
    if data.document_ids is not None:
        row.document_ids = await jobs.checked_documents(session, tenant_id, data.document_ids)
    row.updated_at = utcnow()
    if instance is not None:
        # Mirrored to its pending instance.
        timezone = await tenants.timezone_of(session, tenant_id)
        instance.scheduled_date = approval.instant_of(row.target_date, row.position, timezone)
        instance.topic = row.title
        instance.keywords = instances.clean_keywords([row.primary_keyword, *row.secondary_keywords])
        instance.content_instructions = approval.instructions_of(row)
        instance.document_ids = list(row.document_ids) or None
        instance.updated_at = utcnow()
    await session.flush()
    await session.refresh(row)
    return item_record(row)


async def delete_item(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.SeoPlanItemIdInput
) -> Success:
    plan = await require_plan(session, tenant_id, data.id, for_update=True)
    if plan.status in ("generating", "archived", "completed"):
        raise IllegalPlanTransition(f"The plan is {plan.status}: its items do not change now.")
    row = await _item(session, tenant_id, plan, data.item_id)
    instance = await _pending(session, tenant_id, row)
    if instance is not None:
        instances.skip(instance, "removed from its SEO plan")
    await session.delete(row)
    await session.flush()
    return SUCCESS
