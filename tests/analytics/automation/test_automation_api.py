"""analytics.automationOverview, automationTimeseries, failureBreakdown and jobPerformance over
REST and RPC.

The fixture runs are two jobs made through the API whose instances are written straight into the
database (a real run through the offline model takes seconds, and its times are the clock's): so
each run's start and end, its step and its problem are exact, and the percentiles with them.
March 2026 (UTC, the organization's zone) holds, for Alpha: three completed runs of 10, 20 and
30 s and one failed at `write` after 40 s (generation_error); for Beta: one completed of 50 s, two
failed at `outline` after 60 and 70 s (provider_timeout), one skipped, and one still running
since 7 March (stalled). February holds one completed run of 5 s; April one that March leaves
out."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update

from contentplatform.config import Settings
from contentplatform.drafts.models import Draft
from contentplatform.job_instances import service as instances
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs.models import Job
from contentplatform.kit.db import Database
from contentplatform.kit.errors import BadRequest, NotFound, PaymentRequired, PlatformError
from tests.jobs.support import Planner
from tests.support.database import run_on
from tests.support.orgs import org_fixture
from tests.support.problems import problem

pytestmark = pytest.mark.shared_org

planner = org_fixture(Planner)
other = org_fixture(Planner, second=True)

MARCH = {"dateFrom": "2026-03-01", "dateTo": "2026-03-31"}
_seeded: dict[uuid.UUID, dict[str, str]] = {}
_a_year_before: set[uuid.UUID] = set()  # organizations given the runs of March 2025


def at(day: int, hour: int = 12, month: int = 3) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


# (job, status, step, problem, error, started, seconds it lasted or None)
RUNS: list[tuple[str, str, str | None, str | None, str | None, datetime | None, int | None]] = [
    ("alpha", "completed", "finalize", None, None, at(2, 10), 10),
    ("alpha", "completed", "finalize", None, None, at(2, 11), 20),
    ("alpha", "completed", "finalize", None, None, at(3, 9), 30),
    ("alpha", "failed", "write", "generation_error", "The model refused.", at(3, 10), 40),
    ("beta", "completed", "finalize", None, None, at(5, 9), 50),
    ("beta", "failed", "outline", "provider_timeout", "Timed out once.", at(5, 10), 60),
    ("beta", "failed", "outline", "provider_timeout", "Timed out again.", at(6, 10), 70),
    ("beta", "skipped", None, None, "Skipped by hand.", None, None),
    ("beta", "running", "write", None, None, at(7, 10), None),
    ("alpha", "completed", "finalize", None, None, at(10, 10, month=2), 5),
    ("alpha", "completed", "finalize", None, None, at(2, 10, month=4), 15),
]


def seed(planner: Planner, settings: Settings) -> dict[str, str]:
    """The two jobs and their runs (once per organization): the jobs' ids by name, and the id
    of Alpha's draft."""
    if planner.tenant_id in _seeded:
        return _seeded[planner.tenant_id]
    ids = {name: planner.job(name=name.title())["id"] for name in ("alpha", "beta")}
    draft = planner.ok("drafts.createDraft", {"title": "Alpha's draft", "jobId": ids["alpha"]})

    async def write(db: Database) -> None:
        async with db.unit_of_work() as session:
            for job_id in ids.values():
                await session.execute(
                    update(Job).where(Job.id == uuid.UUID(job_id)).values(created_at=at(1, 0, 1))
                )
            await session.execute(
                update(Draft)
                .where(Draft.id == uuid.UUID(draft["id"]))
                .values(created_at=at(4), seo_score=80)
            )
            for index, (job, status, step, problem_, error, started, lasted) in enumerate(RUNS):
                finished = started + timedelta(seconds=lasted) if started and lasted else None
                if status == "skipped":
                    finished = at(6, 18)
                values = instances.new_instance(
                    planner.tenant_id, uuid.UUID(ids[job]), at(1, 0) + timedelta(hours=index)
                )
                values.update(
                    status=status,
                    step=step,
                    problem=problem_,
                    error=error,
                    started_at=started,
                    finished_at=finished,
                    run_id=uuid.uuid4() if started else None,
                )
                session.add(JobInstance(**values))

    run_on(settings, write)
    _seeded[planner.tenant_id] = {**ids, "draft": draft["id"]}
    return _seeded[planner.tenant_id]


def test_overview_counts_the_fixture_runs_exactly(planner, settings):
    seed(planner, settings)
    found = planner.ok("analytics.automationOverview", MARCH, role="member")
    assert found["metrics"] == {
        "instances_total": 9,
        "succeeded": 4,
        "failed": 3,
        "skipped": 1,
        "in_flight": 1,
        "stalled": 1,
        "success_rate": round(4 / 7, 4),
        "drafts_produced": 1,
        "published": 0,
        "publish_success_rate": None,
        # Nearest rank of 10..70 s: the 4th and the 7th of seven.
        "duration_p50_ms": 40000.0,
        "duration_p95_ms": 70000.0,
    }
    assert found["top_failure_reasons"] == [
        {"reason": "provider_timeout", "count": 2},
        {"reason": "generation_error", "count": 1},
    ]
    # The 28 days before (1-28 February... as many days: 29 Jan - 28 Feb) hold the 5 s run.
    previous = found["previous"]
    assert (previous["instances_total"], previous["succeeded"], previous["success_rate"]) == (
        1,
        1,
        1.0,
    )
    assert previous["duration_p50_ms"] == previous["duration_p95_ms"] == 5000.0
    assert found["data_through"].startswith("2026-04-01T00:00:00")
    none = planner.ok("analytics.automationOverview", {**MARCH, "compare": "none"})
    assert none["previous"] is None and none["metrics"] == found["metrics"]


def test_previous_year_lines_up_by_weekday_when_asked(planner, settings):
    """Monday 2 March 2026 against a year before: Sunday 2 March 2025 by date (a failed run),
    Monday 3 March 2025 with sameWeekday (a run that succeeded)."""
    ids = seed(planner, settings)
    if planner.tenant_id not in _a_year_before:

        async def write(db: Database) -> None:
            async with db.unit_of_work() as session:
                for day, status in ((2, "failed"), (3, "completed")):
                    started = datetime(2025, 3, day, 10, tzinfo=UTC)
                    values = instances.new_instance(
                        planner.tenant_id, uuid.UUID(ids["alpha"]), started
                    )
                    values.update(
                        status=status,
                        step="write",
                        problem="generation_error" if status == "failed" else None,
                        started_at=started,
                        finished_at=started + timedelta(seconds=10),
                        run_id=uuid.uuid4(),
                    )
                    session.add(JobInstance(**values))

        run_on(settings, write)
        _a_year_before.add(planner.tenant_id)
    monday = {"dateFrom": "2026-03-02", "dateTo": "2026-03-02", "compare": "previous_year"}
    by_date = planner.ok("analytics.automationOverview", monday)["previous"]
    assert (by_date["succeeded"], by_date["failed"], by_date["success_rate"]) == (0, 1, 0.0)
    by_weekday = planner.ok("analytics.automationOverview", {**monday, "sameWeekday": True})
    previous = by_weekday["previous"]
    assert (previous["succeeded"], previous["failed"], previous["success_rate"]) == (1, 0, 1.0)
    assert by_weekday["metrics"]["succeeded"] == 2  # the two Alpha runs of that Monday


def test_overview_of_one_job_and_of_a_workflow(planner, settings):
    ids = seed(planner, settings)
    alpha = planner.ok("analytics.automationOverview", {**MARCH, "jobId": ids["alpha"]})
    assert (alpha["metrics"]["succeeded"], alpha["metrics"]["failed"]) == (3, 1)
    assert alpha["metrics"]["duration_p50_ms"] == 20000.0  # 10, 20, 30, 40: the 2nd
    assert alpha["top_failure_reasons"] == [{"reason": "generation_error", "count": 1}]
    response = planner.request("analytics.automationOverview", {"workflowId": str(uuid.uuid4())})
    problem(response, 404, "NOT_FOUND")


def test_the_dashboard_success_rate_is_the_overviews(planner, settings):
    seed(planner, settings)

    async def rate(db: Database) -> float | None:
        from contentplatform.analytics.automation import service

        async with db.unit_of_work() as session:
            return await service.success_rate(session, planner.tenant_id, at(1, 0), at(1, 0, 4))

    assert run_on(settings, rate) == round(4 / 7, 4)


def test_timeseries_by_day_fills_gaps_and_leaves_rates_null_without_runs(planner, settings):
    seed(planner, settings)
    data = {
        "dateFrom": "2026-03-01",
        "dateTo": "2026-03-07",
        "metrics": "succeeded,failed,success_rate,duration_p50_ms,duration_p95_ms",
    }
    found = planner.ok("analytics.automationTimeseries", data, role="member")
    assert (found["granularity"], found["date_from"], found["date_to"]) == (
        "day",
        "2026-03-01",
        "2026-03-07",
    )
    values = [point["values"] for point in found["data"]]
    assert [v["succeeded"] for v in values] == [0, 2, 1, 0, 1, 0, 0]
    assert [v["failed"] for v in values] == [0, 0, 1, 0, 1, 1, 0]
    assert [v["success_rate"] for v in values] == [None, 1.0, 0.5, None, 0.5, 0.0, None]
    assert values[1]["duration_p50_ms"] == 10000.0 and values[1]["duration_p95_ms"] == 20000.0
    assert values[0]["duration_p50_ms"] is None
    assert found["data"][0]["start"].startswith("2026-03-01T00:00:00")
    # Before the jobs existed there is no source: null, not 0.
    before = {"dateFrom": "2025-12-01", "dateTo": "2025-12-03", "metrics": "instances_total"}
    found = planner.ok("analytics.automationTimeseries", before)
    assert [p["values"] for p in found["data"]] == [{"instances_total": None}] * 3
    weeks = {**MARCH, "granularity": "month", "metrics": "instances_total,drafts_produced"}
    found = planner.ok("analytics.automationTimeseries", weeks)
    assert [p["values"] for p in found["data"]] == [{"instances_total": 9, "drafts_produced": 1}]


def test_failure_breakdown_by_reason_step_and_job(planner, settings):
    ids = seed(planner, settings)
    by_reason = planner.ok("analytics.failureBreakdown", MARCH, role="member")
    assert by_reason == {
        "data": [
            {
                "group": {"key": "provider_timeout", "label": "Model unavailable or timed out"},
                "count": 2,
                "share": 0.6667,
                "last_at": "2026-03-06T10:01:10Z",
                "sample_error": "Timed out again.",
            },
            {
                "group": {"key": "generation_error", "label": "Generation failed"},
                "count": 1,
                "share": 0.3333,
                "last_at": "2026-03-03T10:00:40Z",
                "sample_error": "The model refused.",
            },
        ],
        "total": 2,
        "page": 1,
        "limit": 20,
    }
    steps = planner.ok("analytics.failureBreakdown", {**MARCH, "groupBy": "step_type"})
    assert [(r["group"]["key"], r["count"]) for r in steps["data"]] == [
        ("outline", 2),
        ("write", 1),
    ]
    jobs = planner.ok("analytics.failureBreakdown", {**MARCH, "groupBy": "job", "limit": 1})
    assert jobs["total"] == 2 and jobs["data"][0]["group"] == {"key": ids["beta"], "label": "Beta"}
    page2 = planner.ok(
        "analytics.failureBreakdown", {**MARCH, "groupBy": "job", "limit": 1, "page": 2}
    )
    assert page2["data"][0]["group"]["key"] == ids["alpha"]
    for grouping, label in (
        ("workflow", "Default workflow"),
        ("publisher_connection", "No publisher connection"),
    ):
        found = planner.ok("analytics.failureBreakdown", {**MARCH, "groupBy": grouping})
        assert [(r["group"], r["count"]) for r in found["data"]] == [
            ({"key": None, "label": label}, 3)
        ]
    one = planner.ok("analytics.failureBreakdown", {**MARCH, "jobId": ids["alpha"]})
    assert [(r["group"]["key"], r["share"]) for r in one["data"]] == [("generation_error", 1.0)]


def test_job_performance_and_get_analytics_agree(planner, settings):
    ids = seed(planner, settings)
    found = planner.ok("analytics.jobPerformance", MARCH, role="member")
    assert found["total"] == 2 and (found["page"], found["limit"]) == (1, 20)
    beta, alpha = found["data"]
    assert beta == {
        "job_id": ids["beta"],
        "name": "Beta",
        "status": "active",
        "runs": 5,
        "succeeded": 1,
        "failed": 2,
        "success_rate": 0.3333,
        "avg_duration_ms": 60000.0,
        "drafts": 0,
        "published": 0,
        "avg_seo_score": None,
        "credits_used": 0,
        "last_run_at": "2026-03-07T10:00:00Z",
    }
    assert (alpha["job_id"], alpha["runs"], alpha["success_rate"]) == (ids["alpha"], 4, 0.75)
    assert (alpha["avg_duration_ms"], alpha["drafts"], alpha["avg_seo_score"]) == (25000.0, 1, 80.0)
    # The same per-job figures jobs.getAnalytics reads (over all time).
    figures = planner.ok("jobs.getAnalytics", {"id": ids["alpha"]}, role="member")
    assert (figures["totalDrafts"], figures["avgSeoScore"]) == (
        alpha["drafts"],
        alpha["avg_seo_score"],
    )
    ordered = planner.ok(
        "analytics.jobPerformance", {**MARCH, "sortBy": "success_rate", "sortOrder": "asc"}
    )
    assert [row["name"] for row in ordered["data"]] == ["Beta", "Alpha"]
    paused = planner.ok("analytics.jobPerformance", {**MARCH, "status": "paused"})
    assert paused == {"data": [], "total": 0, "page": 1, "limit": 20}


@pytest.mark.parametrize(
    ("data", "limit"),
    [
        ({"dateFrom": "2026-03-02", "dateTo": "2026-03-01"}, "before it starts"),
        ({"dateFrom": "2024-01-01", "dateTo": "2026-03-01"}, "at most 24 months"),
    ],
)
@pytest.mark.parametrize(
    "operation",
    ["automationOverview", "automationTimeseries", "failureBreakdown", "jobPerformance"],
)
def test_a_bad_range_is_400_naming_the_limit(planner, operation, data, limit):
    body = problem(planner.request(f"analytics.{operation}", data), 400, "BAD_REQUEST")
    assert limit in body["detail"]


def test_day_buckets_over_400_days_and_unknown_metrics_are_400(planner):
    data = {"dateFrom": "2025-01-01", "dateTo": "2026-03-01"}
    body = problem(planner.request("analytics.automationTimeseries", data), 400, "BAD_REQUEST")
    assert "400 days" in body["detail"]
    response = planner.request("analytics.automationTimeseries", {"metrics": "succeeded,bogus"})
    assert problem(response, 400, "BAD_REQUEST")["errors"][0]["path"] == "metrics"
    for operation, field, value in (
        ("failureBreakdown", "groupBy", "day"),
        ("jobPerformance", "sortBy", "name"),
        ("jobPerformance", "limit", 101),
    ):
        response = planner.request(f"analytics.{operation}", {field: value})
        assert problem(response, 400, "BAD_REQUEST")["errors"][0]["path"] == field


def test_another_organization_sees_none_of_it_and_its_job_ids_are_404(planner, other, settings):
    ids = seed(planner, settings)
    found = other.ok("analytics.automationOverview", MARCH, role="member")
    assert found["metrics"]["instances_total"] == 0 and found["metrics"]["success_rate"] is None
    assert other.ok("analytics.failureBreakdown", MARCH)["total"] == 0
    assert other.ok("analytics.jobPerformance", MARCH)["total"] == 0
    for operation in ("automationOverview", "automationTimeseries", "failureBreakdown"):
        response = other.request(f"analytics.{operation}", {**MARCH, "jobId": ids["alpha"]})
        problem(response, 404, "NOT_FOUND")


def test_without_a_token_it_is_401(planner):
    response = planner.call("analytics.automationOverview", MARCH, token=None, org=planner.org)
    assert response.status_code == 401


def test_a_failure_records_its_problem():
    assert instances.problem_of_run("PROVIDER_UNAVAILABLE") == "provider_timeout"
    assert instances.problem_of_run("REJECTED_AT_REVIEW") == "review_rejected"
    assert instances.problem_of_run("CANCELLED") == "cancelled"
    assert instances.problem_of_run("SOMETHING_NEW") == "unknown"
    assert instances.problem_of_error(PaymentRequired("no credits")) == "insufficient_credits"
    assert instances.problem_of_error(BadRequest("no topic")) == "validation_error"
    assert instances.problem_of_error(NotFound("document gone")) == "validation_error"
    assert instances.problem_of_error(PlatformError("?")) == "unknown"


@pytest.mark.own_org
@pytest.mark.parametrize("call", ["rest"], indirect=True)  # two real runs: once is enough
def test_real_runs_through_the_api_count_with_their_recorded_problem_and_times(planner):
    """One run that fails (the organization has nothing to write from: NO_SOURCES, a
    generation_error) and one that completes, with the offline model."""
    job = planner.job(name="Real")
    failing = planner.ok("jobs.trigger", {"id": job["id"]}, role="member")
    failed, _ = planner.wait_instance(failing["id"])
    assert failed["status"] == "failed", failed
    planner.handbook()
    passing = planner.ok("jobs.trigger", {"id": job["id"]}, role="member")
    done, _ = planner.wait_instance(passing["id"])
    assert done["status"] == "completed", done

    today = {"dateFrom": done["finished_at"][:10], "dateTo": done["finished_at"][:10]}
    found = planner.ok("analytics.automationOverview", today, role="member")["metrics"]
    assert (found["instances_total"], found["succeeded"], found["failed"]) == (2, 1, 1)
    # The failed run's draft was rejected, and is counted as jobs.getAnalytics counts it.
    assert found["success_rate"] == 0.5 and found["drafts_produced"] == 2
    lasted = sorted(
        (datetime.fromisoformat(each["finished_at"]) - datetime.fromisoformat(each["started_at"]))
        / timedelta(milliseconds=1)
        for each in (failed, done)
        if each["started_at"]
    )
    assert found["duration_p95_ms"] == pytest.approx(lasted[-1], abs=1)  # whole milliseconds
    reasons = planner.ok("analytics.failureBreakdown", today)
    assert [(r["group"]["key"], r["count"], r["sample_error"]) for r in reasons["data"]] == [
        ("generation_error", 1, failed["error"])
    ]
    [row] = planner.ok("analytics.jobPerformance", today)["data"]
    assert (row["runs"], row["succeeded"], row["failed"], row["drafts"]) == (2, 1, 1, 2)
    figures = planner.ok("jobs.getAnalytics", {"id": job["id"]})
    assert figures["totalDrafts"] == row["drafts"]
    assert row["credits_used"] > 0
    assert row["last_run_at"] == done["finished_at"]


@pytest.mark.own_org
def test_percentiles_are_exact_over_durations_of_every_size_and_ties(planner, settings):
    """p50 and p95 are the nearest ranks of every run's duration, in ms, whatever their spread:
    runs of 0 ms to 3 days, ties, and durations on either side of 1 s, 10 s and 100 s, over
    five days and per day (they are ranked per duration bucket of 1%: a rank falling on a
    bucket's edge or among ties must still be exact)."""
    job = planner.job(name="Spread")["id"]
    rng = random.Random(38)
    edges = [999, 1000, 1009, 1010, 9999, 10000, 10099, 10100, 99_999, 100_000, 100_999]
    per_day = {
        day: [rng.choice(edges) + rng.choice((0, 0, 1)) for _ in range(rng.randint(3, 40))]
        + [rng.randint(0, 3 * 86_400_000) for _ in range(rng.randint(0, 30))]
        + [0] * rng.randint(0, 3)
        for day in range(1, 6)
    }

    async def write(db: Database) -> None:
        async with db.unit_of_work() as session:
            for day, lasted in per_day.items():
                for n, milliseconds in enumerate(lasted):
                    started = datetime(2026, 5, day, 6, tzinfo=UTC) + timedelta(seconds=n)
                    values = instances.new_instance(
                        planner.tenant_id, uuid.UUID(job), started - timedelta(days=1)
                    )
                    status = rng.choice(("completed", "failed"))
                    values.update(
                        status=status,
                        started_at=started - timedelta(milliseconds=milliseconds),
                        finished_at=started,
                        run_id=uuid.uuid4(),
                        error=f"Run {day}-{n} failed." if status == "failed" else None,
                    )
                    session.add(JobInstance(**values))
                    if status == "failed":
                        failed.append(values["error"])

    failed: list[str] = []
    run_on(settings, write)

    def nearest(values: list[int], percent: int) -> float:
        ranked = sorted(values)
        return float(ranked[max(1, (percent * len(ranked) + 99) // 100) - 1])

    every = [each for lasted in per_day.values() for each in lasted]
    may = {"dateFrom": "2026-05-01", "dateTo": "2026-05-05"}
    metrics = planner.ok("analytics.automationOverview", {**may, "compare": "none"})["metrics"]
    assert (metrics["duration_p50_ms"], metrics["duration_p95_ms"]) == (
        nearest(every, 50),
        nearest(every, 95),
    )
    series = planner.ok(
        "analytics.automationTimeseries", {**may, "metrics": "duration_p50_ms,duration_p95_ms"}
    )
    assert [point["values"] for point in series["data"]] == [
        {"duration_p50_ms": nearest(lasted, 50), "duration_p95_ms": nearest(lasted, 95)}
        for lasted in per_day.values()
    ]
    # Failed runs without a problem or a step: one group, its sample the last one's error.
    [group] = planner.ok("analytics.failureBreakdown", may)["data"]
    assert (group["group"]["key"], group["count"], group["sample_error"]) == (
        "unknown",
        len(failed),
        failed[-1],
    )
