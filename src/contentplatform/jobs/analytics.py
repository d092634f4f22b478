"""How a job's runs fared: the drafts they wrote, and what became of them.

`figures` is the one per-job query jobs.getAnalytics (every draft of one job) and
analytics.jobPerformance (the runs and drafts of a period, every job) both read."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import service as drafts
from contentplatform.drafts.schemas import Draft
from contentplatform.job_instances import service as instances
from contentplatform.jobs import repository, schemas
from contentplatform.jobs.models import Job
from contentplatform.jobs.service import require
from contentplatform.publishers import attempts as publishing


async def run_history(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.RunHistoryInput
) -> list[Draft]:
    job = await require(session, tenant_id, data.id)
    return await drafts.of_job(session, tenant_id, job.id, data.limit)


@dataclass
class JobFigures:
    """A job's runs in a period, counted (job_instances.service.RunCounts says which and how),
    and its drafts made in it counted by status, with their mean SEO score (None: none
    scored)."""

    runs: instances.RunCounts = field(default_factory=instances.RunCounts)
    drafts: dict[str, int] = field(default_factory=dict)
    mean_seo_score: float | None = None


async def figures(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    job_ids: list[uuid.UUID] | None = None,
    period: tuple[datetime, datetime, datetime] | None = None,
) -> dict[uuid.UUID, JobFigures]:
    """Per job (these, or every job with runs or drafts in the period), its drafts made in
    `period` ([start, end), and the instant runs in flight since before are stalled) and its
    runs there; without a period, every draft and no run. A job asked for that has none has
    empty figures. Both counted in the database."""
    found: dict[uuid.UUID, JobFigures] = {job_id: JobFigures() for job_id in job_ids or ()}
    start = end = None
    if period is not None:
        start, end, stalled_before = period
        counted = await instances.run_counts(
            session,
            tenant_id,
            [(start, end)],
            stalled_before=stalled_before,
            job_ids=job_ids,
            by_job=True,
        )
        for (_, job_id), runs in counted.items():
            assert job_id is not None, "counted per job"
            found.setdefault(job_id, JobFigures()).runs = runs
    written = await drafts.job_figures(session, tenant_id, job_ids=job_ids, start=start, end=end)
    for job_id, (counts, mean_score) in written.items():
        each = found.setdefault(job_id, JobFigures())
        each.drafts, each.mean_seo_score = counts, mean_score
    return found


async def every(session: AsyncSession, tenant_id: uuid.UUID, status: str | None) -> list[Job]:
    """The organization's live jobs (of this status), oldest first."""
    return await repository.every(session, tenant_id, status)


async def with_ids(
    session: AsyncSession, tenant_id: uuid.UUID, job_ids: list[uuid.UUID]
) -> list[Job]:
    """These jobs of the organization, deleted ones too."""
    return await repository.with_ids(session, tenant_id, job_ids) if job_ids else []


async def analytics(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> schemas.JobAnalytics:
    job = await require(session, tenant_id, job_id)
    mine = (await figures(session, tenant_id, job_ids=[job.id]))[job.id]
    counts, mean_score = mine.drafts, mine.mean_seo_score
    published = counts.get("published", 0)
    return schemas.JobAnalytics(
        totalDrafts=sum(counts.values()),
        approvedDrafts=counts.get("approved", 0) + published,
        publishedDrafts=published,
        avgSeoScore=round(mean_score, 2) if mean_score is not None else 0.0,
        publishSuccessRate=await publishing.success_rate(session, tenant_id, job.id),
    )
