"""The scheduler by hand, on a real `contentplatform serve` process ticking by itself.

The service runs in a child process on backends of its own (tests.support.processes; PostgreSQL
and Redis when CONTENTPLATFORM_TEST_DATABASE_URL / CONTENTPLATFORM_TEST_REDIS_URL are set) with
the DBOS scheduled workflow `jobs.tick` every 2 seconds, and is driven over its RPC endpoints as
a user would: a recurring job every minute in the organization's zone gets an instance at the
next minute, its progress rises to 100 and its draft arrives in review; the calendar lists what
is planned; a job paused before its minute gets no instance.

It waits for a real minute boundary: the test takes from about 15 to 75 seconds.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.generation.support import HANDBOOK
from tests.support.processes import ServiceClient, Services, wait_for

EVERY_MINUTE = "* * * * *"
FIRST_INSTANCE_WITHIN = 75.0  # the next minute boundary, plus a few ticks
RUN_WITHIN = 30.0


class Rpc(ServiceClient):
    def __call__(self, operation: str, data: dict[str, Any] | None = None) -> Any:
        return self.request("POST", f"/api/rpc/{operation}", json=data or {})


def at_most_seconds_into_the_minute(limit: int) -> None:
    """Wait for the next minute when this one is past `limit` seconds, so what is done next
    lands well before the coming minute boundary."""
    now = datetime.now(UTC)
    if now.second > limit:
        time.sleep(60.5 - now.second - now.microsecond / 1e6)


def test_a_job_every_minute_runs_at_the_next_minute_and_a_paused_one_does_not(
    services: Services,
) -> None:
    service = services.start(scheduler_interval_seconds="2")
    org = "org_minutely"
    rpc = Rpc(service, services.token(org, role="admin"), org)
    document = rpc.upload("handbook.md", "md", HANDBOOK.encode())
    wait_for(
        "the handbook to be ready",
        lambda: rpc("documents.getById", {"id": document["id"]})["status"] == "ready",
        service,
    )
    assert rpc("jobs.updateTimezone", {"timezone": "Asia/Kolkata"}) == {"timezone": "Asia/Kolkata"}

    at_most_seconds_into_the_minute(55)
    created = datetime.now(UTC)
    job = rpc(
        "jobs.create",
        {
            "name": "Minutely notes",
            "jobType": "recurring",
            "cronExpression": EVERY_MINUTE,
            "topics": ["Watering schedules", "Soil moisture sensors"],
        },
    )
    paused = rpc(
        "jobs.create",
        {
            "name": "Paused notes",
            "jobType": "recurring",
            "cronExpression": EVERY_MINUTE,
            "topics": ["Watering schedules"],
        },
    )
    assert rpc("jobs.pause", {"id": paused["id"]})["next_run_at"] is None
    boundary = (created + timedelta(minutes=1)).replace(second=0, microsecond=0)
    assert datetime.fromisoformat(job["next_run_at"]) == boundary
    assert datetime.now(UTC) < boundary  # the pause came before the paused job's minute

    window = {
        "startDate": created.isoformat(),
        "endDate": (created + timedelta(minutes=10)).isoformat(),
    }
    planned = rpc("jobs.calendar", window)
    assert {entry["job_id"] for entry in planned} == {job["id"]}
    assert [datetime.fromisoformat(entry["date"]) for entry in planned] == [
        boundary + timedelta(minutes=n) for n in range(10)
    ]

    def first_instance() -> dict[str, Any] | None:
        found = rpc("jobs.listInstances", {"id": job["id"]})
        return found[0] if found else None

    instance = wait_for(
        "the job's first instance", first_instance, service, timeout=FIRST_INSTANCE_WITHIN
    )
    assert datetime.fromisoformat(instance["scheduled_date"]) == boundary
    assert instance["topic"] == "Watering schedules"

    seen: list[dict[str, Any]] = []

    def finished() -> bool:
        progress = rpc("jobInstances.getProgress", {"id": instance["id"]})
        seen.append(progress)
        return progress["status"] in ("completed", "failed", "skipped")

    wait_for("the instance's run", finished, service, timeout=RUN_WITHIN, interval=0.05)
    assert seen[-1] == {"status": "completed", "step": "finalize", "percent": 100}, seen
    percents = [progress["percent"] for progress in seen]
    assert percents == sorted(percents)
    done = rpc("jobInstances.getById", {"id": instance["id"]})
    draft = rpc("drafts.getById", {"id": done["draft_id"]})
    assert draft["status"] == "reviewing"
    assert draft["job_id"] == job["id"]

    # The paused job's minute came and went (the tick ran after it: the other job's instance
    # is proof) without an instance.
    assert rpc("jobs.listInstances", {"id": paused["id"]}) == []
    assert rpc("jobs.getById", {"id": paused["id"]})["status"] == "paused"

    stopped = rpc("jobs.pause", {"id": job["id"]})
    assert (stopped["status"], stopped["next_run_at"]) == ("paused", None)
    # Paused, nothing more is planned: the calendar shows only what ran.
    after = rpc("jobs.calendar", window)
    assert [(entry["instance_id"], entry["status"]) for entry in after] == [
        (instance["id"], "completed")
    ]
