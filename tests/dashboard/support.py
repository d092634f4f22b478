"""An organization reading its dashboard through the test's transport, and a hand on the
database for what no operation makes quickly (finished job runs, a draft waiting for days, a
run at a review gate, a failing connection)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import update

from contentplatform.drafts.models import Draft
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs.models import Job
from contentplatform.kit.db import Database
from contentplatform.publishers.models import PublisherConnection
from tests.conftest import Run
from tests.notifications.support import Members


class Dashboard(Members):
    """One organization's home screen, read as the member unless told otherwise."""

    def summary(self, range: str = "30d", role: str = "member") -> dict[str, Any]:
        return self.ok("dashboard.summary", {"range": range}, role=role)  # type: ignore[no-any-return]

    def cards(self, range: str = "30d") -> dict[str, dict[str, Any]]:
        return {card["key"]: card for card in self.summary(range)["cards"]}

    def quick(self) -> dict[str, Any]:
        return self.ok("dashboard.quickStats", role="member")  # type: ignore[no-any-return]

    def activity(self, **query: Any) -> dict[str, Any]:
        return self.ok("dashboard.activity", query, role="member")  # type: ignore[no-any-return]

    def upcoming(self, **query: Any) -> dict[str, Any]:
        return self.ok("dashboard.upcoming", query, role="member")  # type: ignore[no-any-return]

    def pending(self, role: str = "member", **query: Any) -> dict[str, Any]:
        return self.ok("dashboard.pendingReviews", query, role=role)  # type: ignore[no-any-return]

    def alerts(self, role: str = "admin", **query: Any) -> dict[str, Any]:
        return self.ok("dashboard.alerts", query, role=role)  # type: ignore[no-any-return]

    def draft_stats(self) -> dict[str, Any]:
        return self.ok("drafts.getStats", role="member")  # type: ignore[no-any-return]

    def job_stats(self) -> dict[str, Any]:
        return self.ok("jobs.stats", role="member")  # type: ignore[no-any-return]

    def assign(self, draft_id: str, role: str) -> None:
        body = {"id": draft_id, "assigneeId": self.users[role]}
        response = self.request("drafts.assign", body, role="editor")
        assert response.status_code in (200, 204), response.text

    def new_job(self, name: str = "Weekly notes", status: str = "paused") -> str:
        data = {"name": name, "topics": ["Notes"], "status": status}
        return str(self.ok("jobs.create", data, role="editor")["id"])


# --- behind the API ---------------------------------------------------------------------------


def set_columns(run: Run, model: Any, row_id: str | uuid.UUID, **values: Any) -> None:
    """Set columns of one row, as the service's own work would (a run failing a job, a
    publisher's test failing, time passing)."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(model).where(model.id == uuid.UUID(str(row_id))).values(**values)
            )

    run(scenario)


def finished_runs(
    run: Run, tenant_id: uuid.UUID, job_id: str, runs: list[tuple[str, datetime]]
) -> None:
    """Job instances that ran and ended (`completed` or `failed`) at each moment."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            for status, ended in runs:
                session.add(
                    JobInstance(
                        id=uuid.uuid4(),
                        tenant_id=tenant_id,
                        job_id=uuid.UUID(job_id),
                        scheduled_date=ended,
                        day_mode="generate",
                        images=[],
                        status=status,
                        percent=100,
                        attempts=1,
                        started_at=ended,
                        finished_at=ended,
                        error="it broke" if status == "failed" else None,
                        problem="unknown" if status == "failed" else None,
                    )
                )

    run(scenario)


__all__ = ["Draft", "Job", "PublisherConnection"]
