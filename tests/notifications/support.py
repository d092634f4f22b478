"""Helpers for the notifications and watches tests: an organization whose members read their
notifications and keep their watches through the test's transport, and events written straight
to the outbox (as a domain's service writes them) then dispatched before the test looks."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update

from contentplatform.core import actors
from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.kit.db import Database
from contentplatform.notifications.models import Notification
from tests.conftest import Run
from tests.support.orgs import ROLES, Org

SETTLE_SECONDS = 20.0


class Members(Org):
    """One organization whose three members (member, editor, admin) are all active: each role's
    user has been seen once, so the listener knows them."""

    default_role = "member"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for role in ROLES:
            self.whoami(role)

    def subject(self, role: str) -> str:
        return self.users[role]

    def actor(self, role: str) -> actors.Actor:
        """The member of `role` acting, as a request of theirs names them in its events."""
        return actors.Actor(type="user", id=self.users[role], display_name=f"Ada {role.title()}")

    # --- the operations, answering 200 -----------------------------------------------------------

    def notifications(self, role: str = "member", **query: Any) -> dict[str, Any]:
        page: dict[str, Any] = self.ok("notifications.list", query, role=role)
        return page

    def types(self, role: str = "member", **query: Any) -> list[str]:
        return [item["type"] for item in self.notifications(role, **query)["data"]]

    def mark_read(self, role: str = "member", **body: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("notifications.markRead", body, role=role)
        return result

    def watches(self, role: str = "member", **query: Any) -> list[dict[str, Any]]:
        listed = self.ok("watches.list", query, role=role)
        assert listed["total"] == len(listed["data"])
        found: list[dict[str, Any]] = listed["data"]
        return found

    def tenant_watch(self, role: str = "member") -> dict[str, Any]:
        (found,) = [w for w in self.watches(role) if w["resource_type"] == "tenant"]
        return found

    def watch(self, role: str = "member", **body: Any) -> dict[str, Any]:
        found: dict[str, Any] = self.ok("watches.upsert", body, role=role)
        return found

    # --- resources of the organization ----------------------------------------------------------

    def draft(self, title: str = "Spring launch", **extra: Any) -> str:
        return str(self.ok("drafts.createDraft", {"title": title, **extra}, role="editor")["id"])

    def job(self, name: str = "Weekly notes") -> str:
        data = {"name": name, "topics": ["Notes"], "status": "paused"}
        return str(self.ok("jobs.create", data, role="editor")["id"])

    def publisher(self) -> str:
        body = {"name": "Hook", "type": "webhook", "config": {"url": "http://127.0.0.1:9/hook"}}
        return str(self.ok("publishers.create", body, role="admin")["id"])

    def document(self, filename: str = "guide.md") -> str:
        data = {
            "filename": filename,
            "fileType": "md",
            "storagePath": f"{self.org}/library/{uuid.uuid4().hex}/{filename}",
        }
        return str(self.ok("documents.create", data, role="editor")["id"])


# --- behind the API ---------------------------------------------------------------------------


def emit(
    run: Run,
    tenant_id: uuid.UUID,
    type_: str,
    *,
    actor: actors.Actor | None = None,
    resource_id: uuid.UUID | str | None = None,
    payload: dict[str, Any] | None = None,
    settle: bool = True,
) -> uuid.UUID:
    """Write one event as a domain's service would (by `actor`; the system without one), and by
    default wait until the listeners have taken it."""

    async def scenario(db: Database) -> uuid.UUID:
        async with db.unit_of_work() as session:
            event = events.emit(
                session,
                tenant_id,
                type_,
                resource_id=uuid.UUID(str(resource_id)) if resource_id is not None else None,
                payload=payload,
                actor=actor or actors.SYSTEM,
            )
            return event.id

    event_id: uuid.UUID = run(scenario)
    if settle:
        settled(run, tenant_id)
    return event_id


def settled(run: Run, tenant_id: uuid.UUID) -> None:
    """Dispatch until every event of the tenant has been taken (and what the listeners wrote
    with it committed): the server's dispatcher or this one, whichever claims it."""

    async def scenario(db: Database) -> None:
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            await events.dispatch_once(db)
            async with db.unit_of_work() as session:
                left = await session.scalar(
                    select(func.count())
                    .select_from(Event)
                    .where(Event.tenant_id == tenant_id, Event.dispatched_at.is_(None))
                )
            if not left:
                return
            assert time.monotonic() < deadline, f"{left} events of the tenant still not taken"
            await asyncio.sleep(0.02)

    run(scenario)


def age(run: Run, tenant_id: uuid.UUID, days: int) -> None:
    """Make every notification of the tenant `days` older."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            rows = await session.execute(
                select(Notification).where(Notification.tenant_id == tenant_id)
            )
            for row in rows.scalars():
                await session.execute(
                    update(Notification)
                    .where(Notification.id == row.id)
                    .values(created_at=row.created_at - timedelta(days=days))
                )

    run(scenario)
