"""seo.syncSearchConsole's refusals and rules that need no Google: the window's bounds, the
connection it needs, the role, one run at a time, and the daily schedule's turn; over REST and
RPC."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.series import add_months
from contentplatform.seo.models import SeoConnection, SeoSyncRun
from contentplatform.seo.search_console import sync
from tests.seo.support import plant_run, select_property
from tests.support.database import run_on, select_all
from tests.support.orgs import Org, org_fixture

pytestmark = pytest.mark.shared_org

OPERATION = "seo.syncSearchConsole"


class Syncs(Org):
    default_role = "editor"

    def sync(self, role: str = "editor", **fields: Any) -> Any:
        return self.request(OPERATION, fields, role=role)


syncs = org_fixture(Syncs)
other = org_fixture(Syncs, second=True)


def today() -> date:
    return datetime.now(UTC).date()  # the organizations here keep the default zone, UTC


def problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    return body


def test_a_window_ending_after_today_or_starting_after_it_ends_is_refused(syncs: Syncs) -> None:
    tomorrow = today() + timedelta(days=1)
    body = problem(syncs.sync(endDate=tomorrow.isoformat()), 400, "BAD_REQUEST")
    assert "after today" in body["detail"]
    week_ago = today() - timedelta(days=7)
    body = problem(
        syncs.sync(
            startDate=week_ago.isoformat(), endDate=(week_ago - timedelta(days=1)).isoformat()
        ),
        400,
        "BAD_REQUEST",
    )
    assert "startDate is after endDate" in body["detail"]
    problem(syncs.sync(include=["search_analytics", "search_analytics"]), 400, "BAD_REQUEST")
    problem(syncs.sync(include=["everything"]), 400, "BAD_REQUEST")
    problem(syncs.sync(startDate="2025-02-30"), 400, "BAD_REQUEST")


def test_a_window_older_than_16_months_is_refused_and_16_months_is_not(syncs: Syncs) -> None:
    oldest = add_months(today(), -16)
    body = problem(
        syncs.sync(startDate=(oldest - timedelta(days=1)).isoformat()), 400, "BAD_REQUEST"
    )
    assert "16 months" in body["detail"]
    # The oldest day passes the window's rule: what refuses it then is the missing connection.
    problem(syncs.sync(startDate=oldest.isoformat()), 409, "CONFLICT")


def test_without_search_console_connected_a_sync_is_409(syncs: Syncs) -> None:
    body = problem(syncs.sync(), 409, "CONFLICT")
    assert "seo.connect" in body["detail"]


def test_a_member_may_not_sync(syncs: Syncs) -> None:
    problem(syncs.sync(role="member"), 403, "FORBIDDEN")


@pytest.mark.own_org
def test_a_run_already_queued_or_running_is_answered_instead_of_a_second(
    syncs: Syncs, other: Syncs, settings: Settings
) -> None:
    select_property(settings, syncs.tenant_id, "sc-domain:example.com")
    running = plant_run(settings, syncs.tenant_id, status="running")
    answered = syncs.sync()
    assert answered.status_code == 200, answered.text
    assert answered.json()["id"] == running
    assert answered.json()["status"] == "running"
    # Another organization's run is not this one's: it has no connection of its own.
    problem(other.sync(), 409, "CONFLICT")
    # No second run was opened beside it.
    runs = select_all(
        settings, select(SeoSyncRun.id).where(SeoSyncRun.tenant_id == syncs.tenant_id)
    )
    assert [str(r) for r in runs] == [running]


def _connection(settings: Settings, tenant_id: uuid.UUID) -> SeoConnection:
    found = select_all(settings, select(SeoConnection).where(SeoConnection.tenant_id == tenant_id))
    assert len(found) == 1
    return found[0]  # type: ignore[no-any-return]


def _due(settings: Settings, tenant_id: uuid.UUID, **values: Any) -> None:
    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(SeoConnection)
                .where(SeoConnection.tenant_id == tenant_id)
                .values(next_sync_at=utcnow() - timedelta(minutes=1), **values)
            )

    run_on(settings, scenario)


def _tick(settings: Settings) -> dict[str, int]:
    async def scenario(db: Database) -> dict[str, int]:
        return await sync.tick(db, utcnow())

    result: dict[str, int] = run_on(settings, scenario)
    return result


@pytest.mark.own_org
def test_the_daily_sync_is_skipped_while_paused_and_moves_to_the_next_local_hour(
    syncs: Syncs, settings: Settings
) -> None:
    select_property(settings, syncs.tenant_id, "sc-domain:paused.example")
    _due(settings, syncs.tenant_id, sync_enabled=False)
    report = _tick(settings)
    assert report["skipped"] >= 1
    connection = _connection(settings, syncs.tenant_id)
    runs = select_all(
        settings, select(SeoSyncRun.id).where(SeoSyncRun.tenant_id == syncs.tenant_id)
    )
    assert runs == []
    # Its next turn is the next 04:00 of the organization's zone (UTC here).
    next_at = connection.next_sync_at
    assert next_at is not None
    assert (next_at.hour, next_at.minute) == (4, 0)
    assert timedelta(0) < next_at - utcnow() <= timedelta(days=1)
    # Not due any more: a second tick leaves it alone.
    _tick(settings)
    assert _connection(settings, syncs.tenant_id).next_sync_at == next_at


@pytest.mark.own_org
def test_a_due_daily_sync_opens_a_scheduled_run_once(syncs: Syncs, settings: Settings) -> None:
    select_property(settings, syncs.tenant_id, "sc-domain:daily.example")
    _due(settings, syncs.tenant_id)
    _tick(settings)
    runs = select_all(settings, select(SeoSyncRun).where(SeoSyncRun.tenant_id == syncs.tenant_id))
    assert len(runs) == 1
    assert (runs[0].trigger, runs[0].kind) == ("schedule", "search_console")
    yesterday = today() - timedelta(days=1)
    assert runs[0].params["end_date"] == yesterday.isoformat()
    # Before the first sync: the backfill of 16 months (the settings' default).
    assert runs[0].params["start_date"] == add_months(today(), -16).isoformat()
    # The connection's next turn is tomorrow's 04:00 (UTC here), not this tick again.
    next_at = _connection(settings, syncs.tenant_id).next_sync_at
    assert next_at is not None and next_at > utcnow()
