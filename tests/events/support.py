"""The activity trail as a test reads it: `activity.list` through the test's transport, a poll for
an event that background work writes, and the outbox rows behind it (their payloads, which the
trail does not show)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.events.models import Event
from tests.support.database import select_all
from tests.support.orgs import Org

# A bound, not a wait: background work (ingestion, a run) writes its event when it ends.
DEADLINE = 90.0


class Trail(Org):
    """One organization's activity trail through one transport (`call`)."""

    def activity(self, role: str = "admin", **query: Any) -> dict[str, Any]:
        """activity.list, which must succeed: the page."""
        return self.ok("activity.list", query, role=role)

    def audit(self, **query: Any) -> dict[str, Any]:
        return self.activity("admin", scope="audit", **query)

    def actions(self, role: str = "admin", **query: Any) -> list[str]:
        return [row["action"] for row in self.activity(role, limit=100, **query)["data"]]

    def one(self, action: str, resource_id: object = None, **query: Any) -> dict[str, Any]:
        """The one row of `action` (about `resource_id`, when given) the query lists."""
        if resource_id is not None:
            query["resourceId"] = str(resource_id)
        rows = self.activity(action=action, limit=100, **query)["data"]
        assert len(rows) == 1, rows
        return rows[0]

    def wait_for(self, action: str, resource_id: object, **query: Any) -> dict[str, Any]:
        """Poll until the trail lists `action` about `resource_id` (bounded): that row."""
        deadline = time.monotonic() + DEADLINE
        while True:
            rows = self.activity(action=action, resourceId=str(resource_id), limit=100, **query)[
                "data"
            ]
            if rows:
                assert len(rows) == 1, rows
                return rows[0]
            assert time.monotonic() < deadline, f"no {action} about {resource_id}"
            time.sleep(0.05)

    def subject(self, role: str) -> str:
        """The identity provider's id of the role's user: what the trail names as its actor."""
        return self.users[role]


def by_user(trail: Trail, role: str) -> dict[str, Any]:
    """The actor a request of the role's user is recorded as."""
    return {"type": "user", "id": trail.subject(role), "display_name": trail.subject(role)}


SYSTEM = {"type": "system", "id": None, "display_name": "System"}


def payloads(settings: Settings, tenant_id: uuid.UUID, action: str) -> list[dict[str, Any]]:
    """The payloads of the tenant's events of `action`, oldest first (the outbox's own rows)."""
    rows = select_all(
        settings,
        select(Event)
        .where(Event.tenant_id == tenant_id, Event.type == action)
        .order_by(Event.created_at),
    )
    return [row.payload for row in rows]
