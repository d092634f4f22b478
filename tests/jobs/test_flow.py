"""A job's life end to end over real HTTP (REST and RPC) on the offline writer: trigger, the
scheduler's tick, progress, the draft in review, topic rotation, skipping and select_existing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.jobs.support import Planner, instances_of, set_next_run, tick
from tests.support.problems import problem

# A tick here starts only what the test made (tests/jobs/conftest.py).
pytestmark = pytest.mark.usefixtures("nothing_else_due")


def test_trigger_runs_a_pending_instance_to_a_draft_in_review(planner: Planner) -> None:
    planner.handbook()
    job = planner.job(topics=["Watering schedules", "Soil moisture sensors"])

    instance = planner.ok("jobs.trigger", {"id": job["id"]}, role="editor")

    assert instance["status"] == "pending"
    assert instance["job_id"] == job["id"]
    assert instance["topic"] == "Watering schedules"
    assert instance["draft_id"] and instance["run_id"]
    finished, seen = planner.wait_instance(instance["id"])
    assert finished["status"] == "completed", finished
    assert seen[-1] == {"status": "completed", "step": "finalize", "percent": 100}
    percents = [progress["percent"] for progress in seen]
    assert percents == sorted(percents)
    draft = planner.draft(instance["draft_id"])
    assert draft["status"] == "reviewing"
    assert draft["job_id"] == job["id"] and draft["instance_id"] == instance["id"]
    after = planner.ok("jobs.getById", {"id": job["id"]}, role="member")
    assert after["status"] == "completed"  # a one-off job that ran has nothing left
    assert after["last_run_at"] is not None
    history = planner.ok("jobs.getRunHistory", {"id": job["id"]}, role="member")
    assert [d["id"] for d in history] == [draft["id"]]

    # Any job can be triggered again, a completed one too.
    second = planner.ok("jobs.trigger", {"id": job["id"]}, role="editor")
    assert second["topic"] == "Soil moisture sensors"  # topics rotate
    busy = planner.request("jobs.trigger", {"id": job["id"]}, role="editor")
    assert problem(busy, 409, "CONFLICT")
    planner.wait_instance(second["id"])


def test_the_tick_starts_a_due_recurring_job_once_and_coalesces_downtime(
    planner: Planner, settings
) -> None:
    planner.handbook()
    job = planner.job(jobType="recurring", cronExpression="0 * * * *")
    assert job["next_run_at"] is not None
    now = datetime.now(UTC).replace(microsecond=0)
    # The scheduler was down for five hours: five occurrences were missed.
    set_next_run(settings, job["id"], now.replace(minute=0, second=0) - timedelta(hours=4))

    report = tick(settings, now)
    again = tick(settings, now)

    rows = instances_of(settings, job["id"])
    assert [row["status"] for row in rows][:4] == ["skipped"] * 4
    assert rows[4]["status"] in ("pending", "running", "completed")
    assert len(rows) == 5
    assert report.started == 1 and report.skipped == 4
    assert again.started == 0 and again.skipped == 0
    finished, _ = planner.wait_instance(rows[-1]["id"])
    assert finished["status"] == "completed"
    after = planner.ok("jobs.getById", {"id": job["id"]}, role="member")
    assert datetime.fromisoformat(after["next_run_at"]) > now


def test_calendar_pause_and_skip(planner: Planner) -> None:
    job = planner.job(jobType="recurring", cronExpression="0 9 * * *")
    start = datetime.now(UTC)
    entries = planner.ok(
        "jobs.calendar",
        {"startDate": start.isoformat(), "endDate": (start + timedelta(days=7)).isoformat()},
        role="member",
    )
    assert len(entries) == 7
    assert {e["status"] for e in entries} == {"planned"}
    paused = planner.ok("jobs.pause", {"id": job["id"]}, role="admin")
    assert paused["status"] == "paused" and paused["next_run_at"] is None
    planned = planner.ok(
        "jobInstances.create",
        {"jobId": job["id"], "scheduledDate": (start + timedelta(days=2)).isoformat()},
        role="editor",
    )
    skipped = planner.ok("jobInstances.skip", {"id": planned["id"]}, role="editor")
    assert skipped["status"] == "skipped"
    assert problem(
        planner.request("jobInstances.skip", {"id": planned["id"]}, role="editor"), 409, "CONFLICT"
    )
