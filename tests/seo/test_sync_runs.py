"""The sync runs: the service the parts run their provider calls inside (through the database),
and seo.listSyncRuns and getSyncRun over REST and RPC (runs planted with open_run)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.seo.sync_runs import service as sync_runs
from contentplatform.seo.sync_runs.errors import SyncRunNotFound
from tests.seo.support import Seo, plant_run
from tests.support.database import run_on
from tests.support.orgs import new_tenant, org_fixture
from tests.support.problems import problem

seo = org_fixture(Seo)
other = org_fixture(Seo, second=True)

OPEN: dict[str, Any] = {
    "kind": "search_console",
    "provider": "google_search_console",
    "trigger": "manual",
    "params": {"start_date": "2026-01-01", "end_date": "2026-01-31"},
}


# --- the service, through the database -----------------------------------------------------


def test_open_run_makes_one_run_per_key_even_at_once(settings: Settings):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)

        async def open_it(key: str) -> tuple[uuid.UUID, bool, str]:
            async with db.unit_of_work() as session:
                run, created = await sync_runs.open_run(
                    session, tenant_id, run_key=key, created_by="user_1", **OPEN
                )
                return run.id, created, run.status

        opened = await asyncio.gather(*(open_it("search_console:2026-01") for _ in range(3)))
        assert sorted(created for _, created, _ in opened) == [False, False, True]
        assert len({run_id for run_id, _, _ in opened}) == 1
        assert {status for _, _, status in opened} == {"queued"}
        # Another key is another run; the same key in another tenant too.
        other_id, created, _ = await open_it("search_console:2026-02")
        assert created and other_id != opened[0][0]
        second_tenant = await new_tenant(db)
        async with db.unit_of_work() as session:
            theirs, created = await sync_runs.open_run(
                session, second_tenant, run_key="search_console:2026-01", **OPEN
            )
        assert created and theirs.id != opened[0][0]

    run_on(settings, scenario)


def test_a_run_goes_from_queued_to_its_ending_once(settings: Settings):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        async with db.unit_of_work() as session:
            run, _ = await sync_runs.open_run(session, tenant_id, run_key="k", **OPEN)
            assert (await sync_runs.active_run(session, tenant_id, "search_console")).id == run.id
            assert await sync_runs.active_run(session, tenant_id, "sitemaps") is None
            run_id = run.id
        async with db.unit_of_work() as session:
            running = await sync_runs.mark_running(session, tenant_id, run_id)
            started = running.started_at
            assert running.status == "running" and started is not None
        async with db.unit_of_work() as session:  # resumed: started_at kept
            assert (await sync_runs.mark_running(session, tenant_id, run_id)).started_at == started
            await sync_runs.record_progress(session, tenant_id, run_id, done=1, total=31, rows=500)
            await sync_runs.record_progress(session, tenant_id, run_id, done=2, rows=250)
        async with db.unit_of_work() as session:
            shown = sync_runs.record(await sync_runs.require(session, tenant_id, run_id))
            assert (shown.progress.done, shown.progress.total, shown.rows_written) == (2, 31, 750)
            assert (await sync_runs.active_run(session, tenant_id, "search_console")).id == run_id
        items = [{"day": f"2026-01-{n:02}"} for n in range(1, 32)] * 5  # 155 items
        async with db.unit_of_work() as session:
            ended = await sync_runs.finish(
                session,
                tenant_id,
                run_id,
                status="partial",
                error={
                    "code": "quota_exceeded",
                    "message": "quota",
                    "retryable": True,
                    "items": items,
                },
            )
            assert ended.status == "partial" and ended.finished_at is not None
        async with db.unit_of_work() as session:
            shown = sync_runs.record(await sync_runs.require(session, tenant_id, run_id))
            assert shown.error is not None and len(shown.error.items) == 100
            assert (shown.error.code, shown.error.retryable) == ("quota_exceeded", True)
            assert await sync_runs.active_run(session, tenant_id, "search_console") is None
            # An ended run stays as it ended: a replayed step changes nothing.
            assert (
                await sync_runs.finish(session, tenant_id, run_id, status="succeeded")
            ).status == ("partial")
            assert (await sync_runs.mark_running(session, tenant_id, run_id)).status == "partial"
            # Opening its key again finds it, ended, rather than making another.
            again, created = await sync_runs.open_run(session, tenant_id, run_key="k", **OPEN)
            assert (again.id, created, again.status) == (run_id, False, "partial")

    run_on(settings, scenario)


def test_cancel_queued_fails_only_the_providers_queued_runs(settings: Settings):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        other_tenant = await new_tenant(db)
        async with db.unit_of_work() as session:
            queued, _ = await sync_runs.open_run(session, tenant_id, run_key="a", **OPEN)
            running, _ = await sync_runs.open_run(session, tenant_id, run_key="b", **OPEN)
            await sync_runs.mark_running(session, tenant_id, running.id)
            dataforseo, _ = await sync_runs.open_run(
                session,
                tenant_id,
                run_key="c",
                **{**OPEN, "kind": "rank_check", "provider": "dataforseo"},
            )
            theirs, _ = await sync_runs.open_run(session, other_tenant, run_key="a", **OPEN)
            ids = (queued.id, running.id, dataforseo.id)
        async with db.unit_of_work() as session:
            assert await sync_runs.cancel_queued(session, tenant_id, "google_search_console") == 1
        async with db.unit_of_work() as session:
            shown = [
                sync_runs.record(await sync_runs.require(session, tenant_id, run_id))
                for run_id in ids
            ]
            assert [run.status for run in shown] == ["failed", "running", "queued"]
            assert shown[0].error is not None and shown[0].error.code == "cancelled"
            assert shown[0].error.retryable is False and shown[0].finished_at is not None
            assert (await sync_runs.require(session, other_tenant, theirs.id)).status == "queued"

    run_on(settings, scenario)


def test_the_service_refuses_what_no_run_can_be(settings: Settings):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        other_tenant = await new_tenant(db)
        async with db.unit_of_work() as session:
            with pytest.raises(ValueError):
                await sync_runs.open_run(session, tenant_id, run_key="k", **{**OPEN, "kind": "x"})
            with pytest.raises(ValueError):
                await sync_runs.open_run(session, tenant_id, run_key="", **OPEN)
            run, _ = await sync_runs.open_run(session, tenant_id, run_key="k", **OPEN)
            with pytest.raises(ValueError):
                await sync_runs.finish(session, tenant_id, run.id, status="running")
            # Another tenant's run is none of this one's.
            with pytest.raises(SyncRunNotFound):
                await sync_runs.mark_running(session, other_tenant, run.id)
            with pytest.raises(SyncRunNotFound):
                await sync_runs.record_progress(session, other_tenant, run.id, done=1, rows=1)
            with pytest.raises(SyncRunNotFound):
                await sync_runs.finish(session, other_tenant, run.id, status="failed")
            assert (await sync_runs.require(session, tenant_id, run.id)).status == "queued"

    run_on(settings, scenario)


# --- the operations ---------------------------------------------------------------------------


def test_runs_are_listed_newest_first_and_filtered(seo: Seo, settings: Settings):
    tenant_id = seo.tenant_id
    first = plant_run(settings, tenant_id, status="succeeded")
    second = plant_run(
        settings,
        tenant_id,
        kind="rank_check",
        provider="dataforseo",
        status="failed",
        error={"code": "needs_reauth", "message": "The grant was revoked.", "retryable": False},
    )
    third = plant_run(settings, tenant_id, kind="url_inspection", trigger="schedule")
    listed = seo.ok("seo.listSyncRuns", {}, role="member")
    assert [run["id"] for run in listed["data"]] == [third, second, first]
    assert (listed["total"], listed["page"], listed["limit"]) == (3, 1, 20)
    shown = listed["data"][1]
    assert shown == {
        "id": second,
        "kind": "rank_check",
        "provider": "dataforseo",
        "status": "failed",
        "trigger": "manual",
        "params": {},
        "progress": {"done": 0, "total": 0},
        "rows_written": 0,
        "credits_reserved": 0,
        "credits_used": 0,
        "error": {
            "code": "needs_reauth",
            "message": "The grant was revoked.",
            "retryable": False,
            "items": [],
        },
        "created_by": None,
        "created_at": shown["created_at"],
        "started_at": shown["started_at"],
        "finished_at": shown["finished_at"],
    }
    assert shown["started_at"] is not None and shown["finished_at"] is not None

    def ids(**filters: Any) -> list[str]:
        return [run["id"] for run in seo.ok("seo.listSyncRuns", filters)["data"]]

    assert ids(kind="search_console") == [first]
    assert ids(provider="dataforseo") == [second]
    assert ids(status="queued") == [third]
    assert ids(kind="search_console", status="failed") == []
    page_two = seo.ok("seo.listSyncRuns", {"page": 2, "limit": 2})
    assert [run["id"] for run in page_two["data"]] == [first] and page_two["total"] == 3


@pytest.mark.parametrize(
    "filters",
    [{"kind": "crawl"}, {"provider": "bing"}, {"status": "cancelled"}, {"limit": 101}, {"page": 0}],
)
def test_what_the_list_refuses(seo: Seo, filters: dict[str, Any]):
    problem(seo.request("seo.listSyncRuns", filters), 400, "BAD_REQUEST")


def test_a_run_is_read_by_its_id_in_its_organization_only(seo: Seo, other: Seo, settings: Settings):
    run_id = plant_run(settings, seo.tenant_id, params={"start_date": "2026-01-01"})
    got = seo.ok("seo.getSyncRun", {"id": run_id}, role="member")
    assert (got["id"], got["status"], got["params"]) == (
        run_id,
        "queued",
        {"start_date": "2026-01-01"},
    )
    problem(other.request("seo.getSyncRun", {"id": run_id}), 404, "NOT_FOUND")
    problem(seo.request("seo.getSyncRun", {"id": str(uuid.uuid4())}), 404, "NOT_FOUND")
    assert other.ok("seo.listSyncRuns", {}) == {"data": [], "total": 0, "page": 1, "limit": 20}


def test_reading_runs_needs_a_member(seo: Seo, client):
    response = client.get("/v1/seo/sync-runs")
    problem(response, 401, "UNAUTHORIZED")
