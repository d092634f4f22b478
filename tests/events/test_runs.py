"""The events of job runs over REST and RPC, on the offline writer: a run that wrote its draft
(`job.run_completed`), one whose generation failed (`job.run_failed` about the job, and
`generation.run_failed` about the run), and one the scheduler could not start (no credits):
each by the system, about the right resource, seen by no other organization."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contentplatform.config import Settings
from tests.documents.support import hold_all_but
from tests.events.support import SYSTEM, Trail, payloads
from tests.jobs.conftest import nothing_else_due  # noqa: F401 (a fixture)
from tests.jobs.support import Planner, instances_of, set_next_run, tick
from tests.support.orgs import org_fixture

planner = org_fixture(Planner)
other = org_fixture(Trail, second=True)


def test_a_job_run_that_wrote_its_draft_is_told(
    planner: Planner, other: Trail, settings: Settings
) -> None:
    planner.handbook()
    job = planner.job(topics=["Watering schedules"])
    started = planner.ok("jobs.trigger", {"id": job["id"]}, role="editor")
    finished, _ = planner.wait_instance(started["id"])
    assert finished["status"] == "completed", finished
    trail = Trail.of(planner)

    row = trail.one("job.run_completed", job["id"])
    assert row["resource_type"] == "job"
    assert row["actor"] == SYSTEM  # the run ends in the background
    assert trail.activity(action="job.run_failed")["total"] == 0
    (told,) = payloads(settings, planner.tenant_id, "job.run_completed")
    assert told == {
        "job_id": job["id"],
        "instance_id": started["id"],
        "draft_id": started["draft_id"],
        "drafts_created": 1,
        "error": None,
    }
    assert other.activity(resourceId=job["id"])["total"] == 0


def test_a_job_run_whose_generation_failed_is_told_with_the_runs_failure(
    planner: Planner, settings: Settings
) -> None:
    # No knowledge to write from: the run fails at retrieval.
    job = planner.job(topics=["Quantum chromodynamics on a lattice"])
    started = planner.ok("jobs.trigger", {"id": job["id"]}, role="editor")
    finished, _ = planner.wait_instance(started["id"])
    assert finished["status"] == "failed", finished
    trail = Trail.of(planner)

    failed = trail.one("job.run_failed", job["id"])
    assert failed["actor"] == SYSTEM
    run = trail.one("generation.run_failed", started["run_id"])
    assert run["resource_type"] == "generation_run"
    assert run["actor"] == SYSTEM
    (generation,) = payloads(settings, planner.tenant_id, "generation.run_failed")
    assert generation["run_id"] == started["run_id"]
    assert generation["job_id"] == job["id"]
    assert generation["draft_id"] == started["draft_id"]
    assert generation["error"]["code"] == "NO_SOURCES"
    (told,) = payloads(settings, planner.tenant_id, "job.run_failed")
    assert told["drafts_created"] == 0
    assert told["error"] == finished["error"]


@pytest.mark.usefixtures("nothing_else_due")
def test_a_run_the_scheduler_could_not_start_is_told_as_failed(
    planner: Planner, settings: Settings
) -> None:
    job = planner.job(jobType="recurring", cronExpression="0 9 * * *")
    hold_all_but(settings, planner.tenant_id, 0)
    # In the past, where no other test's job is due.
    occurrence = datetime(2024, 1, 8, 9, tzinfo=UTC)
    set_next_run(settings, job["id"], occurrence)
    try:
        tick(settings, occurrence + timedelta(seconds=5))

        [instance] = instances_of(settings, job["id"])
        assert instance["status"] == "failed"
        row = Trail.of(planner).one("job.run_failed", job["id"])
        assert row["actor"] == SYSTEM
        (told,) = payloads(settings, planner.tenant_id, "job.run_failed")
        assert told["instance_id"] == instance["id"]
        assert told["error"] == instance["error"] and "credits" in told["error"]
    finally:
        planner.ok("jobs.delete", {"id": job["id"]}, role="admin")
