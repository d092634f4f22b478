"""seoPlans.approve: a draft plan's accepted items made job instances of one job (topic_source
seo_plan), and the scheduling the items' edits share. Never commits."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.job_instances import service as instances
from contentplatform.job_instances.errors import InstanceDateTaken
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs import schemas as job_schemas
from contentplatform.jobs import service as jobs
from contentplatform.jobs.errors import JobNotFound
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError
from contentplatform.publishers import service as publishers
from contentplatform.publishers.errors import ConnectionNotFound
from contentplatform.seo import service as seo
from contentplatform.seo.actions import service as actions
from contentplatform.seo.models import SeoPlanItem
from contentplatform.seo.plans import repository, schemas
from contentplatform.seo.plans.errors import IllegalPlanTransition, NothingToApprove
from contentplatform.seo.plans.service import answer, require_plan
from contentplatform.seo.rank import schemas as rank_schemas
from contentplatform.seo.rank import service as rank
from contentplatform.tenants import service as tenants

# An item's job instance runs at this hour of its target date in the tenant's zone; a second
# item of the same day SAME_DAY_STEP later, and so on.
PUBLISH_AT = time(9, 0)
SAME_DAY_STEP = timedelta(minutes=15)


def instant_of(day: date, ordinal: int, timezone: str) -> datetime:
    """When the item's instance runs: PUBLISH_AT of its day in the zone (DST-safe through
    zoneinfo), the day's later items SAME_DAY_STEP apart; in UTC."""
    local = datetime.combine(day, PUBLISH_AT, tzinfo=ZoneInfo(timezone)) + ordinal * SAME_DAY_STEP
    return local.astimezone(UTC)


def instructions_of(row: SeoPlanItem) -> str:
    brief = row.brief or {}
    lines = [str(brief.get("instructions") or f"Primary keyword: {row.primary_keyword}.")]
    if brief.get("outline"):
        lines.append("Outline:\n" + "\n".join(f"- {line}" for line in brief["outline"]))
    if brief.get("questions"):
        lines.append("Answer:\n" + "\n".join(f"- {line}" for line in brief["questions"]))
    if brief.get("word_count_target"):
        lines.append(f"About {brief['word_count_target']} words.")
    return "\n\n".join(lines)[:5000]


async def schedule(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    row: SeoPlanItem,
    timezone: str,
    ordinal: int,
) -> JobInstance:
    """The item's job instance at its date (the next free slot of the day), carrying its title,
    keywords, brief and documents."""
    for step in range(ordinal, ordinal + 96):
        values = instances.new_instance(
            tenant_id, job_id, instant_of(row.target_date, step, timezone)
        )
        values.update(
            topic=row.title,
            keywords=instances.clean_keywords([row.primary_keyword, *row.secondary_keywords]),
            content_instructions=instructions_of(row),
            document_ids=list(row.document_ids) or None,
        )
        if await instances.plan_once(session, values):
            made = values["id"]
            assert isinstance(made, uuid.UUID)
            instance = await instances.find(session, tenant_id, made)
            assert instance is not None
            row.status, row.job_instance_id = "scheduled", instance.id
            return instance
    raise InstanceDateTaken(f"The job has no free time left on {row.target_date.isoformat()}.")


async def start_action(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, row: SeoPlanItem, job_id: uuid.UUID
) -> None:
    """The SEO action an item came from goes in progress with its job and instance, so the
    draft's publication completes it (seo/actions/listeners.py)."""
    if row.seo_action_id is None:
        return
    action = await actions.require(session, tenant_id, row.seo_action_id, for_update=True)
    action.job_id, action.job_instance_id = job_id, row.job_instance_id
    note = f"Planned in an SEO plan: “{row.title}” on {row.target_date.isoformat()}."
    if action.status == "open":
        actions.move(session, action, "in_progress", actor, note)


async def approve(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, data: schemas.ApproveSeoPlanInput
) -> schemas.SeoPlanApproved:
    # The tenant before the plan, as every transaction that locks both (jobs.create locks it).
    await tenants.lock_tenant(session, tenant_id)
    plan = await require_plan(session, tenant_id, data.id, for_update=True)
    if plan.status != "draft":
        raise IllegalPlanTransition(f"The plan is {plan.status}: only a draft plan is approved.")
    rows = await repository.items(session, tenant_id, plan.id, for_update=True)
    wanted = ("accepted", "proposed") if data.include_proposed else ("accepted",)
    chosen = [row for row in rows if row.status in wanted]
    if not chosen:
        raise NothingToApprove(
            "The plan has no accepted item: accept some (seoPlans.updateItem), or approve with "
            "includeProposed."
        )
    timezone = await tenants.timezone_of(session, tenant_id)
    connection = data.publisher_connection_id or plan.publisher_connection_id
    if connection is not None and await publishers.find(session, tenant_id, connection) is None:
        raise ConnectionNotFound(connection)
    planning = (await seo.get(session, tenant_id)).planning
    ordinals: dict[date, int] = {}
    moments = []
    for row in chosen:
        ordinal = ordinals.get(row.target_date, 0)
        ordinals[row.target_date] = ordinal + 1
        moments.append((row, ordinal))
    if data.mode == "new_job":
        fields: dict[str, Any] = {
            "name": plan.name,
            "job_type": "scheduled",
            "scheduled_dates": [instant_of(row.target_date, n, timezone) for row, n in moments],
            "topics": [row.title for row in chosen][:100],
        }
        if connection is not None:
            fields["publisher_connection_id"] = connection
        if data.auto_publish is not None:
            fields["auto_publish"] = data.auto_publish
        if data.auto_publish_threshold is not None:
            fields["auto_publish_threshold"] = round(data.auto_publish_threshold)
        job = await jobs.create(
            session, tenant_id, actor, job_schemas.CreateJobInput(**fields), seo_plan=True
        )
    else:
        job_id = data.job_id or planning.default_job_id
        if job_id is None:
            raise BadRequest(
                "existing_job needs jobId (or settings.planning.default_job_id).",
                errors=[FieldError("jobId", "required for existing_job")],
            )
        found = await jobs.find(session, tenant_id, job_id)
        if found is None:
            raise JobNotFound(job_id)
        job = job_schemas.Job.model_validate(found)
    created = 0
    for row, ordinal in moments:
        await schedule(session, tenant_id, job.id, row, timezone, ordinal)
        await start_action(session, tenant_id, actor, row, job.id)
        created += 1
    if planning.auto_track_keywords:
        await _track(session, tenant_id, actor, plan.month, [row for row, _ in moments])
    now = utcnow()
    plan.status, plan.job_id = "approved", job.id
    plan.approved_by, plan.approved_at, plan.updated_at = actor, now, now
    if connection is not None:
        plan.publisher_connection_id = connection
    return schemas.SeoPlanApproved(
        plan=await answer(session, tenant_id, plan), job=job, instances_created=created
    )


async def _track(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str, month: str, rows: list[SeoPlanItem]
) -> None:
    """settings.planning.auto_track_keywords: the scheduled items' primary keywords tracked
    (in the SEO settings' market and devices), tagged plan:YYYY-MM, checked at the next
    scheduled or manual check; those tracked already, or past the cap, are left as they are."""
    keywords = list(dict.fromkeys(row.primary_keyword for row in rows))
    await rank.add_keywords(
        session,
        runtime.current().settings,
        tenant_id,
        actor,
        rank_schemas.AddTrackedKeywordsInput(
            keywords=keywords, tags=[f"plan:{month}"], check_now=False
        ),
    )
