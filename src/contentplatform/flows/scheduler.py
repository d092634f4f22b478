"""The scheduler's tick: start every job whose next run has come, exactly once.

Each due job is claimed in its own short transaction (tenant locked first, then the job with
SKIP LOCKED, so concurrent ticks on PostgreSQL share the work instead of waiting on each
other): the instance of the occurrence is inserted under the unique key (job_id,
scheduled_date), its run is started (queued: the model is called later by the pipeline, never
while the tick holds a lock), and next_run_at moves past now in the tenant's time zone.
Occurrences missed during downtime are coalesced: the latest runs, the earlier ones are
recorded as skipped. A tick retried after a crash finds the instances it already made and
does nothing twice.

Instances planned ahead by hand (jobInstances.create) are started when their date comes.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core.runtime import Runtime
from contentplatform.flows import job_runs
from contentplatform.job_instances import service as instances
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs import schedule
from contentplatform.jobs import service as jobs
from contentplatform.jobs.models import Job
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

BATCH = 500


@dataclass
class TickReport:
    started: int = 0  # instances whose run started (or that took an approved draft)
    skipped: int = 0  # instances recorded as skipped
    failed: int = 0  # instances that could not start, with the reason recorded
    errors: int = 0  # jobs the tick could not handle (logged; retried on the next tick)

    def count(self, instance: JobInstance) -> None:
        if instance.status == "skipped":
            self.skipped += 1
        elif instance.status == "failed":
            self.failed += 1
        else:
            self.started += 1


@dataclass
class _TickState:
    """What the jobs of one tick share."""

    runtime: Runtime
    now: datetime
    report: TickReport = field(default_factory=TickReport)
    # Each tenant's time zone, read once per tick.
    zones: dict[uuid.UUID, str] = field(default_factory=dict)


async def tick(runtime: Runtime, now: datetime, *, limit: int | None = None) -> TickReport:
    """Start what is due at `now`: at most `limit` jobs (default: settings.scheduler_batch)."""
    state = _TickState(runtime, now)
    budget = limit or runtime.settings.scheduler_batch
    seen: set[uuid.UUID] = set()
    # Tenants side by side on PostgreSQL (each tenant's jobs in turn: they share its lock);
    # SQLite has one writer, so one job at a time.
    workers = 1 if runtime.db.dialect == "sqlite" else runtime.settings.scheduler_concurrency
    while budget > 0:
        async with runtime.db.unit_of_work() as session:
            due = await jobs.due(session, now, min(BATCH, budget) + len(seen))
        fresh = [(tenant_id, job_id) for tenant_id, job_id in due if job_id not in seen][:budget]
        if not fresh:
            break
        seen.update(job_id for _, job_id in fresh)
        budget -= len(fresh)
        by_tenant: dict[uuid.UUID, list[uuid.UUID]] = {}
        for tenant_id, job_id in fresh:
            by_tenant.setdefault(tenant_id, []).append(job_id)
        gate = asyncio.Semaphore(workers)
        await asyncio.gather(
            *(
                _fire_tenant(gate, state, tenant_id, job_ids)
                for tenant_id, job_ids in by_tenant.items()
            )
        )
    await _start_waiting(state)
    return state.report


async def _fire_tenant(
    gate: asyncio.Semaphore, state: _TickState, tenant_id: uuid.UUID, job_ids: list[uuid.UUID]
) -> None:
    async with gate:
        for job_id in job_ids:
            await _fire_logged(state, tenant_id, job_id)


async def _fire_logged(state: _TickState, tenant_id: uuid.UUID, job_id: uuid.UUID) -> None:
    """One job in its own transaction; a failure is logged and the job retried next tick."""
    try:
        async with state.runtime.db.unit_of_work() as session:
            await _fire(session, state, tenant_id, job_id)
    except Exception:
        state.report.errors += 1
        log.exception("the scheduler could not start job %s", job_id)


async def _fire(
    session: AsyncSession, state: _TickState, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> None:
    await tenants.lock_tenant(session, tenant_id)
    job = await jobs.claim_due(session, tenant_id, job_id, state.now)
    if job is None or job.next_run_at is None:
        return  # another tick took it, or it changed since it was read
    if tenant_id not in state.zones:
        state.zones[tenant_id] = await tenants.timezone_of(session, tenant_id)
    try:
        plan = schedule.due(jobs.spec_of(job), state.zones[tenant_id], job.next_run_at, state.now)
    except schedule.InvalidSchedule as error:
        # Cannot happen for a schedule that passed validation; never retry it every tick.
        job.next_run_at = None
        job.status = "error"
        job.last_error = f"The schedule cannot be used: {error}"
        return
    job.next_run_at = plan.next_run_at
    latest = plan.run_at.isoformat() if plan.run_at else "?"
    missed = f"Missed while the scheduler was not running; the run at {latest} ran instead."
    for moment in plan.skipped:
        values = instances.new_instance(
            job.tenant_id, job.id, moment, status="skipped", error=missed
        )
        if await instances.plan_once(session, values):
            state.report.skipped += 1
            continue
        planned = await instances.at(session, job.tenant_id, job.id, moment)
        if planned is not None and instances.is_waiting(planned):
            instances.skip(planned, missed)  # planned by hand, and missed all the same
            state.report.skipped += 1
    if plan.run_at is not None:
        await _run_occurrence(session, state, job, plan.run_at)
    if job.next_run_at is None and job.job_type != "recurring" and job.status == "active":
        job.status = "completed"


async def _run_occurrence(
    session: AsyncSession, state: _TickState, job: Job, moment: datetime
) -> None:
    """The occurrence's instance, made once (or planned ahead by hand), and its run."""
    created = await instances.plan_once(
        session, instances.new_instance(job.tenant_id, job.id, moment)
    )
    instance = await instances.at(session, job.tenant_id, job.id, moment)
    assert instance is not None
    if not created and not instances.is_waiting(instance):
        return  # this occurrence was handled already (a retried tick)
    await job_runs.start(session, state.runtime, job, instance, state.now)
    state.report.count(instance)


async def _start_waiting(state: _TickState) -> None:
    """Instances planned by hand whose date has come (or whose tick crashed before starting
    them): start them, or skip them when their job is paused or deleted."""
    runtime, now = state.runtime, state.now
    async with runtime.db.unit_of_work() as session:
        waiting = await instances.waiting_due(session, now, BATCH)
    for tenant_id, instance_id in waiting:
        try:
            async with runtime.db.unit_of_work() as session:
                await tenants.lock_tenant(session, tenant_id)
                instance = await instances.claim_waiting(session, tenant_id, instance_id, now)
                if instance is None:
                    continue
                job = await jobs.find(session, tenant_id, instance.job_id, for_update=True)
                if job is None or job.status == "paused":
                    reason = instances.JOB_PAUSED if job else "The job was deleted."
                    instances.skip(instance, reason)
                elif await instances.later_waiting(session, instance, now):
                    # Coalesced as the schedule's occurrences are: only the latest one runs.
                    instances.skip(instance, instances.MISSED_FOR_LATER)
                else:
                    await job_runs.start(session, runtime, job, instance, now)
                state.report.count(instance)
        except Exception:
            state.report.errors += 1
            log.exception("the scheduler could not start job instance %s", instance_id)
