"""The scheduler's tick: how long one tick takes to claim and start N due jobs, and that it
started each exactly once.

    .venv/bin/python bench/schedule.py [--jobs 10000] [--tenants 100] [--schedulers 1]
                                       [--database-url postgresql://postgres@127.0.0.1:5432/test]
    .venv/bin/python bench/schedule.py --sqlite --jobs 500
    .venv/bin/python bench/schedule.py --spans          # + where the tick's time goes

Creates two fresh databases on the PostgreSQL server of `--database-url` (a maintenance
database there, as the test suite's CONTENTPLATFORM_TEST_DATABASE_URL): ours and its DBOS
system database, both dropped at the end (`--sqlite`: two SQLite files in a temporary data
directory instead). Migrates ours, then seeds it directly through SQLAlchemy (bulk inserts, no
HTTP): `--tenants` tenants spread over a few time zones (whole, half and three-quarter hour
offsets) and `--jobs` recurring jobs among them (cron `*/5 * * * *`, topic source manual with
three topics, active, no documents). Each job's next_run_at is the latest occurrence of its
cron, in its tenant's zone, at or before the instant T the benchmark picks: every job is due
at T with exactly one occurrence, so nothing is coalesced or skipped.

Then launches DBOS in this process as the service does (every workflow and queue registered,
the scheduler's own DBOS schedule off: scheduler_interval_seconds 0), except that this process
listens to no queue: the generation workflows the tick enqueues stay ENQUEUED and no pipeline
runs beside the tick (without documents they would fail NO_SOURCES anyway). It times one call
of `scheduler.tick(runtime, T, limit=jobs)` with `perf_counter` (`--schedulers N`: N ticks at
once, as N tasks on this event loop sharing one engine; the figure is until the last returns),
and prints the tick's report, seconds, jobs/s and ms per job, and the CPU time this process
spent meanwhile (`time.process_time`, every thread): what is not CPU is waiting for the
databases, or for a CPU when the machine is busy. Per batch of up to scheduler.CHUNK due jobs
(of one tenant or many), the tick commits one transaction that locks the batch's tenants,
claims their due jobs (FOR UPDATE SKIP LOCKED), inserts the occurrences' instances, holds their
credits in one go, inserts their drafts and generation runs in bulk and advances each
next_run_at; after the commit it enqueues their DBOS workflows `generation:<run id>` in one
transaction of DBOS's system database, while the next batches' transactions go on.
bench/scale_scheduler.py runs this over few tenants and over many, for issue 36's ratio.

Then it checks, and prints as findings, that each job was started exactly once:

- instances per job: every job has exactly one instance, at its due occurrence, pending with a
  run;
- generation runs per instance: exactly one, the one the instance names, with one draft in
  `generating` and one credit hold;
- DBOS workflows: one `generation:<run id>` per run, distinct, ENQUEUED on the queue
  `generation` (read with `DBOS.list_workflows`);
- next_run_at: every job's is now after T (and the job is `processing`).

It asserts nothing timed; it exits 1 only when one of these counts shows a job started other
than exactly once (or not at all).

`--spans` wraps the functions a batch's transaction goes through (in this process only; src/
is not changed) and prints the wall time spent in each, per job: where the tick's time goes.
Spans nest (indented under their caller) and include the awaits inside them; several batches'
transactions run at once, so the spans add up to more than the tick.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table, bindparam, func, insert, select, text, update

# The benchmark's settings are its own: nothing from the shell's environment or a .env file.
for _name in [name for name in os.environ if name.startswith("CONTENTPLATFORM_")]:
    del os.environ[_name]

# The repository root, for the test suite's throwaway PostgreSQL databases.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contentplatform.app  # noqa: E402, F401  (every workflow, queue and schedule, as served)
from contentplatform.config import Settings  # noqa: E402
from contentplatform.core import runtime  # noqa: E402
from contentplatform.credits.models import CreditReservation  # noqa: E402
from contentplatform.drafts.models import Draft  # noqa: E402
from contentplatform.flows import scheduler  # noqa: E402
from contentplatform.generation.models import GenerationRun  # noqa: E402
from contentplatform.generation.pipeline import durable as generation_pipeline  # noqa: E402
from contentplatform.generation.pipeline.run import workflow_id as generation_workflow_id  # noqa: E402
from contentplatform.job_instances.models import JobInstance  # noqa: E402
from contentplatform.jobs import schedule  # noqa: E402
from contentplatform.jobs.models import Job  # noqa: E402
from contentplatform.kit import durable, logs, migrations  # noqa: E402
from contentplatform.kit.db import Base, Database, utcnow  # noqa: E402
from contentplatform.tenants.models import Tenant  # noqa: E402
from tests.support.backends import postgres_databases  # noqa: E402

MAINTENANCE_URL = "postgresql://postgres@127.0.0.1:5432/test"
CRON = "*/5 * * * *"
TOPICS = ["Watering in a heat wave", "Composting for beginners", "Saving seeds"]
# Whole, half and three-quarter hour offsets, both hemispheres; `*/5` fires at the same UTC
# instants in all of them.
ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Asia/Tokyo",
    "Australia/Adelaide",
    "Pacific/Auckland",
]
SEED_BATCH = 2000
EXPECTED_WORKFLOW_STATUS = "ENQUEUED"


# --- databases ----------------------------------------------------------------------------------


@contextmanager
def bench_settings(args: argparse.Namespace, scratch: Path) -> Iterator[Settings]:
    common: dict[str, Any] = {
        "data_dir": scratch / "data",
        "log_level": "WARNING",
        "scheduler_interval_seconds": 0,  # DBOS's own schedule never ticks during the run
        "scheduler_batch": max(args.jobs, 1),
        # Each job holds generation_credit_hold (40) once: ten times what a tenant's jobs hold.
        "credits_monthly_grant": (args.jobs // args.tenants + 1) * 40 * 10,
        "reconcile_interval_seconds": 3600,
    }
    if args.sqlite:
        yield Settings(_env_file=None, **common)  # type: ignore[call-arg]
        return
    with postgres_databases(args.database_url, f"cp_bench_{uuid.uuid4().hex[:10]}") as urls:
        database_url, dbos_url = urls
        yield Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=database_url,
            dbos_database_url=dbos_url,
            **common,
        )


# --- seeding ------------------------------------------------------------------------------------


@dataclass
class Seeded:
    at: datetime  # T: every job is due at it with one occurrence
    due: dict[uuid.UUID, datetime]  # job id -> its due occurrence (its next_run_at)
    tenant_of: dict[uuid.UUID, uuid.UUID]  # job id -> its tenant
    zones: int
    seconds: float


async def seed(db: Database, tenants: int, jobs: int) -> Seeded:
    started = time.perf_counter()
    at = utcnow()
    # The latest occurrence at or before `at` in each zone: the one occurrence in (at - 5 min, at].
    occurrence = {zone: schedule.next_cron(CRON, zone, at - timedelta(minutes=5)) for zone in ZONES}
    tenant_rows = [
        {
            "id": uuid.uuid4(),
            "idp_org_id": f"bench-org-{number}",
            "name": f"Bench tenant {number}",
            "status": "active",
            "timezone": ZONES[number % len(ZONES)],
            "created_at": at,
            "updated_at": at,
        }
        for number in range(tenants)
    ]
    due: dict[uuid.UUID, datetime] = {}
    job_rows: list[dict[str, Any]] = []
    for number in range(jobs):
        tenant = tenant_rows[number % tenants]
        next_run_at = occurrence[tenant["timezone"]]
        assert next_run_at is not None and next_run_at <= at
        job_id = uuid.uuid4()
        due[job_id] = next_run_at
        job_rows.append(
            {
                "id": job_id,
                "tenant_id": tenant["id"],
                "name": f"Garden notes {number}",
                "job_type": "recurring",
                "status": "active",
                "cron_expression": CRON,
                "scheduled_dates": [],
                "topics": TOPICS,
                "topic_source": "manual",
                "topic_cursor": number % len(TOPICS),
                "keywords": ["garden"],
                "content_instructions": None,
                "document_ids": [],
                "auto_publish": False,
                "next_run_at": next_run_at,
                "created_by": "bench",
                "created_at": at,
                "updated_at": at,
            }
        )
    async with db.unit_of_work() as session:
        await session.execute(insert(Tenant), tenant_rows)
        for offset in range(0, len(job_rows), SEED_BATCH):
            await session.execute(insert(Job), job_rows[offset : offset + SEED_BATCH])
    if db.dialect == "postgresql":
        async with db.engine.connect() as connection:
            await connection.execute(text("ANALYZE"))
    tenant_of = {row["id"]: row["tenant_id"] for row in job_rows}
    zones = len(set(occurrence.values()))
    return Seeded(at, due, tenant_of, zones, time.perf_counter() - started)


# --- where the time goes (--spans) --------------------------------------------------------------


@dataclass
class Spans:
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls: Counter[str] = field(default_factory=Counter)
    order: list[tuple[str, int]] = field(default_factory=list)  # (label, depth) as installed
    recording: bool = True  # off once the tick returned: the floor's writes are not the tick's

    def wrap(self, owner: Any, attribute: str, label: str, depth: int) -> None:
        inner: Callable[..., Awaitable[Any]] = getattr(owner, attribute)

        @functools.wraps(inner)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await inner(*args, **kwargs)
            finally:
                if self.recording:
                    self.seconds[label] += time.perf_counter() - started
                    self.calls[label] += 1

        setattr(owner, attribute, timed)
        self.order.append((label, depth))

    def wrap_sync(self, owner: Any, attribute: str, label: str, depth: int) -> None:
        inner: Callable[..., Any] = getattr(owner, attribute)

        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                if self.recording:
                    self.seconds[label] += time.perf_counter() - started
                    self.calls[label] += 1

        setattr(owner, attribute, timed)
        self.order.append((label, depth))


def install_spans() -> Spans:
    """Time what a batch's transaction calls, by replacing module attributes in this process
    (each module looks them up at call time)."""
    from sqlalchemy.ext.asyncio import AsyncSession

    from contentplatform.credits import repository as credits_repository
    from contentplatform.credits import service as credits
    from contentplatform.drafts import service as drafts
    from contentplatform.flows import job_runs
    from contentplatform.generation import repository as generation_repository
    from contentplatform.generation import service as generation
    from contentplatform.job_instances import repository as instances
    from contentplatform.jobs import repository as jobs
    from contentplatform.settings import service as settings
    from contentplatform.tenants import repository as tenants
    from contentplatform.workflows import service as workflows

    spans = Spans()
    spans.wrap(jobs, "due_jobs", "repository.due_jobs (the batch's read)", 0)
    spans.wrap(scheduler, "_fire", "scheduler._fire (one batch of tenants, before its commit)", 0)
    spans.wrap(tenants, "lock_tenants", "tenants.lock_tenants (tick and start_blogs_across)", 1)
    spans.wrap(jobs, "claim_due_jobs", "repository.claim_due_jobs", 1)
    spans.wrap_sync(schedule, "due", "schedule.due (cron, in Python)", 1)
    spans.wrap(instances, "at_many", "instances repository.at_many", 1)
    spans.wrap(job_runs, "start_many", "job_runs.start_many", 1)
    spans.wrap(instances, "in_flight_of", "instances repository.in_flight_of", 2)
    spans.wrap(settings, "topic_strategies", "settings.topic_strategies", 2)
    spans.wrap(generation, "start_blogs_across", "generation.start_blogs_across", 2)
    spans.wrap(generation_repository, "by_keys_of", "generation repository.by_keys_of", 3)
    spans.wrap(credits, "reserve_across", "credits.reserve_across", 3)
    spans.wrap(credits_repository, "lock_ledgers", "credits lock_ledgers (advisory)", 4)
    spans.wrap(credits_repository, "accounts", "credits accounts (the grant policies)", 4)
    spans.wrap(credits_repository, "add_buckets_once", "credits add_buckets_once (grants)", 4)
    spans.wrap(credits_repository, "due_buckets", "credits due_buckets", 4)
    spans.wrap(credits_repository, "available", "credits available", 4)
    spans.wrap(credits_repository, "reservations_by_keys", "credits reservations_by_keys", 4)
    spans.wrap(credits_repository, "add_reservations", "credits add_reservations", 4)
    spans.wrap(drafts, "start_generating_across", "drafts.start_generating_across", 3)
    spans.wrap(workflows, "definitions_for_jobs", "workflows.definitions_for_jobs", 3)
    spans.wrap(generation_repository, "add_many_of", "generation repository.add_many_of", 3)
    spans.wrap(AsyncSession, "flush", "AsyncSession.flush (explicit)", 1)
    spans.wrap(AsyncSession, "commit", "AsyncSession.commit (flushes the jobs and instances)", 0)
    spans.wrap(durable, "enqueue_many", "durable.enqueue_many (after the commit)", 0)
    return spans


def print_spans(spans: Spans, jobs: int, total: float) -> None:
    print(f"  where the time goes ({jobs:,} jobs; per job, wall, including awaits):")
    for label, depth in spans.order:
        seconds, calls = spans.seconds.get(label, 0.0), spans.calls.get(label, 0)
        if not calls:
            continue
        print(
            f"    {'  ' * depth}{label}: {seconds / jobs * 1000:.3f} ms "
            f"({seconds / total * 100:.0f}% of the tick, {calls:,} calls)"
        )


# --- the tick -----------------------------------------------------------------------------------


def launch_dbos(settings: Settings) -> None:
    """durable.launch, listening to no queue: what the tick enqueues stays ENQUEUED."""
    from dbos import DBOS

    DBOS(config=durable.dbos_config(settings))
    logs.adopt("dbos")
    DBOS.listen_queues([])
    DBOS.launch()


@dataclass
class Timed:
    reports: list[scheduler.TickReport]
    finished: list[float]  # seconds from the start to each scheduler's return
    seconds: float
    cpu: float  # CPU seconds of this process (every thread) meanwhile


async def measure(current: runtime.Runtime, at: datetime, jobs: int, schedulers: int) -> Timed:
    finished: list[float] = [0.0] * schedulers
    cpu = time.process_time()
    started = time.perf_counter()

    async def one(number: int) -> scheduler.TickReport:
        report = await scheduler.tick(current, at, limit=jobs)
        finished[number] = time.perf_counter() - started
        return report

    reports = await asyncio.gather(*(one(number) for number in range(schedulers)))
    seconds = time.perf_counter() - started
    return Timed(list(reports), finished, seconds, time.process_time() - cpu)


# --- the floor ---------------------------------------------------------------------------------


def table(model: type[Base]) -> Table:
    return cast(Table, model.__table__)


async def floor(db: Database, seeded: Seeded, concurrency: int) -> float:
    """Seconds to write, bare, what the tick writes for the same jobs: per batch of tenants (as
    the tick makes them: scheduler._batches) one transaction of Core bulk inserts (an instance, a
    credit hold, a draft and a run per job) and one bulk UPDATE of its jobs, then one enqueue of
    its workflows beside the next batches, `concurrency` batches at a time as the tick does. No
    locks, no reads, no rules: the work a tick cannot avoid, measured in the same run (after it,
    at other dates and keys)."""
    by_tenant: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    for job_id, tenant_id in seeded.tenant_of.items():
        by_tenant[tenant_id].append(job_id)
    day_after = {job_id: due + timedelta(days=1) for job_id, due in seeded.due.items()}
    gate = asyncio.Semaphore(concurrency)
    enqueues: list[asyncio.Task[None]] = []

    async def write(batch: dict[uuid.UUID, list[uuid.UUID]]) -> None:
        now = utcnow()
        jobs = [
            {
                "tenant_id": tenant_id,
                "job_id": job_id,
                "instance": uuid.uuid4(),
                "hold": uuid.uuid4(),
                "draft": uuid.uuid4(),
                "run": uuid.uuid4(),
            }
            for tenant_id, job_ids in batch.items()
            for job_id in job_ids
        ]
        async with gate, db.unit_of_work() as session:
            await session.execute(
                insert(table(JobInstance)),
                [
                    {
                        "id": job["instance"],
                        "tenant_id": job["tenant_id"],
                        "job_id": job["job_id"],
                        "scheduled_date": day_after[job["job_id"]],
                        "day_mode": "generate",
                        "images": [],
                        "status": "pending",
                        "percent": 0,
                        "attempts": 1,
                        "topic": TOPICS[0],
                        "run_id": job["run"],
                        "draft_id": job["draft"],
                        "created_at": now,
                        "updated_at": now,
                    }
                    for job in jobs
                ],
            )
            await session.execute(
                insert(table(CreditReservation)),
                [
                    {
                        "id": job["hold"],
                        "tenant_id": job["tenant_id"],
                        "kind": "generation.blog",
                        "idempotency_key": f"floor:{job['instance']}",
                        "amount": 40,
                        "status": "held",
                        "expires_at": now + timedelta(hours=1),
                        "created_at": now,
                        "updated_at": now,
                    }
                    for job in jobs
                ],
            )
            await session.execute(
                insert(table(Draft)),
                [
                    {
                        "id": job["draft"],
                        "tenant_id": job["tenant_id"],
                        "title": TOPICS[0],
                        "content": "<p></p>",
                        "content_text": "",
                        "seo_meta": {},
                        "status": "generating",
                        "provenance": {},
                        "version": 0,
                        "run_id": job["run"],
                        "job_id": job["job_id"],
                        "instance_id": job["instance"],
                        "created_at": now,
                        "updated_at": now,
                    }
                    for job in jobs
                ],
            )
            await session.execute(
                insert(table(GenerationRun)),
                [
                    {
                        "id": job["run"],
                        "tenant_id": job["tenant_id"],
                        "kind": "blog",
                        "status": "queued",
                        "percent": 0,
                        "draft_id": job["draft"],
                        "job_id": job["job_id"],
                        "instance_id": job["instance"],
                        "idempotency_key": f"floor:{job['instance']}",
                        "request": {"topic": TOPICS[0], "keywords": ["garden"]},
                        "reservation_id": job["hold"],
                        "created_by": "bench",
                        "created_at": now,
                        "updated_at": now,
                    }
                    for job in jobs
                ],
            )
            job_table = table(Job)
            await session.execute(
                update(job_table).where(job_table.c.id == bindparam("job")),
                [
                    {
                        "job": job["job_id"],
                        "next_run_at": day_after[job["job_id"]],
                        "updated_at": now,
                    }
                    for job in jobs
                ],
            )
        enqueues.append(
            asyncio.create_task(
                durable.enqueue_many(
                    generation_pipeline.generate_blog,
                    [
                        (f"floor:{job['run']}", (str(job["tenant_id"]), str(job["run"])))
                        for job in jobs
                    ],
                    queue=generation_pipeline.QUEUE,
                )
            )
        )

    batches = [batch for turn in scheduler._batches(list(by_tenant.items())) for batch in turn]
    started = time.perf_counter()
    await asyncio.gather(*(write(batch) for batch in batches))
    await asyncio.gather(*enqueues)
    return time.perf_counter() - started


# --- exactly once -------------------------------------------------------------------------------


@dataclass
class Findings:
    lines: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def check(self, ok: bool, line: str, violation: str) -> None:
        self.lines.append(f"{'ok  ' if ok else 'FAIL'} {line}")
        if not ok:
            self.violations.append(violation)


def spread(counter: Counter[int], what: str) -> str:
    return ", ".join(f"{count:,} {what} with {n}" for n, count in sorted(counter.items()))


async def verify(db: Database, seeded: Seeded) -> Findings:
    from dbos import DBOS

    found = Findings()
    jobs = len(seeded.due)
    async with db.unit_of_work() as session:
        instance_rows = (
            await session.execute(
                select(
                    JobInstance.id,
                    JobInstance.job_id,
                    JobInstance.scheduled_date,
                    JobInstance.status,
                    JobInstance.run_id,
                    JobInstance.draft_id,
                )
            )
        ).all()
        run_rows = (
            await session.execute(
                select(
                    GenerationRun.id,
                    GenerationRun.instance_id,
                    GenerationRun.draft_id,
                    GenerationRun.reservation_id,
                    GenerationRun.status,
                )
            )
        ).all()
        drafts_generating = await session.scalar(
            select(func.count()).select_from(Draft).where(Draft.status == "generating")
        )
        holds = Counter(
            key
            for (key,) in await session.execute(
                select(CreditReservation.idempotency_key).where(
                    CreditReservation.kind == "generation.blog"
                )
            )
        )
        job_rows = (await session.execute(select(Job.id, Job.next_run_at, Job.status))).all()

    per_job = Counter(row.job_id for row in instance_rows)
    per_job_spread = Counter(per_job.get(job_id, 0) for job_id in seeded.due)
    found.check(
        per_job_spread == Counter({1: jobs}),
        f"instances per job: {spread(per_job_spread, 'jobs')}",
        "a job has no instance or several",
    )
    at_due = sum(1 for row in instance_rows if seeded.due.get(row.job_id) == row.scheduled_date)
    statuses = Counter(row.status for row in instance_rows)
    found.check(
        at_due == len(instance_rows) == jobs and statuses == Counter({"pending": jobs}),
        f"instances at their due occurrence: {at_due:,} of {len(instance_rows):,}; statuses: "
        + ", ".join(f"{status} {count:,}" for status, count in statuses.most_common()),
        "an instance is not at its job's due occurrence, or did not start",
    )
    per_instance = Counter(row.instance_id for row in run_rows)
    per_instance_spread = Counter(per_instance.get(row.id, 0) for row in instance_rows)
    runs_by_id = {row.id: row for row in run_rows}
    named = sum(
        1
        for row in instance_rows
        if row.run_id in runs_by_id
        and runs_by_id[row.run_id].instance_id == row.id
        and runs_by_id[row.run_id].draft_id == row.draft_id
    )
    found.check(
        per_instance_spread == Counter({1: jobs}) and named == jobs and len(run_rows) == jobs,
        f"generation runs per instance: {spread(per_instance_spread, 'instances')} "
        f"({len(run_rows):,} runs; {named:,} instances name their run and its draft)",
        "an instance has no generation run or several",
    )
    run_statuses = Counter(row.status for row in run_rows)
    held_once = sum(1 for count in holds.values() if count == 1)
    found.check(
        drafts_generating == jobs and len(holds) == jobs and held_once == jobs,
        f"drafts in generating: {drafts_generating:,}; credit holds: {sum(holds.values()):,} "
        f"under {len(holds):,} keys; runs "
        + ", ".join(f"{status} {count:,}" for status, count in run_statuses.most_common()),
        "a run has no draft or credit hold, or several",
    )

    workflows = await DBOS.list_workflows_async(
        workflow_id_prefix="generation:", load_input=False, load_output=False
    )
    ids = Counter(w.workflow_id for w in workflows)
    expected = {generation_workflow_id(row.id) for row in run_rows}
    state = Counter((w.status, w.queue_name) for w in workflows)
    found.check(
        set(ids) == expected
        and all(count == 1 for count in ids.values())
        and state == Counter({(EXPECTED_WORKFLOW_STATUS, generation_pipeline.QUEUE): jobs}),
        f"DBOS workflows generation:<run id>: {len(workflows):,} rows, {len(ids):,} distinct, "
        f"{len(expected & set(ids)):,} of {len(expected):,} runs have theirs; "
        + ", ".join(f"{s} on {q} {count:,}" for (s, q), count in state.most_common()),
        "a run has no DBOS workflow, or a workflow is not a run's",
    )
    future = sum(
        1 for row in job_rows if row.next_run_at is not None and row.next_run_at > seeded.at
    )
    job_statuses = Counter(row.status for row in job_rows)
    found.check(
        future == jobs,
        f"next_run_at after the tick's instant: {future:,} of {len(job_rows):,} jobs; job "
        "statuses: " + ", ".join(f"{s} {count:,}" for s, count in job_statuses.most_common()),
        "a job is still due after the tick",
    )
    return found


# --- main ---------------------------------------------------------------------------------------


async def run(args: argparse.Namespace, settings: Settings) -> int:
    await asyncio.to_thread(migrations.upgrade, settings)
    current = runtime.Runtime.create(settings)
    runtime.install(current)
    try:
        seeded = await seed(current.db, args.tenants, args.jobs)
        launch_dbos(settings)
        try:
            await durable.configure(settings)
            spans = install_spans() if args.spans else None
            timed = await measure(current, seeded.at, args.jobs, args.schedulers)
            if spans is not None:
                spans.recording = False
            findings = await verify(current.db, seeded)
            workers = 1 if current.db.dialect == "sqlite" else settings.scheduler_concurrency
            floor_seconds = await floor(current.db, seeded, workers)
        finally:
            # Nothing runs in this process (it listens to no queue): no need to wait.
            await asyncio.to_thread(durable.shutdown, 0)
        async with current.db.engine.connect() as connection:
            version = (
                (await connection.execute(text("SHOW server_version"))).scalar()
                if current.db.dialect == "postgresql"
                else (await connection.execute(text("SELECT sqlite_version()"))).scalar()
            )
    finally:
        await current.close()
        runtime.install(None)

    backend = "PostgreSQL" if current.db.dialect == "postgresql" else "SQLite"
    total = scheduler.TickReport()
    for report in timed.reports:
        total.started += report.started
        total.skipped += report.skipped
        total.failed += report.failed
        total.errors += report.errors
    print(
        f"scheduler.tick on {backend} {version}: {args.jobs:,} due jobs across {args.tenants:,} "
        f"tenants (cron {CRON!r}, {len(ZONES)} time zones), {args.schedulers} scheduler"
        f"{'s' if args.schedulers > 1 else ''} at once"
    )
    print(f"  seeded in {seeded.seconds:.2f} s (bulk inserts)")
    print(
        f"  tick: {total.started:,} started, {total.skipped:,} skipped, {total.failed:,} failed, "
        f"{total.errors:,} errors in {timed.seconds:.2f} s: {total.started / timed.seconds:,.0f} "
        f"jobs/s, {timed.seconds / max(total.started, 1) * 1000:.2f} ms per job"
    )
    print(
        f"  CPU of this process meanwhile: {timed.cpu:.2f} s, "
        f"{timed.cpu / max(total.started, 1) * 1000:.2f} ms per job "
        f"({timed.cpu / timed.seconds * 100:.0f}% of the wall time; the rest is waiting for the "
        "databases, or for a CPU on a busy machine)"
    )
    print(
        f"  floor, the same rows and workflows written bare in the same run: {floor_seconds:.2f} s;"
        f" the tick takes {timed.seconds / floor_seconds:.2f}x the floor"
    )
    if args.schedulers > 1:
        for number, (report, seconds) in enumerate(
            zip(timed.reports, timed.finished, strict=True), 1
        ):
            print(
                f"    scheduler {number}: {report.started:,} started, {report.skipped:,} skipped, "
                f"{report.failed:,} failed, {report.errors:,} errors; returned after "
                f"{seconds:.2f} s"
            )
    if spans is not None:
        print_spans(spans, max(total.started, 1), timed.seconds)
    print("  exactly once:")
    for line in findings.lines:
        print(f"    {line}")
    if total.started != args.jobs or total.errors or total.failed or total.skipped:
        findings.violations.append("the tick's report does not count every job started once")
    if findings.violations:
        print(f"  VIOLATED: {'; '.join(findings.violations)}")
        return 1
    print(f"  each of the {args.jobs:,} due jobs was started exactly once")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000, help="due jobs")
    parser.add_argument("--tenants", type=int, default=100, help="tenants the jobs belong to")
    parser.add_argument("--schedulers", type=int, default=1, help="ticks at once, one event loop")
    parser.add_argument(
        "--database-url",
        default=MAINTENANCE_URL,
        help="a maintenance database on the PostgreSQL server to create the bench's databases on",
    )
    parser.add_argument("--sqlite", action="store_true", help="SQLite files in a temp directory")
    parser.add_argument("--spans", action="store_true", help="print where the tick's time goes")
    args = parser.parse_args()
    if args.jobs < 1 or not 1 <= args.tenants <= args.jobs or args.schedulers < 1:
        parser.error("need jobs >= tenants >= 1 and schedulers >= 1")
    logs.configure("WARNING", False)
    with tempfile.TemporaryDirectory() as scratch, bench_settings(args, Path(scratch)) as settings:
        status = asyncio.run(run(args, settings))
    sys.exit(status)


if __name__ == "__main__":
    main()
