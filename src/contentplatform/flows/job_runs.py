"""Running a job: an instance's run, started by the scheduler or as a person asks
(job_actions.py), followed as the generation pipeline writes, and settled on the job when it
ends (auto-publishing what it wrote when the job says so; the end told as `job.run_completed`
or `job.run_failed`, job_instances.run_ended). Never commits.

A job has at most one run in flight. Whoever locks both a tenant and one of its jobs locks the
tenant first, as the pipeline already holds the tenant (credits) when it reports a finished run.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core.runtime import Runtime, current
from contentplatform.documents import index as search
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.generation import service as generation
from contentplatform.generation import watchers
from contentplatform.generation.models import GenerationRun
from contentplatform.generation.schemas import BlogInput
from contentplatform.job_instances import service as instances
from contentplatform.job_instances.errors import NothingToSelect
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs import service as jobs
from contentplatform.jobs.errors import JobBusy, NoTopic
from contentplatform.jobs.models import Job
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import PlatformError
from contentplatform.publishers import publishing
from contentplatform.settings import service as settings
from contentplatform.settings.service import TopicStrategy

MAX_KNOWLEDGE_TOPICS = 100


# --- starting a run -----------------------------------------------------------------------------


async def start(
    session: AsyncSession,
    runtime: Runtime,
    job: Job,
    instance: JobInstance,
    now: datetime,
    *,
    by_hand: bool = False,
) -> None:
    """Run the instance now: generate its article or take an approved draft.

    The tenant and the job must be locked (in that order). A run of the job in flight skips the
    instance. What keeps the run from starting (no credits, no topic, a document gone) fails the
    instance and the job with the reason, or, `by_hand`, is raised before anything was written.
    """
    await start_many(session, runtime, [(job, instance)], now, by_hand=by_hand)


@dataclass
class _Generation:
    """An instance whose article is to be generated, and what it will be about."""

    job: Job
    instance: JobInstance
    topic: str
    rotated: bool  # the topic is the job's next one: the cursor moves once the run started
    attempt: int


async def start_many(
    session: AsyncSession,
    runtime: Runtime,
    runs: Sequence[tuple[Job, JobInstance]],
    now: datetime,
    *,
    by_hand: bool = False,
) -> None:
    """`start` for instances of many jobs at once, of one tenant or many (the scheduler's tick):
    one read of the runs in flight and of the tenants' content strategies, and the articles
    started together (credits held, drafts and runs made and their workflows enqueued in bulk:
    generation.start_blogs_across), in the same statements however many tenants there are.
    Each instance starts, is skipped or fails on its own; a second instance of one job is
    skipped as busy. The tenants and the jobs must be locked (in that order).
    """
    if not runs:
        return
    tenant_ids = {job.tenant_id for job, _ in runs}
    busy = await instances.in_flight_of(session, tenant_ids, [job.id for job, _ in runs])
    # The strategies of the tenants whose jobs take their next topic, read together.
    strategies = await settings.topic_strategies(
        session,
        {
            job.tenant_id
            for job, instance in runs
            if instance.day_mode != "select_existing" and not instance.topic
        },
    )
    knowledge: dict[uuid.UUID, list[str]] = {}  # a tenant's knowledge topics, read once
    generations: list[_Generation] = []
    for job, instance in runs:
        if job.id in busy:
            if by_hand:
                raise JobBusy(instances.BUSY)
            instances.skip(instance, instances.BUSY)
            continue
        busy.add(job.id)
        attempt = instance.attempts + 1
        if instance.day_mode == "select_existing":
            await _select_existing(session, job, instance, now, attempt, by_hand=by_hand)
            continue
        try:
            topic, rotated = (
                (instance.topic, False)
                if instance.topic
                else (await _next_topic(session, job, knowledge, strategies[job.tenant_id]), True)
            )
        except PlatformError as error:
            if by_hand:
                raise
            _fail(session, job, instance, attempt, error, now)
            continue
        generations.append(_Generation(job, instance, topic, rotated, attempt))
    starts: dict[uuid.UUID, list[generation.BlogStart]] = {}
    for each in generations:
        starts.setdefault(each.job.tenant_id, []).append(
            generation.BlogStart(
                _brief_of(each.job, each.instance, each.topic, each.attempt),
                created_by=each.job.created_by,
                job_id=each.job.id,
                instance_id=each.instance.id,
                workflow_id=each.job.workflow_id,
                workflow_version=each.job.workflow_version,
            )
        )
    outcomes = await generation.start_blogs_across(session, runtime, starts)
    taken = {tenant_id: iter(started) for tenant_id, started in outcomes.items()}
    for each in generations:
        job, instance = each.job, each.instance
        outcome = next(taken[job.tenant_id])
        if isinstance(outcome, PlatformError):
            if by_hand:
                raise outcome
            _fail(session, job, instance, each.attempt, outcome, now)
            continue
        if each.rotated:
            job.topic_cursor += 1
        instance.topic = each.topic
        instance.attempts = each.attempt
        instance.status = "pending"
        instance.run_id = outcome.run_id
        instance.draft_id = outcome.draft_id
        instance.error = None
        instance.step = None
        instance.percent = 0
        instance.started_at = None
        instance.finished_at = None
        instance.updated_at = now
        jobs.run_started(job, now)


def _fail(
    session: AsyncSession,
    job: Job,
    instance: JobInstance,
    attempt: int,
    error: PlatformError,
    now: datetime,
) -> None:
    """The run could not start: the instance fails with the reason, and the job with it."""
    instance.attempts = attempt
    problem = instances.problem_of_error(error)
    instances.run_ended(session, instance, error.detail, now, drafts_created=0, problem=problem)
    job.last_run_at = now
    jobs.settle(job, failure=error.detail)


def _brief_of(job: Job, instance: JobInstance, topic: str, attempt: int) -> BlogInput:
    """What the article is about: the instance's overrides, else the job's settings.

    Not validated again: each value was checked (and trimmed) when the job or instance was
    written, or is the knowledge document's heading; a tick builds thousands of these."""
    keywords = instance.keywords if instance.keywords is not None else job.keywords
    document_ids = instance.document_ids if instance.document_ids is not None else job.document_ids
    return BlogInput.model_construct(
        topic=topic,
        keywords=keywords,
        content_instructions=instance.content_instructions or job.content_instructions,
        document_ids=[uuid.UUID(i) for i in document_ids] or None,
        idempotency_key=f"job-instance:{instance.id}:{attempt}",
    )


async def _next_topic(
    session: AsyncSession,
    job: Job,
    knowledge: dict[uuid.UUID, list[str]],
    strategy: TopicStrategy,
) -> str:
    """The job's topics in turn (the caller advances the cursor once the run started), so no
    run repeats the one before it unless the job has only one; a topic the content strategy
    excludes is never taken. `knowledge` keeps the tenant's knowledge topics for the other jobs
    of the same call."""
    topics = job.topics
    if job.topic_source != "manual":
        if job.tenant_id not in knowledge:
            knowledge[job.tenant_id] = await _knowledge_topics(session, job.tenant_id)
        topics = knowledge[job.tenant_id] or job.topics
    if not topics:
        raise NoTopic(
            "This job has no topic to write about: give it topics, or make a ready document "
            "the organization's primary knowledge (topicSource knowledge)."
        )
    allowed = [topic for topic in topics if not strategy.excludes(topic)]
    if not allowed:
        raise NoTopic(
            "Every topic of this job is excluded by the organization's content strategy "
            "(excludedTopics): give it another topic, or change the strategy."
        )
    return allowed[job.topic_cursor % len(allowed)]


async def _knowledge_topics(session: AsyncSession, tenant_id: uuid.UUID) -> list[str]:
    """Topics proposed from the primary knowledge document: its section headings, or its name
    (none without one: the job's own topics are used then)."""
    primary = await documents.primary_knowledge_id(session, tenant_id)
    if primary is None:
        return []
    chunks = await search.leading_chunks(
        session, tenant_id, [primary], per_document=MAX_KNOWLEDGE_TOPICS
    )
    headings = [
        chunk.heading.strip() for chunk in chunks if chunk.heading and chunk.heading.strip()
    ]
    topics = list(dict.fromkeys(heading[:500] for heading in headings))
    if not topics and chunks:
        topics = [PurePath(chunks[0].document_name).stem[:500] or chunks[0].document_name[:500]]
    return topics


async def _select_existing(
    session: AsyncSession,
    job: Job,
    instance: JobInstance,
    now: datetime,
    attempt: int,
    *,
    by_hand: bool,
) -> None:
    draft = await drafts.take_approved(session, job.tenant_id, job.id, instance.id)
    if draft is None and by_hand:
        raise NothingToSelect(instances.NOTHING_TO_SELECT)
    instance.attempts = attempt
    job.last_run_at = now
    if draft is None:
        instances.run_ended(
            session,
            instance,
            instances.NOTHING_TO_SELECT,
            now,
            drafts_created=0,
            problem="validation_error",
        )
        jobs.settle(job, failure=instances.NOTHING_TO_SELECT)
        return
    instance.draft_id = draft.id
    instance.topic = draft.title[:500]
    instance.percent = 100
    instance.started_at = now
    # It took an approved draft: none was written.
    instances.run_ended(session, instance, None, now, drafts_created=0)
    jobs.settle(job, failure=None)


# --- following the pipeline ---------------------------------------------------------------------

FINISHED = ("completed", "failed", "skipped")
RUN_TO_INSTANCE = {
    "queued": "pending",
    "running": "running",
    "waiting_review": "running",  # at a review gate: the instance runs until the run ends
    "succeeded": "completed",
    "failed": "failed",
    "cancelled": "failed",
}


@watchers.watch_runs
async def follow_run(session: AsyncSession, run: GenerationRun) -> None:
    """Mirror a job run's progress on its instance, and settle the job when it ends."""
    if run.instance_id is None:
        return
    instance = await instances.find(session, run.tenant_id, run.instance_id)
    # Settled once: a run's end heard again (or a skipped instance) changes nothing.
    if instance is None or instance.run_id != run.id or instance.status in FINISHED:
        return
    now = utcnow()
    instance.step = run.step
    instance.percent = run.percent
    instance.updated_at = now
    status = RUN_TO_INSTANCE[run.status]
    if status == "running" and instance.started_at is None:
        instance.started_at = run.started_at or now
    if status not in ("completed", "failed"):
        instance.status = status
        return
    failure = problem = None
    if status == "failed":
        failure = (run.error or {}).get("message") or "Generation failed."
        problem = instances.problem_of_run((run.error or {}).get("code"))
    instances.run_ended(
        session,
        instance,
        failure,
        now,
        drafts_created=1 if status == "completed" else 0,
        problem=problem,
    )
    # Locked: a pause committed meanwhile must not be overwritten.
    job = await jobs.find(session, run.tenant_id, instance.job_id, for_update=True)
    if job is None:
        return
    jobs.settle(job, failure=failure)
    if status == "completed" and job.auto_publish and run.draft_id is not None:
        draft = await drafts.require_or_none(session, run.tenant_id, run.draft_id, for_update=True)
        # Approved: by a person at the workflow's review gate (their approval stands for the
        # SEO threshold; the content rules still hold it).
        if draft is not None and draft.status in ("reviewing", "approved"):
            # The content rules of stage publish: one broken at error level holds the draft.
            offline = current().model.provider == "offline"
            checked = await settings.check_draft(
                session, run.tenant_id, draft, stage="publish", offline=offline
            )
            await publishing.auto_publish(
                session,
                draft,
                connection_id=job.publisher_connection_id,
                threshold=job.auto_publish_threshold if draft.status == "reviewing" else None,
                rules=settings.note_of(checked),
                broken=None if checked.passed else settings.verdict_of(checked),
            )
