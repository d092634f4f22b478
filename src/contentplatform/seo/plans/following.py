"""Items following their job instances and drafts: a scheduled item is in_progress once a run
took its instance, drafted once the instance wrote its draft, published (with the URL) once the
draft went live, skipped or failed as the instance ended; an approved plan whose scheduled items
all ended is completed. Run by the listeners (listeners.py) and before the reads that show
items. Never commits."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import service as drafts
from contentplatform.job_instances import service as instances
from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import utcnow
from contentplatform.seo.plans import repository

FOLLOWING = ("scheduled", "in_progress", "drafted")
ENDED = ("published", "skipped", "failed")


def _state(instance: JobInstance | None) -> str | None:
    if instance is None:
        return "skipped"
    if instance.status == "pending":
        return "scheduled" if instances.is_waiting(instance) else "in_progress"
    return {
        "running": "in_progress",
        "completed": "drafted",
        "failed": "failed",
        "skipped": "skipped",
    }.get(instance.status)


async def follow(
    session: AsyncSession, tenant_id: uuid.UUID, *, plan_id: uuid.UUID | None = None
) -> int:
    """Items that follow a job instance take its state and its draft's (published with its
    URL); an approved plan whose scheduled items all ended is completed. How many moved."""
    moved = 0
    touched: set[uuid.UUID] = set()
    for row in await repository.following(session, tenant_id):
        if row.job_instance_id is None or (plan_id is not None and row.plan_id != plan_id):
            continue
        instance = await instances.find(session, tenant_id, row.job_instance_id)
        status = _state(instance) or row.status
        draft_id = instance.draft_id if instance is not None else None
        url = published_at = None
        if draft_id is not None:
            draft = await drafts.require_or_none(session, tenant_id, draft_id)
            if draft is not None and draft.status == "published":
                status, url, published_at = "published", draft.published_url, draft.published_at
            elif draft is not None and status in ("scheduled", "in_progress"):
                status = "drafted"
        if (status, draft_id, url) != (row.status, row.draft_id, row.published_url):
            row.status, row.draft_id = status, draft_id
            if url is not None:
                row.published_url, row.published_at = url, published_at
            row.updated_at = utcnow()
            moved += 1
            touched.add(row.plan_id)
    for touched_id in sorted(touched):
        plan = await repository.get(session, tenant_id, touched_id, for_update=True)
        if plan is None or plan.status != "approved":
            continue
        rows = await repository.items(session, tenant_id, plan.id)
        scheduled = [row for row in rows if row.job_instance_id is not None]
        if scheduled and all(row.status in ENDED for row in scheduled):
            plan.status = "completed"
            plan.completed_at = plan.updated_at = utcnow()
    if moved:
        await session.flush()
    return moved
