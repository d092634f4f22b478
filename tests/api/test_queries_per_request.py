"""What one request costs the database, counted: the statements and commits that `system.whoami`
and `drafts.list` run once their caller is known (issue 36: the request path stays at the floor
of its stack, and what each request does stays countable as domains are added). A middleware,
a dependency or a domain that adds a query to every request fails here, by name."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from contentplatform.kit import logs
from tests.drafts.support import Drafts
from tests.support.orgs import org_fixture
from tests.support.servers import AppServer

drafts = org_fixture(Drafts)

# Background work (the reconciler, the events dispatcher) shares the engine; only what runs
# under a request's id is counted.
_FIRST_WORDS = re.compile(r"^\s*(\w+)(?:.*?\bfrom\s+(\w+))?", re.IGNORECASE | re.DOTALL)


@contextmanager
def database_work(server: AppServer) -> Iterator[dict[str, list[str]]]:
    """Each request's statements (`select drafts`, `insert ...`, `commit`), by request id."""
    engine = server.app.state.runtime.db.engine.sync_engine
    seen: dict[str, list[str]] = defaultdict(list)

    def statement(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        if request_id := logs.request_id():
            found = _FIRST_WORDS.match(sql)
            assert found is not None
            verb, table = found.group(1).lower(), (found.group(2) or "").lower()
            seen[request_id].append(f"{verb} {table}".strip())

    def commit(_conn: Any) -> None:
        if request_id := logs.request_id():
            seen[request_id].append("commit")

    def listen() -> None:
        event.listen(engine, "before_cursor_execute", statement)
        event.listen(engine, "commit", commit)

    def stop() -> None:
        event.remove(engine, "before_cursor_execute", statement)
        event.remove(engine, "commit", commit)

    server.on_loop(listen)
    try:
        yield seen
    finally:
        server.on_loop(stop)


def work_of(seen: dict[str, list[str]], response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return seen.get(response.headers["x-request-id"], [])


def test_whoami_reads_the_membership_once_and_nothing_else(server, call, drafts):
    drafts.request("system.whoami", role="member")  # provisions the user; caches the caller
    with database_work(server) as seen:
        response = drafts.request("system.whoami", role="member")
    # The caller (user, membership, tenant) read fresh in one select; whoami answers from it.
    assert work_of(seen, response) == ["select users", "commit"]


@pytest.mark.parametrize("query", [{}, {"status": "reviewing"}])
def test_a_page_of_drafts_is_the_maintained_count_and_the_page(server, call, drafts, query):
    for n in range(3):
        drafts.create(f"Harbour notes {n}", "<p>The harbour at dawn.</p>")
    drafts.request("drafts.list", role="member")
    with database_work(server) as seen:
        response = drafts.request("drafts.list", query, role="member")
    assert response.json()["total"] == 3
    # The caller comes from the membership cache (kept fresh by invalidation); the total from
    # the counts the database keeps (drafts/models.py DraftCount), then the page.
    assert work_of(seen, response) == ["select draft_counts", "select drafts", "commit"]


def test_a_search_is_the_index_the_capped_count_and_the_page(server, call, drafts):
    for n in range(3):
        drafts.create(f"Harbour notes {n}", "<p>The harbour at dawn.</p>")
    drafts.request("drafts.list", role="member")
    with database_work(server) as seen:
        response = drafts.request("drafts.list", {"search": "harbour"}, role="member")
    assert response.json()["total"] == 3
    # SQLite asks its trigram index how many drafts may hold the word first; PostgreSQL's
    # pg_trgm index serves the query itself. Then the count (capped) and the page.
    looked_up = ["select drafts_search"] if server.app.state.runtime.db.dialect == "sqlite" else []
    assert work_of(seen, response) == [*looked_up, "select drafts", "select drafts", "commit"]
