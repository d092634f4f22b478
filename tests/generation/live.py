"""Helpers of the live-run tests (test_live.py): a Writer that also reads a run's event stream over
the service's real socket, and cancels, retries and regenerates; and looks behind the API (a
run's stream log, forgotten as if it had expired)."""

from __future__ import annotations

import threading
import time
import uuid
from types import SimpleNamespace
from typing import Any

import httpx
from httpx_sse import connect_sse

from contentplatform.config import Settings
from contentplatform.generation import schemas, service
from contentplatform.kit.db import AFTER_COMMIT_KEY, Database
from tests.generation.support import FINISHED, RUN_TIMEOUT, Writer
from tests.support.database import run_on
from tests.support.sse import is_ping

Frame = tuple[str, str, dict[str, Any]]  # (id, event, data)
TERMINAL = ("run_finished", "error")


class Live(Writer):
    def headers(self, role: str = "member") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}", "x-idp-org-id": self.org}

    def events(
        self,
        run_id: str,
        *,
        role: str = "member",
        last_event_id: str | None = None,
        query_id: str | None = None,
        first: int | None = None,
        rpc: bool = False,
    ) -> list[Frame]:
        """The run's stream over the socket, from the start or after the id given (header, or
        `lastEventId` in the query), to its end or its `first` events (then it disconnects).
        Bounded: a stream still open after RUN_TIMEOUT is cut and fails the test."""
        headers = self.headers(role)
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        params = {"lastEventId": query_id} if query_id is not None else None
        if rpc:
            method, path, body = "POST", "/api/rpc/generation.streamRun", {"id": run_id}
        else:
            method, path, body = "GET", f"/v1/generation/runs/{run_id}/events", None
        found: list[Frame] = []
        with connect_sse(
            self.client, method, path, headers=headers, params=params, json=body
        ) as source:
            response = source.response
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            cut = threading.Timer(RUN_TIMEOUT, response.close)
            cut.start()
            try:
                for sse in source.iter_sse():
                    if is_ping(sse):
                        continue
                    found.append((sse.id, sse.event, sse.json()))
                    if first is not None and len(found) == first:
                        break
            finally:
                cut.cancel()
        ended = bool(found) and found[-1][1] in TERMINAL
        assert first is not None or ended, f"the stream ended without a terminal event: {found}"
        return found

    def stream_problem(self, run_id: str, role: str = "member", **headers: str) -> httpx.Response:
        """What streamRun answers when it refuses (a problem, not a stream)."""
        return self.client.get(
            f"/v1/generation/runs/{run_id}/events", headers={**self.headers(role), **headers}
        )

    def runs(self, role: str = "member", **query: Any) -> dict[str, Any]:
        return self.ok("generation.listRuns", query, role=role)

    def cancel(self, run_id: str, role: str = "editor") -> httpx.Response:
        return self.request("generation.cancelRun", {"id": run_id}, role=role)

    def retry(self, run_id: str, key: str, role: str = "editor") -> httpx.Response:
        return self.request("generation.retryRun", {"id": run_id, "idempotencyKey": key}, role=role)

    def regenerate(self, draft_id: str, role: str = "editor", **data: Any) -> httpx.Response:
        data.setdefault("idempotencyKey", f"regen-{uuid.uuid4()}")
        return self.request("generation.regenerateDraft", {"id": draft_id, **data}, role=role)

    def topics(self, role: str = "editor", **data: Any) -> httpx.Response:
        return self.request("generation.suggestTopics", data, role=role)

    def finished(self, run_id: str) -> dict[str, Any]:
        run = self.wait(run_id)
        assert run["status"] in FINISHED
        return run


def progress_of(frames: list[Frame]) -> list[dict[str, Any]]:
    return [data for _, event, data in frames if event == "progress"]


def wait_until(what: str, check: Any, timeout: float = RUN_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return found


def queued_behind_the_back(settings: Settings, tenant_id: uuid.UUID, topic: str) -> tuple[str, str]:
    """What generation.blog commits (the hold, the draft in generating, the queued run), without
    starting its workflow (as if the process died right after the commit): the run's and the
    draft's ids. The service's reconciler starts it within a reconcile interval or so."""

    async def scenario(db: Database) -> tuple[str, str]:
        async with db.unit_of_work() as session:
            draft, run = await service.start_blog(
                session,
                SimpleNamespace(settings=settings),  # type: ignore[arg-type]
                tenant_id,
                schemas.BlogInput(topic=topic),
                created_by="test",
            )
            session.info.pop(AFTER_COMMIT_KEY, None)
            return str(run.id), str(draft.id)

    return run_on(settings, scenario)
