"""The scheduler's tick: start every job whose next run has come, exactly once.

Due jobs are started in batches of at most CHUNK, each one short transaction whatever the
number of tenants in it: tenants with a few due jobs each share a batch (a thousand tenants'
one job each is four transactions), a tenant with more than CHUNK has batches of its own, one
after the other. A batch locks its tenants first, in the order of their ids (a suspended tenant
is left out), then their due jobs with SKIP LOCKED, so concurrent ticks on PostgreSQL share the
work instead of doing it twice and never wait on each other in turn. The occurrences' instances
are inserted under the unique key (job_id, scheduled_date), their runs started together (each
tenant's credits held against its own balance, all in one go; drafts and runs inserted in bulk,
the workflows enqueued in one batch after the commit; queued: the model is called later by the
pipeline, never while the tick holds a lock), and each job's next_run_at moves past now in its
tenant's time zone: the same statements for one tenant's jobs as for a thousand tenants', so a
tick's cost follows its due jobs, not their tenants. Occurrences missed during downtime are
coalesced: the latest runs, the earlier ones are recorded as skipped. A job that cannot start
(no credits left for it, no topic) fails visibly on its own; the other jobs start. A batch that
fails as a whole is retried one job at a time, so one bad job never holds back the others. A
tick retried after a crash finds the instances it already made and does nothing twice; a crash
between a batch's commit and its enqueue leaves queued runs without workflows, which
generation's reconcile source starts.

Instances planned ahead by hand (jobInstances.create) are started when their date comes.
"""

from __future__ import annotations

import asyncio
import logging
import random
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
from contentplatform.kit import durable
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

# Due jobs read at a time: all of a tick's at once, up to this, so that each tenant's jobs come
# together (CHUNK at a time) rather than a few per read.
READ = 10_000
# Instances planned by hand started per tick.
BATCH = 500
# Due jobs started in one transaction (of one tenant or many): big enough that a tick pays per
# batch, not per job or tenant; small enough that its tenants' locks are held for a fraction of
# a second. On PostgreSQL a batch holds one advisory lock per tenant (credits), so a tick holds
# up to CHUNK * SCHEDULER_CONCURRENCY of them, within the default lock table (64 per connection).
CHUNK = 250


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

    def add(self, other: TickReport) -> None:
        self.started += other.started
        self.skipped += other.skipped
        self.failed += other.failed
        self.errors += other.errors


@dataclass
class _TickState:
    """What the jobs of one tick share."""

    runtime: Runtime
    now: datetime
    report: TickReport = field(default_factory=TickReport)
    # What is due of each schedule, worked out once per tick: jobs of the same schedule, zone
    # and next run (a daily 09:00 in Berlin) share it.
    plans: dict[tuple[object, ...], schedule.Due] = field(default_factory=dict)

    def plan(self, job: Job, zone: str) -> schedule.Due:
        """schedule.due for the job at the tick's instant (InvalidSchedule if it cannot be)."""
        assert job.next_run_at is not None, "claimed as due"
        key = (job.job_type, job.cron_expression, tuple(job.scheduled_dates), zone, job.next_run_at)
        if key not in self.plans:
            self.plans[key] = schedule.due(jobs.spec_of(job), zone, job.next_run_at, self.now)
        return self.plans[key]


async def tick(runtime: Runtime, now: datetime, *, limit: int | None = None) -> TickReport:
    """Start what is due at `now`: at most `limit` jobs (default: settings.scheduler_batch)."""
    state = _TickState(runtime, now)
    # The runs' workflows are enqueued while the next chunks are started, and all of them
    # before the tick returns.
    async with durable.enqueues_beside() as enqueues:
        await _tick(state, limit or runtime.settings.scheduler_batch)
    # Their runs are committed: generation's reconcile source enqueues them.
    state.report.errors += enqueues.failed
    return state.report


async def _tick(state: _TickState, budget: int) -> None:
    runtime, now = state.runtime, state.now
    seen: set[uuid.UUID] = set()
    # Batches side by side on PostgreSQL; SQLite has one writer, so one batch at a time.
    workers = 1 if runtime.db.dialect == "sqlite" else runtime.settings.scheduler_concurrency
    while budget > 0:
        async with runtime.db.unit_of_work() as session:
            due = await jobs.due(session, now, min(READ, budget) + len(seen))
        fresh = [(tenant_id, job_id) for tenant_id, job_id in due if job_id not in seen][:budget]
        if not fresh:
            break
        seen.update(job_id for _, job_id in fresh)
        budget -= len(fresh)
        by_tenant: dict[uuid.UUID, list[uuid.UUID]] = {}
        for tenant_id, job_id in fresh:
            by_tenant.setdefault(tenant_id, []).append(job_id)
        # In an order of its own, so that ticks running at once mostly start different tenants
        # rather than queue on the same tenants' locks.
        tenant_order = list(by_tenant.items())
        random.shuffle(tenant_order)
        gate = asyncio.Semaphore(workers)
        await asyncio.gather(*(_fire_turns(gate, state, turns) for turns in _batches(tenant_order)))
    await _start_waiting(state)


Batch = dict[uuid.UUID, list[uuid.UUID]]  # tenant -> its due jobs started in one transaction


def _batches(tenants: list[tuple[uuid.UUID, list[uuid.UUID]]]) -> list[list[Batch]]:
    """The tenants' due jobs in batches of at most CHUNK jobs, as turns: the batches of one turn
    are started one after the other, the turns side by side. Tenants with a few due jobs each
    share batches (a tick of a thousand tenants' one job each is four transactions, not a
    thousand); a tenant with more than CHUNK has a turn of its own, CHUNK at a time, so that
    its batches never wait on each other's lock of it."""
    turns: list[list[Batch]] = []
    shared: Batch = {}
    for tenant_id, job_ids in tenants:
        if len(job_ids) > CHUNK:
            turns.append(
                [
                    {tenant_id: job_ids[offset : offset + CHUNK]}
                    for offset in range(0, len(job_ids), CHUNK)
                ]
            )
            continue
        if sum(map(len, shared.values())) + len(job_ids) > CHUNK:
            turns.append([shared])
            shared = {}
        shared[tenant_id] = job_ids
    if shared:
        turns.append([shared])
    return turns


async def _fire_turns(gate: asyncio.Semaphore, state: _TickState, turns: list[Batch]) -> None:
    async with gate:
        for batch in turns:
            alone = sum(map(len, batch.values())) == 1
            if not await _fire_batch(state, batch, alone=alone):
                for tenant_id, job_ids in batch.items():  # one at a time: those that can start do
                    for job_id in job_ids:
                        await _fire_batch(state, {tenant_id: [job_id]}, alone=True)


async def _fire_batch(state: _TickState, batch: Batch, *, alone: bool) -> bool:
    """Start these jobs (of one tenant or many) in one transaction; False when it failed and
    rolled back (logged, and counted as an error when the job is `alone`: the next tick retries
    it)."""
    report = TickReport()
    try:
        async with state.runtime.db.unit_of_work() as session:
            await _fire(session, state, report, batch)
    except Exception:
        if not alone:
            count = sum(map(len, batch.values()))
            log.warning("the scheduler retries %d jobs one at a time", count, exc_info=True)
            return False
        state.report.errors += 1
        log.exception("the scheduler could not start job %s", next(iter(batch.values()))[0])
        return True
    state.report.add(report)
    return True


async def _fire(session: AsyncSession, state: _TickState, report: TickReport, batch: Batch) -> None:
    # The tenants first, all in one order (a suspended one is left out), then their jobs.
    zones = await tenants.lock_many(session, batch.keys())
    claimed = await jobs.claim_due(
        session, {tenant_id: batch[tenant_id] for tenant_id in zones}, state.now
    )
    if not claimed:
        return  # other ticks took them, or they changed since they were read
    plans: list[tuple[Job, schedule.Due]] = []
    for job in claimed:
        try:
            plan = state.plan(job, zones[job.tenant_id])
        except schedule.InvalidSchedule as error:
            # Cannot happen for a schedule that passed validation; never retry it every tick.
            job.next_run_at = None
            job.status = "error"
            job.last_error = f"The schedule cannot be used: {error}"
            continue
        plans.append((job, plan))
    occurrences = [
        (job.id, moment)
        for job, plan in plans
        for moment in [*plan.skipped, *([plan.run_at] if plan.run_at else [])]
    ]
    existing = await instances.at_many(session, zones.keys(), occurrences)
    new: list[JobInstance] = []
    to_run: list[tuple[Job, JobInstance]] = []
    for job, plan in plans:
        latest = plan.run_at.isoformat() if plan.run_at else "?"
        missed = f"Missed while the scheduler was not running; the run at {latest} ran instead."
        for moment in plan.skipped:
            planned = existing.get((job.id, moment))
            if planned is None:
                new.append(_instance(job, moment, status="skipped", error=missed))
                report.skipped += 1
            elif instances.is_waiting(planned):
                instances.skip(planned, missed)  # planned by hand, and missed all the same
                report.skipped += 1
        if plan.run_at is not None:
            planned = existing.get((job.id, plan.run_at))
            if planned is None:
                instance = _instance(job, plan.run_at)
                new.append(instance)
                to_run.append((job, instance))
            elif instances.is_waiting(planned):
                to_run.append((job, planned))  # planned ahead by hand, with its overrides
            # else: this occurrence was handled already (a retried tick)
    await job_runs.start_many(session, state.runtime, to_run, state.now)
    await instances.add(session, zones.keys(), new)
    for _, instance in to_run:
        report.count(instance)
    # Moved only now, so that the jobs are written once, at the commit. A run that could not
    # start left its job active or in error; one with nothing left to run is completed.
    for job, plan in plans:
        job.next_run_at = plan.next_run_at
        if job.next_run_at is None and job.job_type != "recurring" and job.status == "active":
            job.status = "completed"


def _instance(
    job: Job, moment: datetime, *, status: str = "pending", error: str | None = None
) -> JobInstance:
    """A new instance of the job at `moment` (not yet added to the session)."""
    values = instances.new_instance(job.tenant_id, job.id, moment, status=status, error=error)
    return JobInstance(**values)


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
