"""Helpers for the Jobs and Job instances tests: one organization's jobs through one transport,
and the scheduler's tick run at an instant the test chooses."""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import Any

from dbos import DBOS
from sqlalchemy import select, update

from contentplatform.config import Settings
from contentplatform.core.runtime import Runtime
from contentplatform.flows import scheduler
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs.models import Job
from contentplatform.kit.db import Database
from tests.generation.support import HANDBOOK, Writer
from tests.support.database import run_on, select_all

# A bound, not a wait: under CI (two suites of three workers on two cores) a run took over 30 s.
RUN_TIMEOUT = 90.0
FINISHED = ("completed", "failed", "skipped")


class Planner(Writer):
    """One organization's jobs through one transport (`call`), with a user per role. Writes go
    as the admin unless told otherwise."""

    def job(self, role: str = "editor", **fields: Any) -> dict[str, Any]:
        """jobs.create, which must succeed; a one-off manual job unless told otherwise."""
        data: dict[str, Any] = {"name": "Weekly garden notes", "topics": ["Watering schedules"]}
        data.update(fields)
        return self.ok("jobs.create", data, role=role)

    def connection(self) -> str:
        """A webhook publisher connection of the organization (to a loopback address nothing
        listens on: creating it sends nothing): its id."""
        data = {"name": "Hook", "type": "webhook", "config": {"url": "http://127.0.0.1:9/hook"}}
        return str(self.ok("publishers.create", data, role="admin")["id"])

    def handbook(self) -> dict[str, Any]:
        """The irrigation handbook, ingested and ready to write from."""
        return self.ingest("handbook.md", HANDBOOK)

    def wait_instance(self, instance_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Poll getProgress until the instance finishes (bounded): the last instance, and every
        progress seen on the way."""
        deadline = time.monotonic() + RUN_TIMEOUT
        seen: list[dict[str, Any]] = []
        while True:
            progress = self.ok("jobInstances.getProgress", {"id": instance_id}, role="member")
            seen.append(progress)
            if progress["status"] in FINISHED:
                return self.ok("jobInstances.getById", {"id": instance_id}, role="member"), seen
            assert time.monotonic() < deadline, f"still {progress}; {self._diagnosis(instance_id)}"
            time.sleep(0.02)

    def _diagnosis(self, instance_id: str) -> str:
        """Where the instance's runs are, for a failure message: our status and DBOS's."""
        instance = self.ok("jobInstances.getById", {"id": instance_id}, role="member")
        runs = self.ok("generation.listRuns", {"jobId": instance["job_id"]}, role="member")
        found = []
        for run in runs["data"]:
            if run["instance_id"] == instance_id:
                workflow = DBOS.get_workflow_status(f"generation:{run['id']}")
                dbos = "no workflow" if workflow is None else workflow.status
                found.append(f"run {run['id']} {run['status']}/{run['step']} (DBOS: {dbos})")
        return "; ".join(found) or "no run"


def tick(settings: Settings, now: datetime, limit: int | None = None) -> scheduler.TickReport:
    """One scheduler tick at `now`, in this process (the service's DBOS runs what it starts)."""

    async def scenario(_: Database) -> scheduler.TickReport:
        runtime = Runtime.create(settings)
        try:
            return await scheduler.tick(runtime, now, limit=limit)
        finally:
            await runtime.close()

    return run_on(settings, scenario)


def set_next_run(settings: Settings, job_id: str, when: datetime | None) -> None:
    """Move a job's next run, as if time had passed (or the scheduler had been down)."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(Job).where(Job.id == uuid.UUID(job_id)).values(next_run_at=when)
            )

    run_on(settings, scenario)


def instances_of(settings: Settings, job_id: str) -> list[dict[str, Any]]:
    """The job's instances straight from the database, oldest first."""
    instances = select_all(
        settings,
        select(JobInstance)
        .where(JobInstance.job_id == uuid.UUID(job_id))
        .order_by(JobInstance.scheduled_date),
    )
    return [
        {
            "id": str(instance.id),
            "scheduled_date": instance.scheduled_date,
            "status": instance.status,
            "error": instance.error,
            "run_id": instance.run_id,
            "topic": instance.topic,
        }
        for instance in instances
    ]
