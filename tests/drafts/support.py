"""Helpers for the Drafts API tests: one organization's drafts seen through the API (one
transport), and a direct hand on the database for the statuses no Drafts operation reaches."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import update

from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Database
from tests.support.orgs import Org


class Drafts(Org):
    """One organization's drafts through one transport (`call`), with a user and token per role.

    Writes go as the editor unless told otherwise, reads as the member."""

    default_role = "editor"

    # --- the operations, answering 200 -------------------------------------------------------

    def create(self, title: str = "A draft", content: str | None = None, **extra: Any):
        data: dict[str, Any] = {"title": title, **extra}
        if content is not None:
            data["content"] = content
        return self.ok("drafts.createDraft", data)

    def get(self, draft_id: str) -> dict[str, Any]:
        return self.ok("drafts.getById", {"id": draft_id}, role="member")

    def job(self, name: str = "Weekly notes") -> str:
        """A paused job of the organization (its drafts name it): its id."""
        data = {"name": name, "topics": ["Notes"], "status": "paused"}
        return str(self.ok("jobs.create", data)["id"])

    def instance(self, job_id: str, scheduled_date: str = "2030-01-01T09:00:00Z") -> str:
        """An instance planned for the job: its id."""
        data = {"jobId": job_id, "scheduledDate": scheduled_date}
        return str(self.ok("jobInstances.create", data)["id"])

    def update(self, draft_id: str, **changes: Any) -> dict[str, Any]:
        return self.ok("drafts.update", {"id": draft_id, **changes})

    def approve(self, draft_id: str) -> dict[str, Any]:
        return self.ok("drafts.approve", {"id": draft_id})

    def reject(self, draft_id: str, reason: str = "Needs sources.") -> dict[str, Any]:
        return self.ok("drafts.reject", {"id": draft_id, "reason": reason})

    def delete(self, draft_id: str) -> dict[str, Any]:
        return self.ok("drafts.delete", {"id": draft_id}, role="admin")

    def list(self, **query: Any) -> dict[str, Any]:
        return self.ok("drafts.list", query, role="member")

    def titles(self, **query: Any) -> list[str]:
        return [draft["title"] for draft in self.list(**query)["data"]]

    def stats(self) -> dict[str, Any]:
        return self.ok("drafts.getStats", role="member")

    def publishable(self) -> list[dict[str, Any]]:
        return self.ok("drafts.publishable", role="member")

    def versions(self, draft_id: str, **query: Any) -> dict[str, Any]:
        return self.ok("drafts.listVersions", {"id": draft_id, **query}, role="member")

    def version(self, draft_id: str, version: int) -> dict[str, Any]:
        return self.ok("drafts.getVersion", {"id": draft_id, "version": version}, role="member")

    def restore(self, draft_id: str, version: int, **extra: Any) -> dict[str, Any]:
        return self.ok("drafts.restoreVersion", {"id": draft_id, "version": version, **extra})


# --- behind the API ---------------------------------------------------------------------------


def put_status(run: Any, draft_id: str, status: str, **fields: Any) -> None:
    """Set a draft's status (and other columns) in the database, as generation or publishing
    would: no Drafts operation moves a draft to generating, published or archived."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(Draft).where(Draft.id == uuid.UUID(draft_id)).values(status=status, **fields)
            )

    run(scenario)
