"""Job instances: one occurrence of a job, and the run that writes its article. Never commits.

An instance is `pending` until its run begins, `running` while the pipeline writes (its `step`
and `percent` follow the run), then `completed` (its draft is in review) or `failed` (with the
reason); `skipped` when it was not run (missed during downtime, a run of its job still in
flight, skipped by hand, or its job paused). A `select_existing` instance takes an approved
draft instead of generating one.

A job has at most one run in flight. Whoever locks both a tenant and one of its jobs locks the
tenant first, as the pipeline already holds the tenant (credits) when it reports a finished run.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import PurePath

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core.runtime import Runtime
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.generation import service as generation
from contentplatform.generation import watchers
from contentplatform.generation.models import GenerationRun
from contentplatform.generation.schemas import BlogInput
from contentplatform.jobs import repository, schemas
from contentplatform.jobs.models import Job, JobInstance
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, Conflict, NotFound, PlatformError
from contentplatform.publishers import service as publishers
from contentplatform.search import service as search

BUSY = "A run of this job was still in flight; one run at a time per job."
JOB_PAUSED = "The job was paused when this occurrence came."
SKIPPED_BY_HAND = "Skipped by hand."
MISSED_FOR_LATER = "Missed while the scheduler was not running; a later instance ran instead."
NOTHING_TO_SELECT = "No approved draft is left to select; approve one, or generate instead."
MAX_KNOWLEDGE_TOPICS = 100
MAX_LISTED = 1000


def to_schema(instance: JobInstance) -> schemas.JobInstance:
    return schemas.JobInstance(
        id=instance.id,
        tenant_id=instance.tenant_id,
        job_id=instance.job_id,
        scheduled_date=instance.scheduled_date,
        day_mode=instance.day_mode,
        keywords=instance.keywords,
        content_instructions=instance.content_instructions,
        images=instance.images,
        document_ids=None
        if instance.document_ids is None
        else [uuid.UUID(i) for i in instance.document_ids],
        status=instance.status,
        step=instance.step,
        percent=instance.percent,
        topic=instance.topic,
        draft_id=instance.draft_id,
        run_id=instance.run_id,
        error=instance.error,
        attempts=instance.attempts,
        created_at=instance.created_at,
        updated_at=instance.updated_at,
        started_at=instance.started_at,
        finished_at=instance.finished_at,
    )


async def require(
    session: AsyncSession, tenant_id: uuid.UUID, instance_id: uuid.UUID, *, for_update: bool = False
) -> JobInstance:
    instance = await repository.get_instance(session, tenant_id, instance_id, for_update=for_update)
    if instance is None:
        raise NotFound(f"There is no job instance {instance_id}.")
    return instance


def new_instance(
    job: Job, scheduled_date: datetime, *, status: str = "pending", error: str | None = None
) -> dict[str, object]:
    """The column values of an instance of `job` at `scheduled_date`."""
    now = utcnow()
    return {
        "id": uuid.uuid4(),
        "tenant_id": job.tenant_id,
        "job_id": job.id,
        "scheduled_date": scheduled_date,
        "day_mode": "generate",
        "images": [],
        "status": status,
        "percent": 0,
        "attempts": 0,
        "error": error,
        "created_at": now,
        "updated_at": now,
        "finished_at": now if status == "skipped" else None,
    }


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
    if await repository.in_flight(session, job.tenant_id, job.id):
        if by_hand:
            raise Conflict(BUSY)
        skip(instance, BUSY)
        return
    attempt = instance.attempts + 1
    if instance.day_mode == "select_existing":
        await _select_existing(session, job, instance, now, attempt, by_hand=by_hand)
        return
    try:
        topic, rotated = (
            (instance.topic, False) if instance.topic else (await _next_topic(session, job), True)
        )
        draft, run = await generation.start_blog(
            session,
            runtime,
            job.tenant_id,
            _brief_of(job, instance, topic, attempt),
            created_by=job.created_by,
            job_id=job.id,
            instance_id=instance.id,
        )
    except PlatformError as error:
        if by_hand:
            raise
        instance.attempts = attempt
        _finish(instance, "failed", error.detail, now)
        job.last_run_at = now
        _settle(job, failure=error.detail)
        return
    if rotated:
        job.topic_cursor += 1
    instance.topic = topic
    instance.attempts = attempt
    instance.status = "pending"
    instance.run_id = run.id
    instance.draft_id = draft.id
    instance.error = None
    instance.step = None
    instance.percent = 0
    instance.started_at = None
    instance.finished_at = None
    instance.updated_at = now
    job.last_run_at = now
    if job.status in ("active", "error"):
        job.status = "processing"


def _brief_of(job: Job, instance: JobInstance, topic: str, attempt: int) -> BlogInput:
    """What the article is about: the instance's overrides, else the job's settings."""
    keywords = instance.keywords if instance.keywords is not None else job.keywords
    document_ids = instance.document_ids if instance.document_ids is not None else job.document_ids
    return BlogInput(
        topic=topic,
        keywords=keywords,
        content_instructions=instance.content_instructions or job.content_instructions,
        document_ids=[uuid.UUID(i) for i in document_ids] or None,
        idempotency_key=f"job-instance:{instance.id}:{attempt}",
    )


async def _next_topic(session: AsyncSession, job: Job) -> str:
    """The job's topics in turn (the caller advances the cursor once the run started), so no
    run repeats the one before it unless the job has only one."""
    topics = job.topics if job.topic_source == "manual" else await _knowledge_topics(session, job)
    if not topics:
        raise BadRequest(
            "This job has no topic to write about: give it topics, or make a ready document "
            "the organization's primary knowledge (topicSource knowledge)."
        )
    return topics[job.topic_cursor % len(topics)]


async def _knowledge_topics(session: AsyncSession, job: Job) -> list[str]:
    """Topics proposed from the primary knowledge document: its section headings, or its name."""
    primary = await documents.primary_knowledge_id(session, job.tenant_id)
    if primary is None:
        return list(job.topics)
    chunks = await search.leading_chunks(
        session, job.tenant_id, [primary], per_document=MAX_KNOWLEDGE_TOPICS
    )
    headings = [
        chunk.heading.strip() for chunk in chunks if chunk.heading and chunk.heading.strip()
    ]
    topics = list(dict.fromkeys(heading[:500] for heading in headings))
    if not topics and chunks:
        topics = [PurePath(chunks[0].document_name).stem[:500] or chunks[0].document_name[:500]]
    return topics or list(job.topics)


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
        raise Conflict(NOTHING_TO_SELECT)
    instance.attempts = attempt
    job.last_run_at = now
    if draft is None:
        _finish(instance, "failed", NOTHING_TO_SELECT, now)
        _settle(job, failure=NOTHING_TO_SELECT)
        return
    instance.draft_id = draft.id
    instance.topic = draft.title[:500]
    instance.percent = 100
    instance.started_at = now
    _finish(instance, "completed", None, now)
    _settle(job, failure=None)


def skip(instance: JobInstance, reason: str) -> None:
    _finish(instance, "skipped", reason, utcnow())


def _finish(instance: JobInstance, status: str, error: str | None, now: datetime) -> None:
    instance.status = status
    instance.error = error
    instance.finished_at = now
    instance.updated_at = now


def _settle(job: Job, *, failure: str | None) -> None:
    """A run of the job ended: back to active (or completed when nothing is left to run), or
    error with the reason. A paused job stays paused; a deleted one is left alone."""
    if job.deleted_at is not None:
        return
    job.last_error = failure
    job.updated_at = utcnow()
    if job.status in ("paused", "completed"):
        return
    if failure is not None:
        job.status = "error"
    elif job.next_run_at is None and job.job_type != "recurring":
        job.status = "completed"
    else:
        job.status = "active"


# --- following the pipeline ---------------------------------------------------------------------

RUN_TO_INSTANCE = {
    "queued": "pending",
    "running": "running",
    "succeeded": "completed",
    "failed": "failed",
    "cancelled": "failed",
}


@watchers.watch_runs
async def follow_run(session: AsyncSession, run: GenerationRun) -> None:
    """Mirror a job run's progress on its instance, and settle the job when it ends."""
    if run.instance_id is None:
        return
    instance = await repository.get_instance(session, run.tenant_id, run.instance_id)
    if instance is None or instance.run_id != run.id or instance.status == "skipped":
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
    failure = None
    if status == "failed":
        failure = (run.error or {}).get("message") or "Generation failed."
    _finish(instance, status, failure, now)
    # Locked: a pause committed meanwhile must not be overwritten.
    job = await repository.get(session, run.tenant_id, instance.job_id, for_update=True)
    if job is None:
        return
    _settle(job, failure=failure)
    if status == "completed" and job.auto_publish and run.draft_id is not None:
        draft = await drafts.require_or_none(session, run.tenant_id, run.draft_id, for_update=True)
        if draft is not None and draft.status == "reviewing":
            await publishers.auto_publish(
                session,
                draft,
                connection_id=job.publisher_connection_id,
                threshold=job.auto_publish_threshold,
            )


# --- reading and planning by hand ---------------------------------------------------------------


async def list_instances(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListInstancesInput
) -> list[schemas.JobInstance]:
    rows = await repository.listed_instances(
        session,
        tenant_id,
        start=data.start_date,
        end=data.end_date,
        job_id=data.job_id,
        status=data.status,
        limit=data.limit,
        offset=(data.page - 1) * data.limit,
    )
    return [to_schema(row) for row in rows]


async def of_job(
    session: AsyncSession, tenant_id: uuid.UUID, job: Job
) -> list[schemas.JobInstance]:
    rows = await repository.instances_of_job(session, tenant_id, job.id, MAX_LISTED)
    return [to_schema(row) for row in rows]


def progress(instance: JobInstance) -> schemas.InstanceProgress:
    return schemas.InstanceProgress(
        status=instance.status,
        step=instance.step,
        percent=instance.percent,
    )


async def check_documents(
    session: AsyncSession, tenant_id: uuid.UUID, document_ids: list[uuid.UUID] | None
) -> list[str] | None:
    if document_ids is None:
        return None
    ids = list(dict.fromkeys(document_ids))
    await documents.check_usable_for_generation(session, tenant_id, ids)
    return [str(i) for i in ids]


def is_waiting(instance: JobInstance) -> bool:
    """Pending, and no run took it yet."""
    return instance.status == "pending" and instance.run_id is None


def state_of(instance: JobInstance) -> str:
    """Its status as a person reads it: a pending instance whose run is queued is `queued`."""
    return (
        "queued" if instance.status == "pending" and not is_waiting(instance) else instance.status
    )


def check_waiting(instance: JobInstance, what: str) -> None:
    """Only a pending instance that no run took can be changed, skipped or run."""
    if not is_waiting(instance):
        raise Conflict(f"The instance is {state_of(instance)}; only a pending one can be {what}.")


def clean_keywords(keywords: list[str] | None) -> list[str] | None:
    if keywords is None:
        return None
    return [keyword.strip() for keyword in keywords if keyword.strip()]


def skip_by_hand(instance: JobInstance) -> None:
    check_waiting(instance, "skipped")
    skip(instance, SKIPPED_BY_HAND)


def update(instance: JobInstance, data: schemas.UpdateInstanceInput) -> None:
    check_waiting(instance, "changed")
    given = data.model_fields_set
    if "keywords" in given:
        instance.keywords = clean_keywords(data.keywords)
    if "content_instructions" in given:
        instance.content_instructions = data.content_instructions
    if "day_mode" in given and data.day_mode is not None:
        instance.day_mode = data.day_mode
    instance.updated_at = utcnow()
