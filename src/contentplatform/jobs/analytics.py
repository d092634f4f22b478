"""How a job's runs fared: the drafts they wrote, and what became of them."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import service as drafts
from contentplatform.drafts.schemas import Draft
from contentplatform.jobs import schemas
from contentplatform.jobs.service import require
from contentplatform.publishers import attempts as publishing


async def run_history(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.RunHistoryInput
) -> list[Draft]:
    job = await require(session, tenant_id, data.id)
    return await drafts.of_job(session, tenant_id, job.id, data.limit)


async def analytics(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> schemas.JobAnalytics:
    job = await require(session, tenant_id, job_id)
    counts, mean_score = await drafts.job_figures(session, tenant_id, job.id)
    published = counts.get("published", 0)
    return schemas.JobAnalytics(
        totalDrafts=sum(counts.values()),
        approvedDrafts=counts.get("approved", 0) + published,
        publishedDrafts=published,
        avgSeoScore=round(mean_score, 2) if mean_score is not None else 0.0,
        publishSuccessRate=await publishing.success_rate(session, tenant_id, job.id),
    )
