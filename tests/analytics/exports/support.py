"""Exports through one organization: create, wait for the workflow, download; job runs made
straight in the database (the report reads them, not how they were made)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from contentplatform.config import Settings
from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import Database
from tests.support.database import run_on
from tests.support.orgs import Org
from tests.support.waits import until_workflow_ends

ENDED = ("succeeded", "failed", "cancelled", "expired")
TIMEOUT = 60.0


class Exports(Org):
    default_role = "member"

    def create(self, role: str = "member", **fields: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "report": "automation_runs",
            "dateFrom": "2025-03-01",
            "dateTo": "2025-03-31",
        }
        data.update(fields)
        return self.ok("analytics.createExport", data, role=role)

    def get(self, export_id: str) -> dict[str, Any]:
        return self.ok("analytics.getExport", {"id": export_id})

    def wait(self, export_id: str) -> dict[str, Any]:
        """The export once its workflow has ended it."""

        def ended() -> dict[str, Any] | None:
            found = self.get(export_id)
            return found if found["status"] in ENDED else None

        return until_workflow_ends(
            f"export:{export_id}", ended, timeout=TIMEOUT, what=f"export {export_id}"
        )

    def written(self, role: str = "member", **fields: Any) -> dict[str, Any]:
        """An export created and written: its record (succeeded, with its download URL)."""
        export = self.wait(self.create(role, **fields)["id"])
        assert export["status"] == "succeeded", export
        return export

    def download(self, url: str) -> httpx.Response:
        return self.client.get(url)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def add_runs(
    settings: Settings, tenant_id: uuid.UUID, job_id: str, runs: list[dict[str, Any]]
) -> list[str]:
    """Job instances of the job as `runs` say (status, step, started_at, finished_at, error):
    their ids, in order."""
    made = [
        JobInstance(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            job_id=uuid.UUID(job_id),
            scheduled_date=run["started_at"],
            day_mode="generate",
            images=[],
            status=run["status"],
            step=run.get("step"),
            percent=0,
            attempts=1,
            error=run.get("error"),
            started_at=run["started_at"],
            finished_at=run.get("finished_at"),
        )
        for run in runs
    ]

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            session.add_all(made)

    run_on(settings, scenario)
    return [str(instance.id) for instance in made]
