"""The scheduler's tick against the database: every occurrence fired exactly once.

Each test drives `scheduler.tick` at instants it chooses (tests.jobs.support.tick) after moving a
job's `next_run_at` (set_next_run), and reads what the tick left: the job's instances straight from
the database, its generation runs, and the job through the API (REST and RPC). Runs the tick starts
are real runs of the offline writer on the service's DBOS; a test waits for them before the next
tick (a run in flight would rightly make the next occurrence `skipped`) and before it ends.

What is covered: daylight-saving changes in the tenant's zone (a daily 02:30 job in Europe/Berlin
across the 2027 March and October changes, an hourly job in America/New_York on the 23- and
25-hour days of 2027), downtime coalesced into one run with the rest skipped (and at most
MAX_SKIPPED of them), two schedulers ticking at once against many due jobs, one run at a time per
job, a run that cannot start (no credits) failing its instance and putting the job in `error`
while the schedule goes on, `jobs.updateTimezone` recomputing next runs, a date-list job
completing after its last date, instances planned by hand, many organizations' jobs started in
the statements one organization's as many jobs take, and a suspended organization's jobs
waiting.

The tick looks across tenants: every job of the database whose next run has come is fired. Tests
whose reports are counted exactly tick at instants in the past (2024), where no other test's job
is due; the 2027 DST ticks check only their own job's instances and next run. Every job a test
makes is deleted when it ends, so it never fires in another test's tick.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import event, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.core.runtime import Runtime
from contentplatform.credits import service as credits
from contentplatform.flows import scheduler
from contentplatform.generation.models import GenerationRun
from contentplatform.job_instances import service as instance_rules
from contentplatform.jobs import service as jobs_service
from contentplatform.jobs.models import Job
from contentplatform.jobs.schedule import MAX_SKIPPED
from contentplatform.kit import durable
from contentplatform.kit.db import Database
from contentplatform.tenants.models import Tenant
from tests.documents.support import hold_all_but
from tests.generation.support import blog_reservations
from tests.jobs.support import Planner, instances_of, set_next_run, tick
from tests.support.database import run_on, select_all
from tests.support.orgs import new_org

# A tick here starts only what the test made (tests/jobs/conftest.py).
pytestmark = pytest.mark.usefixtures("nothing_else_due")

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
IN_FLIGHT = ("pending", "running")
NOTHING = scheduler.TickReport()


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def missed(run_at: datetime) -> str:
    """The reason recorded on an occurrence coalesced away after downtime."""
    return (
        f"Missed while the scheduler was not running; the run at {run_at.isoformat()} ran instead."
    )


# --- helpers ----------------------------------------------------------------------------------


class Scheduling(Planner):
    """A Planner that remembers its jobs, to wait for their runs and delete them at the end."""

    def __init__(self, settings: Settings, *args: Any) -> None:
        super().__init__(*args)
        self.settings = settings
        self.job_ids: list[str] = []

    def job(self, role: str = "editor", **fields: Any) -> dict[str, Any]:
        made = super().job(role, **fields)
        self.job_ids.append(made["id"])
        return made

    def recurring(self, cron: str, **fields: Any) -> dict[str, Any]:
        return self.job(jobType="recurring", cronExpression=cron, **fields)

    def zone(self, name: str) -> None:
        assert self.ok("jobs.updateTimezone", {"timezone": name}) == {"timezone": name}

    def get(self, job_id: str) -> dict[str, Any]:
        return self.ok("jobs.getById", {"id": job_id}, role="member")

    def next_run(self, job_id: str) -> datetime | None:
        value = self.get(job_id)["next_run_at"]
        return None if value is None else datetime.fromisoformat(value).astimezone(UTC)

    def dates(self, job_id: str) -> list[datetime]:
        return [row["scheduled_date"] for row in instances_of(self.settings, job_id)]

    def settle(self, job_id: str) -> list[dict[str, Any]]:
        """Wait until no run of the job is in flight; its instances, oldest first."""
        for row in instances_of(self.settings, job_id):
            if row["run_id"] is not None and row["status"] in IN_FLIGHT:
                self.wait_instance(row["id"])
        return instances_of(self.settings, job_id)

    def close(self) -> None:
        for job_id in self.job_ids:
            self.settle(job_id)
            response = self.request("jobs.delete", {"id": job_id})
            assert response.status_code in (200, 404), response.text


@pytest.fixture
def scheduling(call, client, token, org, settings) -> Iterator[Callable[..., Scheduling]]:
    """`scheduling()`: the test's organization (`org`) the first time, a new one after, with the
    irrigation handbook to write from (`knowledge=False`: nothing to write from)."""
    made: list[Scheduling] = []

    def make(knowledge: bool = True) -> Scheduling:
        planner = Scheduling(settings, call, client, token, new_org() if made else org)
        made.append(planner)
        if knowledge:
            planner.handbook()
        return planner

    yield make
    for planner in made:
        planner.close()


def runs_per_instance(settings: Settings, job_ids: list[str]) -> Counter[str]:
    """How many generation runs each instance of these jobs has, by instance id."""

    async def scenario(db: Database) -> Counter[str]:
        async with db.unit_of_work() as session:
            rows = await session.execute(
                select(GenerationRun.instance_id, func.count())
                .where(GenerationRun.job_id.in_([uuid.UUID(i) for i in job_ids]))
                .group_by(GenerationRun.instance_id)
            )
            return Counter({str(instance_id): count for instance_id, count in rows.tuples()})

    return run_on(settings, scenario)


def release_holds(settings: Settings, tenant_id: uuid.UUID) -> None:
    """Give back the holds `hold_all_but` took."""
    held = [r for r in blog_reservations(settings, tenant_id) if r["key"].startswith("test-hold-")]

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            for reservation in held:
                await credits.release(session, tenant_id, uuid.UUID(reservation["id"]))

    run_on(settings, scenario)


def ticks_at_once(settings: Settings, now: datetime, schedulers: int) -> list[Any]:
    """`schedulers` ticks at `now` at the same time, each in its own thread with its own event
    loop, engine and connections (as separate processes would have): their reports, or the
    exception a tick raised."""
    ready = threading.Barrier(schedulers, timeout=30)
    outcomes: list[Any] = [None] * schedulers

    async def one() -> scheduler.TickReport:
        runtime = Runtime.create(settings)
        try:
            async with runtime.db.unit_of_work() as session:
                await session.execute(text("SELECT 1"))  # connected before the start line
            ready.wait()
            return await scheduler.tick(runtime, now)
        finally:
            await runtime.close()

    def thread(index: int) -> None:
        try:
            outcomes[index] = asyncio.run(one())
        except BaseException as error:  # reported by the test, not lost in the thread
            outcomes[index] = error

    threads = [threading.Thread(target=thread, args=(i,)) for i in range(schedulers)]
    for each in threads:
        each.start()
    for each in threads:
        each.join(120)
    assert not any(each.is_alive() for each in threads), "a tick never finished"
    return outcomes


def planned_on(planner: Scheduling, day: date, zone: ZoneInfo) -> list[datetime]:
    """What jobs.calendar plans for the local day `day` in `zone` (midnight to midnight, however
    many real hours that is), in UTC; every entry must be a planned one."""
    start = datetime.combine(day, datetime.min.time(), zone)
    end = datetime.combine(day + timedelta(days=1), datetime.min.time(), zone)
    entries = planner.ok(
        "jobs.calendar",
        {"startDate": start.isoformat(), "endDate": end.isoformat()},
        role="member",
    )
    assert {(e["status"], e["instance_id"]) for e in entries} <= {("planned", None)}, entries
    return [datetime.fromisoformat(e["date"]).astimezone(UTC) for e in entries]


def fire(settings: Settings, planner: Scheduling, job_id: str, now: datetime) -> None:
    """Tick at `now` and wait for what it started of this job."""
    report = tick(settings, now)
    assert report.errors == 0, report
    planner.settle(job_id)


# --- daylight saving --------------------------------------------------------------------------


def test_a_daily_0230_job_in_berlin_fires_once_on_each_dst_change_day(scheduling, settings) -> None:
    """28 March 2027: 02:30 does not exist in Berlin, the job runs once at 03:00 CEST (01:00 UTC).
    31 October 2027: 02:30 happens twice, the job runs once, at the first (00:30 UTC)."""
    planner = scheduling()
    planner.zone("Europe/Berlin")
    job = planner.recurring("30 2 * * *")["id"]

    # The calendar plans one occurrence on each change day.
    set_next_run(settings, job, utc(2027, 3, 1))
    assert planned_on(planner, date(2027, 3, 28), BERLIN) == [utc(2027, 3, 28, 1, 0)]
    assert planned_on(planner, date(2027, 10, 31), BERLIN) == [utc(2027, 10, 31, 0, 30)]

    # Spring forward.
    set_next_run(settings, job, utc(2027, 3, 27, 1, 30))  # Saturday 02:30 CET
    fire(settings, planner, job, utc(2027, 3, 27, 1, 30))
    assert planner.next_run(job) == utc(2027, 3, 28, 1, 0)  # 03:00 CEST, right after the gap
    fire(settings, planner, job, utc(2027, 3, 28, 0, 59, 59))  # not yet
    assert planner.dates(job) == [utc(2027, 3, 27, 1, 30)]
    fire(settings, planner, job, utc(2027, 3, 28, 1, 0))
    assert planner.next_run(job) == utc(2027, 3, 29, 0, 30)  # 02:30 CEST
    fire(settings, planner, job, utc(2027, 3, 28, 1, 30))  # 03:30 CEST: nothing more
    fire(settings, planner, job, utc(2027, 3, 29, 0, 30))
    assert planner.next_run(job) == utc(2027, 3, 30, 0, 30)
    spring = [utc(2027, 3, 27, 1, 30), utc(2027, 3, 28, 1, 0), utc(2027, 3, 29, 0, 30)]
    assert planner.dates(job) == spring
    assert [moment.astimezone(BERLIN).day for moment in spring] == [27, 28, 29]

    # Fall back.
    set_next_run(settings, job, utc(2027, 10, 30, 0, 30))  # Saturday 02:30 CEST
    fire(settings, planner, job, utc(2027, 10, 30, 0, 30))
    assert planner.next_run(job) == utc(2027, 10, 31, 0, 30)  # the first 02:30 (CEST)
    fire(settings, planner, job, utc(2027, 10, 31, 0, 30))
    assert planner.next_run(job) == utc(2027, 11, 1, 1, 30)  # Monday 02:30 CET
    fire(settings, planner, job, utc(2027, 10, 31, 1, 30))  # the second 02:30 (CET): nothing
    fire(settings, planner, job, utc(2027, 11, 1, 1, 30))
    assert planner.next_run(job) == utc(2027, 11, 2, 1, 30)
    autumn = [utc(2027, 10, 30, 0, 30), utc(2027, 10, 31, 0, 30), utc(2027, 11, 1, 1, 30)]

    rows = instances_of(settings, job)
    assert [row["scheduled_date"] for row in rows] == spring + autumn
    assert {row["status"] for row in rows} == {"completed"}, rows
    assert [m.astimezone(BERLIN).strftime("%d %H:%M") for m in autumn] == [
        "30 02:30",
        "31 02:30",
        "01 02:30",
    ]
    assert set(runs_per_instance(settings, [job]).values()) == {1}
    assert len(runs_per_instance(settings, [job])) == 6


def test_an_hourly_job_in_new_york_fires_once_per_real_hour_across_both_dst_changes(
    scheduling, settings
) -> None:
    """The calendar plans 23 occurrences on 14 March 2027 and 25 on 7 November 2027; the tick
    fires 01:00 EDT and 01:00 EST as two occurrences an hour apart, and goes from 01:00 EST to
    03:00 EDT in one hour in spring."""
    planner = scheduling()
    planner.zone("America/New_York")
    job = planner.recurring("0 * * * *")["id"]
    set_next_run(settings, job, utc(2027, 3, 1))

    spring = planned_on(planner, date(2027, 3, 14), NEW_YORK)  # midnight EST to midnight EDT
    assert len(spring) == 23
    assert spring == [utc(2027, 3, 14, 5) + timedelta(hours=h) for h in range(23)]
    assert [m.astimezone(NEW_YORK).hour for m in spring] == [0, 1, *range(3, 24)]
    autumn = planned_on(planner, date(2027, 11, 7), NEW_YORK)  # midnight EDT to midnight EST
    assert len(autumn) == 25
    assert autumn == [utc(2027, 11, 7, 4) + timedelta(hours=h) for h in range(25)]
    assert [m.astimezone(NEW_YORK).hour for m in autumn] == [0, 1, 1, *range(2, 24)]

    # Through the tick: 01:00 EST, then 03:00 EDT an hour later.
    set_next_run(settings, job, utc(2027, 3, 14, 6))
    fire(settings, planner, job, utc(2027, 3, 14, 6))
    assert planner.next_run(job) == utc(2027, 3, 14, 7)  # 03:00 EDT
    # 01:00 EDT, then 01:00 EST, then 02:00 EST.
    set_next_run(settings, job, utc(2027, 11, 7, 5))
    fire(settings, planner, job, utc(2027, 11, 7, 5))
    assert planner.next_run(job) == utc(2027, 11, 7, 6)
    fire(settings, planner, job, utc(2027, 11, 7, 6))
    assert planner.next_run(job) == utc(2027, 11, 7, 7)
    fired = planner.dates(job)
    assert fired == [utc(2027, 3, 14, 6), utc(2027, 11, 7, 5), utc(2027, 11, 7, 6)]
    assert [m.astimezone(NEW_YORK).strftime("%H:%M %Z") for m in fired] == [
        "01:00 EST",
        "01:00 EDT",
        "01:00 EST",
    ]


def test_downtime_across_a_dst_change_skips_each_missed_occurrence_once(
    scheduling, settings
) -> None:
    """Coalescing counts occurrences, not wall times: two local days missed in Berlin are two
    skipped instances on both change days, and the New York fall-back night's two 01:00s are
    two skipped instances."""
    planner = scheduling()
    planner.zone("Europe/Berlin")
    daily = planner.recurring("30 2 * * *")["id"]

    set_next_run(settings, daily, utc(2027, 3, 27, 1, 30))
    fire(settings, planner, daily, utc(2027, 3, 29, 12))
    spring = instances_of(settings, daily)
    assert [(r["scheduled_date"], r["status"]) for r in spring] == [
        (utc(2027, 3, 27, 1, 30), "skipped"),
        (utc(2027, 3, 28, 1, 0), "skipped"),
        (utc(2027, 3, 29, 0, 30), "completed"),
    ]
    assert {r["error"] for r in spring[:2]} == {missed(utc(2027, 3, 29, 0, 30))}
    assert planner.next_run(daily) == utc(2027, 3, 30, 0, 30)

    set_next_run(settings, daily, utc(2027, 10, 30, 0, 30))
    fire(settings, planner, daily, utc(2027, 11, 1, 12))
    autumn = instances_of(settings, daily)[3:]
    assert [(r["scheduled_date"], r["status"]) for r in autumn] == [
        (utc(2027, 10, 30, 0, 30), "skipped"),
        (utc(2027, 10, 31, 0, 30), "skipped"),  # once: the 01:30 UTC pass is not another
        (utc(2027, 11, 1, 1, 30), "completed"),
    ]
    assert planner.next_run(daily) == utc(2027, 11, 2, 1, 30)

    other = scheduling()
    other.zone("America/New_York")
    hourly = other.recurring("0 * * * *")["id"]
    set_next_run(settings, hourly, utc(2027, 11, 7, 4))  # 00:00 EDT
    fire(settings, other, hourly, utc(2027, 11, 7, 7, 30))  # 02:30 EST
    rows = instances_of(settings, hourly)
    assert [(r["scheduled_date"], r["status"]) for r in rows] == [
        (utc(2027, 11, 7, 4), "skipped"),  # 00:00 EDT
        (utc(2027, 11, 7, 5), "skipped"),  # 01:00 EDT
        (utc(2027, 11, 7, 6), "skipped"),  # 01:00 EST
        (utc(2027, 11, 7, 7), "completed"),  # 02:00 EST
    ]
    assert other.next_run(hourly) == utc(2027, 11, 7, 8)


# --- downtime ---------------------------------------------------------------------------------


def test_downtime_becomes_one_run_and_skipped_instances_and_a_repeated_tick_adds_nothing(
    scheduling, settings
) -> None:
    planner = scheduling()
    job = planner.recurring("*/15 * * * *")["id"]
    set_next_run(settings, job, utc(2024, 1, 8, 10))
    now = utc(2024, 1, 8, 11, 7)  # 10:00, 10:15, 10:30, 10:45 and 11:00 were missed

    report = tick(settings, now)

    assert report == scheduler.TickReport(started=1, skipped=4)
    rows = planner.settle(job)
    assert [(r["scheduled_date"], r["status"]) for r in rows] == [
        (utc(2024, 1, 8, 10, 0), "skipped"),
        (utc(2024, 1, 8, 10, 15), "skipped"),
        (utc(2024, 1, 8, 10, 30), "skipped"),
        (utc(2024, 1, 8, 10, 45), "skipped"),
        (utc(2024, 1, 8, 11, 0), "completed"),
    ]
    assert {r["error"] for r in rows[:4]} == {missed(utc(2024, 1, 8, 11))}
    assert all(r["run_id"] is None for r in rows[:4])
    assert runs_per_instance(settings, [job]) == Counter({rows[4]["id"]: 1})
    assert planner.next_run(job) == utc(2024, 1, 8, 11, 15)

    assert tick(settings, now) == NOTHING
    assert tick(settings, utc(2024, 1, 8, 11, 14, 59)) == NOTHING
    assert instances_of(settings, job) == rows
    assert planner.get(job)["status"] == "active"


def test_a_long_downtime_records_at_most_max_skipped_occurrences(scheduling, settings) -> None:
    planner = scheduling()
    job = planner.recurring("0 * * * *")["id"]
    set_next_run(settings, job, utc(2024, 1, 1))
    now = utc(2024, 1, 15, 0, 30)  # 14 days of hourly occurrences: 337 missed

    report = tick(settings, now)

    assert report == scheduler.TickReport(started=1, skipped=MAX_SKIPPED)
    rows = planner.settle(job)
    run_at = utc(2024, 1, 15)
    assert [r["scheduled_date"] for r in rows] == [
        run_at - timedelta(hours=h) for h in range(MAX_SKIPPED, -1, -1)
    ]
    assert [r["status"] for r in rows] == ["skipped"] * MAX_SKIPPED + ["completed"]
    assert planner.next_run(job) == utc(2024, 1, 15, 1)


# --- two schedulers ---------------------------------------------------------------------------


@pytest.mark.parametrize("call", ["rpc"], indirect=True)  # 30 runs: once is enough
def test_two_schedulers_ticking_at_once_start_each_occurrence_exactly_once(
    scheduling, settings
) -> None:
    """30 due jobs in 3 organizations, two ticks at the same instant on one database: the work
    is shared, never done twice."""
    planners = [scheduling() for _ in range(3)]
    jobs: list[str] = []
    for planner in planners:
        for number in range(10):
            jobs.append(planner.recurring("0 9 * * *", name=f"Daily notes {number}")["id"])
    occurrence = utc(2024, 1, 8, 9)
    for job in jobs:
        set_next_run(settings, job, occurrence)

    outcomes = ticks_at_once(settings, occurrence + timedelta(seconds=30), schedulers=2)

    for outcome in outcomes:
        assert isinstance(outcome, scheduler.TickReport), outcome
        assert (outcome.skipped, outcome.failed, outcome.errors) == (0, 0, 0), outcomes
    assert sum(outcome.started for outcome in outcomes) == 30, outcomes
    made = {job: instances_of(settings, job) for job in jobs}
    for job, rows in made.items():
        assert [r["scheduled_date"] for r in rows] == [occurrence], (job, rows)
        assert rows[0]["run_id"] is not None
    runs = runs_per_instance(settings, jobs)
    assert runs == Counter({rows[0]["id"]: 1 for rows in made.values()})
    assert tick(settings, occurrence + timedelta(minutes=1)) == NOTHING

    for planner, owned in zip(planners, [jobs[:10], jobs[10:20], jobs[20:]], strict=True):
        for job in owned:
            assert [r["status"] for r in planner.settle(job)] == ["completed"]
            assert planner.next_run(job) == utc(2024, 1, 9, 9)


@pytest.mark.parametrize("call", ["rpc"], indirect=True)
def test_two_schedulers_ticking_at_once_start_each_planned_instance_exactly_once(
    scheduling, settings
) -> None:
    """Instances planned by hand (jobInstances.create) for one-off jobs without a date of their
    own are started by whichever tick claims them first, once."""
    planners = [scheduling() for _ in range(2)]
    at = utc(2024, 1, 8, 9, 30)
    planned: dict[str, str] = {}  # job -> its planned instance
    for planner in planners:
        for number in range(5):
            job = planner.job(name=f"Planned notes {number}")["id"]
            planned[job] = planner.ok(
                "jobInstances.create",
                {"jobId": job, "scheduledDate": at.isoformat()},
                role="editor",
            )["id"]

    outcomes = ticks_at_once(settings, at, schedulers=2)

    for outcome in outcomes:
        assert isinstance(outcome, scheduler.TickReport), outcome
        assert (outcome.skipped, outcome.failed, outcome.errors) == (0, 0, 0), outcomes
    assert sum(outcome.started for outcome in outcomes) == 10, outcomes
    assert runs_per_instance(settings, list(planned)) == Counter(dict.fromkeys(planned.values(), 1))
    for planner in planners:
        for job in planner.job_ids:
            rows = planner.settle(job)
            assert [(r["id"], r["status"]) for r in rows] == [(planned[job], "completed")]


# --- one run at a time ------------------------------------------------------------------------


def test_an_occurrence_due_while_a_run_is_in_flight_is_skipped_with_the_reason(
    scheduling, settings
) -> None:
    planner = scheduling()
    job = planner.recurring("0 9 * * *")["id"]

    # The triggered run must still be in flight once the tick is over; it finishes in about a
    # second, a tick takes a fraction of that, yet a slow machine gets a second chance.
    for day in (8, 9, 10):
        occurrence = utc(2024, 1, day, 9)
        set_next_run(settings, job, occurrence)
        triggered = planner.ok("jobs.trigger", {"id": job}, role="editor")
        report = tick(settings, occurrence + timedelta(minutes=1))
        still = planner.ok("jobInstances.getProgress", {"id": triggered["id"]}, role="member")
        if still["status"] in IN_FLIGHT:
            break
        planner.settle(job)
    else:
        pytest.fail("the triggered run always finished before the tick did")

    assert report == scheduler.TickReport(skipped=1)
    due = [r for r in instances_of(settings, job) if r["scheduled_date"] == occurrence]
    assert len(due) == 1
    assert due[0]["status"] == "skipped"
    assert due[0]["error"] == instance_rules.BUSY
    assert due[0]["run_id"] is None
    assert planner.next_run(job) == occurrence + timedelta(days=1)
    finished, _ = planner.wait_instance(triggered["id"])
    assert finished["status"] == "completed"
    assert runs_per_instance(settings, [job])[triggered["id"]] == 1

    # Once the run is over, the next occurrence runs.
    after = tick(settings, occurrence + timedelta(days=1))
    assert after == scheduler.TickReport(started=1)
    assert planner.settle(job)[-1]["status"] == "completed"


# --- a run that cannot start ------------------------------------------------------------------


def test_a_run_without_credits_fails_its_instance_and_the_job_and_the_schedule_goes_on(
    scheduling, settings
) -> None:
    planner = scheduling()
    job = planner.recurring("0 9 * * *")["id"]
    hold_all_but(settings, planner.tenant_id, 0)
    occurrence = utc(2024, 1, 8, 9)
    set_next_run(settings, job, occurrence)

    report = tick(settings, occurrence + timedelta(seconds=5))

    assert report == scheduler.TickReport(failed=1)
    [row] = instances_of(settings, job)
    assert row["status"] == "failed"
    assert row["run_id"] is None
    hold = settings.generation_credit_hold
    assert row["error"] == f"This needs {hold} credits; 0 are available."
    after = planner.get(job)
    assert after["status"] == "error"
    assert after["last_error"] == row["error"]
    assert planner.next_run(job) == utc(2024, 1, 9, 9)
    assert runs_per_instance(settings, [job]) == Counter()

    # A job in error keeps its schedule: the next occurrence is tried, and runs once credits
    # are back.
    assert tick(settings, utc(2024, 1, 9, 9)) == scheduler.TickReport(failed=1)
    release_holds(settings, planner.tenant_id)
    assert tick(settings, utc(2024, 1, 10, 9)) == scheduler.TickReport(started=1)
    rows = planner.settle(job)
    assert [r["status"] for r in rows] == ["failed", "failed", "completed"]
    recovered = planner.get(job)
    assert recovered["status"] == "active"
    assert recovered["last_error"] is None


# --- the organization's zone ------------------------------------------------------------------


def next_nine(zone: str, after: datetime) -> datetime:
    """The first 09:00 on `zone`'s wall clock strictly after `after` (zones without DST)."""
    local = after.astimezone(ZoneInfo(zone))
    nine = local.replace(hour=9, minute=0, second=0, microsecond=0)
    return (nine if nine > local else nine + timedelta(days=1)).astimezone(UTC)


def test_update_timezone_recomputes_the_next_run_of_active_jobs(scheduling) -> None:
    planner = scheduling(knowledge=False)
    made = datetime.now(UTC)
    daily = planner.recurring("0 9 * * *")["id"]
    paused = planner.recurring("0 9 * * *", status="paused")["id"]
    when = (made + timedelta(days=3)).replace(microsecond=0)
    dated = planner.job(jobType="scheduled", scheduledDates=[when.isoformat()])["id"]
    before = planner.next_run(daily)
    assert before in (next_nine("UTC", made), next_nine("UTC", datetime.now(UTC)))

    moved = datetime.now(UTC)
    planner.zone("Asia/Tokyo")
    after = planner.next_run(daily)

    assert after in (next_nine("Asia/Tokyo", moved), next_nine("Asia/Tokyo", datetime.now(UTC)))
    assert after != before
    assert (after.hour, after.minute) == (0, 0)  # 09:00 JST is midnight UTC
    assert planner.next_run(paused) is None  # paused: still nothing planned
    assert planner.next_run(dated) == when  # an instant is the same instant in any zone
    assert planner.ok("jobs.schedulingConfig", role="member") == {"timezone": "Asia/Tokyo"}
    entries = planner.ok(
        "jobs.calendar",
        {"startDate": moved.isoformat(), "endDate": (moved + timedelta(days=2)).isoformat()},
        role="member",
    )
    assert [datetime.fromisoformat(e["date"]) for e in entries if e["job_id"] == daily] == [
        after,
        after + timedelta(days=1),
    ]

    back = datetime.now(UTC)
    planner.zone("UTC")
    assert planner.next_run(daily) in (next_nine("UTC", back), next_nine("UTC", datetime.now(UTC)))


# --- date lists and planned instances ---------------------------------------------------------


def test_a_scheduled_job_completes_once_its_last_date_ran(scheduling, settings) -> None:
    planner = scheduling()
    soon = (datetime.now(UTC) + timedelta(days=2)).replace(second=0, microsecond=0)
    first, last = soon, soon + timedelta(days=1)
    job = planner.job(jobType="scheduled", scheduledDates=[last.isoformat(), first.isoformat()])
    assert planner.next_run(job["id"]) == first

    fire(settings, planner, job["id"], first)
    middle = planner.get(job["id"])
    assert middle["status"] == "active"
    assert planner.next_run(job["id"]) == last

    fire(settings, planner, job["id"], last + timedelta(minutes=1))
    done = planner.get(job["id"])
    assert done["status"] == "completed"
    assert done["next_run_at"] is None
    assert [(r["scheduled_date"], r["status"]) for r in instances_of(settings, job["id"])] == [
        (first, "completed"),
        (last, "completed"),
    ]
    fire(settings, planner, job["id"], last + timedelta(days=30))
    assert planner.dates(job["id"]) == [first, last]


def test_a_planned_instance_starts_at_its_date_and_is_skipped_when_its_job_is_paused(
    scheduling, settings
) -> None:
    planner = scheduling()
    at = (datetime.now(UTC) + timedelta(days=5)).replace(second=0, microsecond=0)
    running = planner.job(name="Runs on its planned day")["id"]  # one-off, no date of its own
    stopped = planner.job(name="Paused before its planned day")["id"]
    planned = {
        job: planner.ok(
            "jobInstances.create", {"jobId": job, "scheduledDate": at.isoformat()}, role="editor"
        )["id"]
        for job in (running, stopped)
    }
    planner.ok("jobs.pause", {"id": stopped})

    fire(settings, planner, running, at - timedelta(seconds=1))
    assert [r["status"] for r in instances_of(settings, running)] == ["pending"]
    fire(settings, planner, running, at)

    [ran] = planner.settle(running)
    assert (ran["id"], ran["status"]) == (planned[running], "completed")
    [skipped] = instances_of(settings, stopped)
    assert (skipped["id"], skipped["status"]) == (planned[stopped], "skipped")
    assert skipped["error"] == instance_rules.JOB_PAUSED


def test_an_occurrence_planned_by_hand_is_the_one_the_tick_runs_and_one_skipped_is_not(
    scheduling, settings
) -> None:
    planner = scheduling()
    job = planner.recurring("0 9 * * *")["id"]
    first, second = utc(2024, 1, 8, 9), utc(2024, 1, 9, 9)
    planned = planner.ok(
        "jobInstances.create",
        {"jobId": job, "scheduledDate": first.isoformat(), "keywords": ["drip irrigation"]},
        role="editor",
    )
    skipped = planner.ok(
        "jobInstances.create", {"jobId": job, "scheduledDate": second.isoformat()}, role="editor"
    )
    planner.ok("jobInstances.skip", {"id": skipped["id"]}, role="editor")
    set_next_run(settings, job, first)

    assert tick(settings, first) == scheduler.TickReport(started=1)
    rows = planner.settle(job)
    assert [(r["id"], r["status"]) for r in rows] == [
        (planned["id"], "completed"),
        (skipped["id"], "skipped"),
    ]
    ran = planner.ok("jobInstances.getById", {"id": planned["id"]}, role="member")
    assert ran["keywords"] == ["drip irrigation"]
    assert runs_per_instance(settings, [job]) == Counter({planned["id"]: 1})

    assert tick(settings, second) == NOTHING
    assert [(r["id"], r["status"], r["error"]) for r in instances_of(settings, job)] == [
        (planned["id"], "completed", None),
        (skipped["id"], "skipped", instance_rules.SKIPPED_BY_HAND),
    ]
    assert planner.next_run(job) == utc(2024, 1, 10, 9)
    assert runs_per_instance(settings, [job]) == Counter({planned["id"]: 1})


def test_an_occurrence_planned_by_hand_and_missed_in_downtime_is_skipped_as_missed(
    scheduling, settings
) -> None:
    """Coalescing holds for occurrences planned ahead too: the latest occurrence runs, the
    planned one that was missed is recorded as missed, not run and not blamed on a busy job."""
    planner = scheduling()
    job = planner.recurring("0 9 * * *")["id"]
    planned = planner.ok(
        "jobInstances.create",
        {"jobId": job, "scheduledDate": utc(2024, 1, 8, 9).isoformat()},
        role="editor",
    )
    set_next_run(settings, job, utc(2024, 1, 8, 9))

    report = tick(settings, utc(2024, 1, 10, 9, 30))

    rows = planner.settle(job)
    assert [(r["scheduled_date"], r["status"]) for r in rows] == [
        (utc(2024, 1, 8, 9), "skipped"),
        (utc(2024, 1, 9, 9), "skipped"),
        (utc(2024, 1, 10, 9), "completed"),
    ]
    assert rows[0]["id"] == planned["id"]
    assert runs_per_instance(settings, [job]) == Counter({rows[2]["id"]: 1})
    assert report == scheduler.TickReport(started=1, skipped=2)
    assert {r["error"] for r in rows[:2]} == {missed(utc(2024, 1, 10, 9))}


def test_instances_planned_by_hand_and_missed_together_run_only_the_latest(
    scheduling, settings
) -> None:
    """A job planned only by hand (a one-off without a date) coalesces like a schedule: after
    downtime the latest planned instance runs and the earlier ones are skipped as missed."""
    planner = scheduling()
    job = planner.job()["id"]
    days = [utc(2024, 1, 8, 9), utc(2024, 1, 9, 9), utc(2024, 1, 10, 9)]
    for day in days:
        planner.ok(
            "jobInstances.create", {"jobId": job, "scheduledDate": day.isoformat()}, role="editor"
        )

    report = tick(settings, utc(2024, 1, 10, 9, 30))

    rows = planner.settle(job)
    assert [(r["scheduled_date"], r["status"]) for r in rows] == [
        (days[0], "skipped"),
        (days[1], "skipped"),
        (days[2], "completed"),
    ]
    assert {r["error"] for r in rows[:2]} == {instance_rules.MISSED_FOR_LATER}
    assert runs_per_instance(settings, [job]) == Counter({rows[2]["id"]: 1})
    assert report == scheduler.TickReport(started=1, skipped=2)


# --- a tenant's jobs together -----------------------------------------------------------------


def daily_jobs(planner: Scheduling, count: int, occurrence: datetime) -> list[str]:
    """`count` daily 09:00 jobs of the planner's organization, each due at `occurrence`."""
    jobs = [planner.recurring("0 9 * * *", name=f"Daily notes {n}")["id"] for n in range(count)]
    for job in jobs:
        set_next_run(planner.settings, job, occurrence)
    return jobs


@pytest.mark.parametrize("call", ["rpc"], indirect=True)  # 10 runs: once is enough
def test_a_tenants_due_jobs_start_together_in_chunks_each_exactly_once(
    scheduling, settings, monkeypatch
) -> None:
    """Ten due jobs of one organization, started four at a time (a chunk is one transaction):
    each gets one instance, one run with its own credit hold, and its article; a tick after it
    starts nothing."""
    monkeypatch.setattr(scheduler, "CHUNK", 4)
    planner = scheduling()
    occurrence = utc(2024, 1, 8, 9)
    jobs = daily_jobs(planner, 10, occurrence)

    assert tick(settings, occurrence + timedelta(seconds=30)) == scheduler.TickReport(started=10)
    assert tick(settings, occurrence + timedelta(minutes=1)) == NOTHING

    made = {job: planner.settle(job) for job in jobs}
    for job, rows in made.items():
        assert [(r["scheduled_date"], r["status"]) for r in rows] == [(occurrence, "completed")]
        assert planner.next_run(job) == utc(2024, 1, 9, 9)
    instance_ids = {rows[0]["id"] for rows in made.values()}
    assert runs_per_instance(settings, jobs) == Counter(dict.fromkeys(instance_ids, 1))
    holds = blog_reservations(settings, planner.tenant_id)
    assert sorted(h["key"] for h in holds) == sorted(f"job-instance:{i}:1" for i in instance_ids)
    assert {h["status"] for h in holds} == {"committed"}


@pytest.mark.parametrize("call", ["rpc"], indirect=True)
def test_a_tenant_short_of_credits_starts_what_they_cover_and_fails_the_rest_visibly(
    scheduling, settings, monkeypatch
) -> None:
    """Six due jobs of an organization whose credits cover two runs, and three of another: the
    first organization's two start and four fail with the reason (their jobs in error), across
    chunks; the other organization's all start."""
    monkeypatch.setattr(scheduler, "CHUNK", 4)
    short, other = scheduling(), scheduling()
    occurrence = utc(2024, 1, 8, 9)
    short_jobs = daily_jobs(short, 6, occurrence)
    other_jobs = daily_jobs(other, 3, occurrence)
    hold = settings.generation_credit_hold
    hold_all_but(settings, short.tenant_id, 2 * hold + hold // 2)

    report = tick(settings, occurrence + timedelta(seconds=30))

    assert report == scheduler.TickReport(started=5, failed=4)
    reason = f"This needs {hold} credits; {hold // 2} are available."
    outcomes = Counter()
    for job in short_jobs:
        [row] = short.settle(job)
        outcomes[row["status"]] += 1
        after = short.get(job)
        if row["status"] == "failed":
            assert (row["error"], row["run_id"]) == (reason, None)
            assert (after["status"], after["last_error"]) == ("error", reason)
        else:
            assert row["status"] == "completed"
            assert (after["status"], after["last_error"]) == ("active", None)
        assert short.next_run(job) == utc(2024, 1, 9, 9)  # the schedule goes on either way
    assert outcomes == Counter({"completed": 2, "failed": 4})
    assert [r["status"] for job in other_jobs for r in other.settle(job)] == ["completed"] * 3
    assert len(runs_per_instance(settings, short_jobs)) == 2
    release_holds(settings, short.tenant_id)


@pytest.mark.parametrize("call", ["rpc"], indirect=True)
def test_two_schedulers_share_tenants_chunk_by_chunk_and_start_each_job_once(
    scheduling, settings, monkeypatch
) -> None:
    """Two ticks at once over two organizations of nine due jobs each, three jobs to a chunk:
    whichever tick locks a tenant first starts its chunk; the other finds those jobs taken."""
    monkeypatch.setattr(scheduler, "CHUNK", 3)
    planners = [scheduling(), scheduling()]
    occurrence = utc(2024, 1, 8, 9)
    jobs = [job for planner in planners for job in daily_jobs(planner, 9, occurrence)]

    outcomes = ticks_at_once(settings, occurrence + timedelta(seconds=30), schedulers=2)

    for outcome in outcomes:
        assert isinstance(outcome, scheduler.TickReport), outcome
        assert (outcome.skipped, outcome.failed, outcome.errors) == (0, 0, 0), outcomes
    assert sum(outcome.started for outcome in outcomes) == 18, outcomes
    made = {job: instances_of(settings, job) for job in jobs}
    assert all([r["scheduled_date"] for r in rows] == [occurrence] for rows in made.values())
    assert runs_per_instance(settings, jobs) == Counter(
        {rows[0]["id"]: 1 for rows in made.values()}
    )
    for planner in planners:
        assert len(blog_reservations(settings, planner.tenant_id)) == 9
        for job in planner.job_ids:
            assert [r["status"] for r in planner.settle(job)] == ["completed"]


def tick_counting(settings: Settings, now: datetime) -> tuple[scheduler.TickReport, int]:
    """A tick at `now`, and how many statements it sent to the service's database."""

    async def scenario(_: Database) -> tuple[scheduler.TickReport, int]:
        runtime = Runtime.create(settings)
        sent: list[str] = []
        event.listen(
            runtime.db.engine.sync_engine,
            "before_cursor_execute",
            lambda _conn, _cursor, statement, *_: sent.append(statement),
        )
        try:
            report = await scheduler.tick(runtime, now)
            return report, len(sent)
        finally:
            await runtime.close()

    return run_on(settings, scenario)


@pytest.mark.parametrize("call", ["rpc"], indirect=True)
def test_six_organizations_one_job_each_cost_a_tick_what_one_organizations_six_jobs_do(
    scheduling, settings
) -> None:
    """The tick's work follows its due jobs, not their organizations: six organizations' due job
    each start in the statements one organization's six due jobs take (one transaction for all,
    each organization's credits held against its own balance), each exactly once."""
    one = scheduling(knowledge=False)
    many = [scheduling(knowledge=False) for _ in range(6)]
    monday = utc(2024, 1, 8, 9)
    alone = [one.recurring("0 9 * * 1", name=f"Weekly notes {n}")["id"] for n in range(6)]
    for job in alone:
        set_next_run(settings, job, monday)
    tuesday = utc(2024, 1, 9, 9)
    spread = [job for planner in many for job in daily_jobs(planner, 1, tuesday)]

    one_report, one_statements = tick_counting(settings, monday + timedelta(seconds=30))
    many_report, many_statements = tick_counting(settings, tuesday + timedelta(seconds=30))

    assert one_report == many_report == scheduler.TickReport(started=6)
    assert many_statements <= one_statements, (many_statements, one_statements)
    for planner, job in zip(many, spread, strict=True):
        [row] = instances_of(settings, job)
        assert (row["scheduled_date"], row["run_id"] is not None) == (tuesday, True)
        [hold] = blog_reservations(settings, planner.tenant_id)
        assert hold["key"] == f"job-instance:{row['id']}:1"
        assert planner.next_run(job) == utc(2024, 1, 10, 9)
    assert set(runs_per_instance(settings, spread).values()) == {1}


def set_status(settings: Settings, tenant_id: uuid.UUID, status: str) -> None:
    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(Tenant).where(Tenant.id == tenant_id).values(status=status)
            )

    run_on(settings, scenario)


def next_run_in_database(settings: Settings, job_id: str) -> datetime | None:
    """The job's next run, read straight from the database (a suspended organization's API
    answers nothing)."""
    [found] = select_all(settings, select(Job.next_run_at).where(Job.id == uuid.UUID(job_id)))
    return found  # type: ignore[no-any-return]


@pytest.mark.parametrize("call", ["rpc"], indirect=True)
def test_a_suspended_organizations_jobs_wait_until_it_is_active_again(
    scheduling, settings, monkeypatch
) -> None:
    """A suspended organization's due job is not started, nor moved on; another's is. One
    suspended after the tick read what is due is not started either. Active again, its job
    runs at the next tick."""
    paused, going = scheduling(knowledge=False), scheduling(knowledge=False)
    occurrence = utc(2024, 1, 8, 9)
    [held], [started] = daily_jobs(paused, 1, occurrence), daily_jobs(going, 1, occurrence)
    set_status(settings, paused.tenant_id, "suspended")
    try:
        assert tick(settings, occurrence + timedelta(seconds=30)) == scheduler.TickReport(started=1)
        assert [r["scheduled_date"] for r in instances_of(settings, started)] == [occurrence]
        assert instances_of(settings, held) == []
        assert next_run_in_database(settings, held) == occurrence
    finally:
        set_status(settings, paused.tenant_id, "active")

    # Suspended between the tick's read of what is due and its start of it.
    read_due = jobs_service.due

    async def due_then_suspended(
        session: AsyncSession, now: datetime, limit: int
    ) -> list[tuple[uuid.UUID, uuid.UUID]]:
        found = await read_due(session, now, limit)
        if (paused.tenant_id, uuid.UUID(held)) in found:
            read.append(found)
            async with AsyncSession(session.bind) as other, other.begin():
                await other.execute(
                    update(Tenant).where(Tenant.id == paused.tenant_id).values(status="suspended")
                )
        return found

    read: list[list[tuple[uuid.UUID, uuid.UUID]]] = []

    with monkeypatch.context() as patched:
        patched.setattr(jobs_service, "due", due_then_suspended)
        try:
            assert tick(settings, occurrence + timedelta(minutes=1)) == NOTHING
        finally:
            set_status(settings, paused.tenant_id, "active")
    assert len(read) == 1  # read as due once, then left alone
    assert instances_of(settings, held) == []

    assert tick(settings, occurrence + timedelta(minutes=2)) == scheduler.TickReport(started=1)
    [row] = instances_of(settings, held)
    assert (row["scheduled_date"], row["run_id"] is not None) == (occurrence, True)
    assert paused.next_run(held) == utc(2024, 1, 9, 9)


@pytest.mark.parametrize("call", ["rpc"], indirect=True)
def test_runs_committed_but_never_enqueued_are_started_by_the_reconciler(
    scheduling, settings, monkeypatch
) -> None:
    """The process "dies" between a chunk's commit and its enqueue (DBOS unreachable): the
    tick reports it, the jobs are started all the same (instances and queued runs are
    committed), and the service's reconciler gives each run its workflow: each runs once."""
    planner = scheduling()
    occurrence = utc(2024, 1, 8, 9)
    jobs = daily_jobs(planner, 3, occurrence)

    async def unreachable(*_: Any, **__: Any) -> None:
        raise ConnectionError("the DBOS system database is unreachable")

    with monkeypatch.context() as patched:
        patched.setattr(durable, "enqueue_many", unreachable)
        report = tick(settings, occurrence + timedelta(seconds=30))

    assert report == scheduler.TickReport(started=3, errors=1)
    for job in jobs:
        [row] = planner.settle(job)  # the reconciler (every second here) starts each run
        assert row["status"] == "completed"
    assert set(runs_per_instance(settings, jobs).values()) == {1}
    assert tick(settings, occurrence + timedelta(minutes=1)) == NOTHING
