"""generation.suggestTopics: topics from the knowledge index that no draft and no job covers yet.

A flow because it reads both generation's runs and drafts (below) and the jobs' topics (jobs sit
above generation). Not metered; `generation_topics_rate_limit` calls per tenant (20 an hour).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.core.runtime import Runtime
from contentplatform.generation import schemas as generation_schemas
from contentplatform.generation import topic_suggestions
from contentplatform.generation.topics import Covering
from contentplatform.jobs import service as jobs
from contentplatform.jobs.schemas import ListJobsInput

# The jobs whose topics count as covered (newest first, as jobs.list reads them).
COVERING_JOBS = 500


async def suggest_topics(
    session: AsyncSession,
    runtime: Runtime,
    tenant: TenantAccess,
    data: generation_schemas.SuggestTopicsInput,
) -> generation_schemas.TopicList:
    await runtime.limiter.check(
        runtime.settings.generation_topics_rate_limit,
        f"generation.suggestTopics:{tenant.tenant_id}",
    )
    listed = await jobs.list_jobs(session, tenant.tenant_id, ListJobsInput(limit=COVERING_JOBS))
    covered = [
        Covering(topic, None, f"the job \u201c{job.name}\u201d")
        for job in listed
        for topic in job.topics
    ]
    return await topic_suggestions.suggest_topics(session, tenant, data, also_covered=covered)
