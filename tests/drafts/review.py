"""Helpers for the review tests of issue 20 (comments, diffs, bulk actions, archiving and the
events each change writes): one organization's drafts through the API (tests.drafts.support's
Drafts) with the new operations, its activity trail, and drafts written by the generation
pipeline's own service calls (an AI revision, as a generation run leaves one)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy import select

from contentplatform.drafts import service as drafts_service
from contentplatform.drafts.models import DraftComment
from contentplatform.events.models import Event
from contentplatform.kit.db import Database, utcnow
from tests.drafts.support import Drafts
from tests.support.problems import problem


class Review(Drafts):
    # --- comments ---------------------------------------------------------------------------

    def add_comment(
        self, draft_id: str, body: str, *, role: str = "member", **extra: Any
    ) -> httpx.Response:
        return self.request("drafts.addComment", {"id": draft_id, "body": body, **extra}, role=role)

    def comment(self, draft_id: str, body: str, *, role: str = "member", **extra: Any):
        response = self.add_comment(draft_id, body, role=role, **extra)
        assert response.status_code == 200, response.text
        return response.json()

    def comments(self, draft_id: str, **query: Any) -> dict[str, Any]:
        return self.ok("drafts.listComments", {"id": draft_id, **query}, role="member")

    # --- diffs and bulk actions -------------------------------------------------------------

    def compare(self, draft_id: str, **query: Any) -> httpx.Response:
        return self.request("drafts.compareVersions", {"id": draft_id, **query}, role="member")

    def diff(self, draft_id: str, **query: Any) -> dict[str, Any]:
        response = self.compare(draft_id, **query)
        assert response.status_code == 200, response.text
        return response.json()

    def bulk_request(
        self, action: str, ids: list[str], *, role: str = "editor", **extra: Any
    ) -> httpx.Response:
        data = {"action": action, "draftIds": ids, **extra}
        return self.request("drafts.bulk", data, role=role)

    def bulk(self, action: str, ids: list[str], *, role: str = "editor", **extra: Any):
        response = self.bulk_request(action, ids, role=role, **extra)
        assert response.status_code == 200, response.text
        return response.json()

    def archive(self, draft_id: str) -> None:
        outcome = self.bulk("archive", [draft_id])
        assert outcome["success"], outcome

    def unarchive(self, draft_id: str, role: str = "editor") -> httpx.Response:
        return self.request("drafts.unarchive", {"id": draft_id}, role=role)

    # --- the activity trail -----------------------------------------------------------------

    def activity(self, **query: Any) -> list[dict[str, Any]]:
        """The organization's activity, oldest first (activity.list, as the member)."""
        page = self.ok("activity.list", {"limit": 100, **query}, role="member")
        assert page["total"] <= 100, "more activity than one page"
        return list(reversed(page["data"]))

    def trail(self, draft_id: str) -> list[tuple[str, str | None]]:
        """(action, actor id) of each event about the draft, oldest first."""
        return [
            (event["action"], event["actor"]["id"]) for event in self.activity(resourceId=draft_id)
        ]


def bad_fields(response: httpx.Response) -> list[str]:
    """The paths a 400 names."""
    body = problem(response, 400, "BAD_REQUEST")
    return [error["path"] for error in body["errors"]]


def results(*rows: tuple[str, str | None]) -> list[dict[str, Any]]:
    """drafts.bulk results from (id, error code or None), without the details."""
    return [{"id": draft_id, "ok": code is None, "code": code} for draft_id, code in rows]


def codes(outcome: dict[str, Any]) -> list[dict[str, Any]]:
    """drafts.bulk results as `results` writes them."""
    return [
        {"id": row["id"], "ok": row["ok"], "code": row["error"] and row["error"]["code"]}
        for row in outcome["results"]
    ]


# --- behind the API ---------------------------------------------------------------------------


def generated(run: Any, tenant_id: uuid.UUID, title: str, content: str) -> str:
    """A draft the generation pipeline wrote (its service calls, as a run makes them): version 1
    is an AI revision, the draft in review. Its id."""

    async def scenario(db: Database) -> str:
        run_id = uuid.uuid4()
        async with db.unit_of_work() as session:
            [draft_id] = await drafts_service.start_generating_many(
                session, tenant_id, [drafts_service.Generating(title=title, run_id=run_id)]
            )
        async with db.unit_of_work() as session:
            draft = await drafts_service.generating(session, tenant_id, draft_id, run_id)
            assert draft is not None
            drafts_service.finish_generation(
                session,
                draft,
                title=title,
                content=content,
                excerpt=None,
                seo_meta={},
                provenance={"writer": "test"},
                summary="Generated",
            )
        return str(draft_id)

    result: str = run(scenario)
    return result


def add_replies(run: Any, tenant_id: uuid.UUID, draft_id: str, parent_id: str, count: int):
    """`count` replies to a thread, written straight to the database."""

    async def scenario(db: Database) -> None:
        now = utcnow()
        async with db.unit_of_work() as session:
            for _ in range(count):
                session.add(
                    DraftComment(
                        id=uuid.uuid4(),
                        tenant_id=tenant_id,
                        draft_id=uuid.UUID(draft_id),
                        parent_id=uuid.UUID(parent_id),
                        author_id="someone",
                        body="Agreed.",
                        mentions=[],
                        created_at=now,
                        updated_at=now,
                    )
                )

    run(scenario)


def stored_events(run: Any, draft_id: str) -> list[Event]:
    """Every event about the draft as stored, oldest first (payloads included)."""

    async def scenario(db: Database) -> list[Event]:
        async with db.unit_of_work() as session:
            rows = await session.execute(
                select(Event)
                .where(Event.resource_id == uuid.UUID(draft_id))
                .order_by(Event.created_at, Event.id)
            )
            return list(rows.scalars())

    found: list[Event] = run(scenario)
    return found
