"""The offline provider's Search Console in the local environment (the tests' environment), over
REST and RPC: connecting it starts a backfill whose made-up days queryPerformance reads, with
the exact totals its deterministic days give, an anonymized share hidden from the query rows,
and the label on the connection; a second sync and a sync after a purge store the same days;
another organization sees nothing; outside local, and once Google is connected, it is not
used. Its syncs are noted on it (last_sync_at), it has the daily sync, which follows Google's
connection while that is present (never both), and its URL inspections are recorded as its
own, never as Google's."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from contentplatform.config import Environment, Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.connections import access as console_access
from contentplatform.seo.connections import offline
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.models import SeoConnection, SeoSiteDay
from contentplatform.seo.search_console import sync
from tests.conftest import SEO_REDIRECT_URI
from tests.seo.inspections.support import Inspections, plant_pending
from tests.seo.search_console.sync_support import GSC, SearchConsole, site_days, stored
from tests.support.database import run_on, select_all
from tests.support.google import GoogleStandIn
from tests.support.orgs import org_fixture
from tests.support.problems import problem

console = org_fixture(SearchConsole)
other = org_fixture(SearchConsole, second=True)

LABEL = "Offline fixtures (made-up data)"


def today() -> date:
    return datetime.now(UTC).date()


def window() -> tuple[date, date]:
    """Final days well inside a one-month backfill."""
    return today() - timedelta(days=20), today() - timedelta(days=5)


def connect_offline(org: SearchConsole, site: str) -> dict[str, Any]:
    """Offline connected with the profile's site `site` and a one-month backfill, which is
    waited for: the connection."""
    org.ok(
        "seo.updateSettings",
        {"siteUrl": site, "searchConsole": {"backfillMonths": 1}},
        role="admin",
    )
    connected: dict[str, Any] = org.ok("seo.connect", {"provider": "offline"}, role="admin")
    runs = org.ok("seo.listSyncRuns", {"kind": "search_console"}, role="member")["data"]
    assert [(run["trigger"], run["provider"]) for run in runs] == [("connect", "offline")], runs
    backfill = org.wait(runs[0]["id"])
    assert backfill["status"] == "succeeded", backfill
    return connected


def performance(org: SearchConsole, **fields: Any) -> dict[str, Any]:
    first, last = window()
    body = {"startDate": first.isoformat(), "endDate": last.isoformat(), **fields}
    found: dict[str, Any] = org.ok("seo.queryPerformance", body, role="member")
    return found


def made_up(site_url: str, base: str, first: date, last: date) -> list[dict[str, Any]]:
    """Every row the offline provider makes for the days (web)."""
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    return [row for day in days for row in offline.day_rows(site_url, base, "web", day)]


def unique_site() -> tuple[str, str]:
    """A profile site of the test's own, and the offline property made for it."""
    host = f"shop{uuid.uuid4().hex[:10]}.example.org"
    return f"https://www.{host}/", f"sc-domain:{host}"


def test_the_backfill_stores_labelled_deterministic_days_query_performance_reads(
    console: SearchConsole, other: SearchConsole
) -> None:
    site, prop = unique_site()
    connected = connect_offline(console, site)
    assert connected["status"] == "connected"
    assert connected["account_label"] == LABEL
    assert connected["config"]["label"] == LABEL
    assert connected["property"]["site_url"] == prop
    assert connected["property"]["permission_level"] == "offline"
    listed = console.ok("seo.listConnections", role="member")["data"]
    assert {c["provider"]: c["account_label"] for c in listed}["offline"] == LABEL
    # It is not passed off as a Google connection.
    assert console.ok("seo.getConnection", {"provider": GSC})["status"] == "not_connected"

    first, last = window()
    rows = made_up(prop, site, first, last)
    clicks, impressions = sum(r["clicks"] for r in rows), sum(r["impressions"] for r in rows)
    totals = performance(console)["totals"]
    assert (totals["clicks"], totals["impressions"]) == (clicks, impressions)
    assert clicks > 0 and impressions > clicks

    by_query = performance(console, dimensions=["query"], limit=1000)
    anonymized = [r for r in rows if r["query"] is None]
    hidden = by_query["hidden"]
    assert hidden["impressions"] == sum(r["impressions"] for r in anonymized) > 0
    assert hidden["clicks"] == sum(r["clicks"] for r in anonymized)
    assert by_query["total"] == 60
    assert sum(r["impressions"] for r in by_query["data"]) == impressions - hidden["impressions"]

    by_page = performance(console, dimensions=["page", "device"], limit=1000)
    pages = {r["keys"]["page"] for r in by_page["data"]}
    assert len(pages) == 20 and all(page.startswith(site) for page in pages)
    assert {r["keys"]["device"] for r in by_page["data"]} == {"desktop", "mobile"}

    # Another organization sees none of it.
    theirs = performance(other)
    assert theirs["totals"]["impressions"] == 0 and theirs["data"] == []
    assert other.ok("seo.listSyncRuns", {"kind": "search_console"}, role="member")["data"] == []
    assert other.ok("seo.getConnection", {"provider": "offline"})["status"] == "not_connected"


def test_syncing_again_and_after_a_purge_stores_the_same_days(
    console: SearchConsole, settings: Settings
) -> None:
    site, _ = unique_site()
    connect_offline(console, site)
    first, last = window()

    def snapshot() -> dict[date, tuple[int, int, float]]:
        return {
            day: (row.clicks, row.impressions, row.position_sum)
            for day, row in site_days(settings, console.tenant_id).items()
            if first <= day <= last
        }

    before = snapshot()
    assert len(before) == (last - first).days + 1
    assert all(impressions > 0 for _, impressions, _ in before.values())
    again = console.synced(startDate=first.isoformat(), endDate=last.isoformat())
    assert again["status"] == "succeeded", again
    assert snapshot() == before

    gone = console.ok("seo.disconnect", {"provider": "offline", "purgeData": True}, role="admin")
    assert gone["purged"]["search_rows"] > 0
    assert stored(settings, console.tenant_id, SeoSiteDay) == []
    console.ok("seo.connect", {"provider": "offline"}, role="admin")
    # The connect's backfill covers the window it covered before: that run is answered, and
    # so would the window's manual one be. A window of its own is synced again.
    day_before = (first - timedelta(days=1)).isoformat()
    resynced = console.synced(startDate=day_before, endDate=last.isoformat())
    assert resynced["status"] == "succeeded" and resynced["provider"] == "offline"
    assert snapshot() == before


def test_outside_local_offline_is_not_search_console(
    console: SearchConsole, settings: Settings
) -> None:
    site, prop = unique_site()
    connect_offline(console, site)
    staging = settings.model_copy(update={"env": Environment.staging})

    async def reach(db: Database, given: Settings) -> str:
        async with db.unit_of_work() as session:
            access = await console_access.search_console(session, console.tenant_id, given)
            return access.site_url

    assert run_on(settings, lambda db: reach(db, settings)) == prop
    with pytest.raises(SearchConsoleNotConnected):
        run_on(settings, lambda db: reach(db, staging))


def test_a_google_connection_wins_and_takes_the_property_without_the_made_up_days(
    console: SearchConsole, google: GoogleStandIn, settings: Settings
) -> None:
    site, prop = unique_site()
    connect_offline(console, site)
    assert site_days(settings, console.tenant_id)
    # The grant sees the same domain property: Google's connection chooses it.
    google.sites.append({"siteUrl": prop, "permissionLevel": "siteOwner"})
    started = console.ok(
        "seo.connect", {"provider": GSC, "redirectUri": SEO_REDIRECT_URI}, role="admin"
    )
    code = google.authorize(started["authorization_url"])
    connected = console.ok(
        "seo.completeConnect",
        {"provider": GSC, "code": code, "state": started["state"]},
        role="admin",
    )
    assert connected["property"]["site_url"] == prop
    assert connected["property"]["permission_level"] == "siteOwner"
    # Google's own backfill (the stand-in has no day seeded: zeros) replaced the made-up days.
    runs = console.ok("seo.listSyncRuns", {"provider": GSC}, role="member")["data"]
    assert console.wait(runs[0]["id"])["status"] == "succeeded"
    assert all(row.impressions == 0 for row in site_days(settings, console.tenant_id).values())
    assert performance(console)["totals"]["impressions"] == 0
    offline_now = console.ok("seo.getConnection", {"provider": "offline"}, role="member")
    assert offline_now["status"] == "connected" and offline_now["property"] is None
    # Google gone, the offline connection has no property (Google's is not its to fill).
    console.ok("seo.disconnect", {"provider": GSC}, role="admin")
    problem(console.request("seo.syncSearchConsole", {}, role="editor"), 409, "CONFLICT")
    # Connected again, it makes a property Google does not hold.
    again = console.ok("seo.connect", {"provider": "offline"}, role="admin")
    assert again["property"]["site_url"] == "sc-domain:offline.example"
    runs = console.ok("seo.listSyncRuns", {"provider": "offline"}, role="member")["data"]
    assert console.wait(runs[0]["id"])["status"] == "succeeded"


def schedules(settings: Settings, tenant_id: uuid.UUID) -> dict[str, datetime | None]:
    """Each Search Console connection's next daily sync, by provider."""
    rows = select_all(settings, select(SeoConnection).where(SeoConnection.tenant_id == tenant_id))
    return {row.provider: row.next_sync_at for row in rows if row.provider in (GSC, "offline")}


def tick_with_due(settings: Settings, tenant_id: uuid.UUID) -> None:
    """The tenant's scheduled daily sync made due a minute ago, then the scheduler's tick."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(SeoConnection)
                .where(
                    SeoConnection.tenant_id == tenant_id, SeoConnection.next_sync_at.is_not(None)
                )
                .values(next_sync_at=utcnow() - timedelta(minutes=1))
            )
        await sync.tick(db, utcnow())

    run_on(settings, scenario)


def scheduled_runs(org: SearchConsole) -> list[dict[str, Any]]:
    runs = org.ok("seo.listSyncRuns", {"kind": "search_console"}, role="member")["data"]
    return [run for run in runs if run["trigger"] == "schedule"]


def test_its_syncs_are_noted_on_it_in_list_connections(console: SearchConsole) -> None:
    site, _ = unique_site()
    connect_offline(console, site)
    listed = console.ok("seo.listConnections", role="member")["data"]
    shown = {c["provider"]: c for c in listed}
    assert shown["offline"]["last_sync_at"] is not None
    assert shown["offline"]["last_error"] is None
    assert shown[GSC]["last_sync_at"] is None
    found = console.ok("seo.getConnection", {"provider": "offline"}, role="member")
    assert found["last_sync_at"] == shown["offline"]["last_sync_at"]


def test_an_offline_connection_gets_the_daily_sync(
    console: SearchConsole, settings: Settings
) -> None:
    site, _ = unique_site()
    connect_offline(console, site)
    # Scheduled at the next 04:00 of the organization's zone (UTC here).
    next_at = schedules(settings, console.tenant_id)["offline"]
    assert next_at is not None and (next_at.hour, next_at.minute) == (4, 0)
    assert timedelta(0) < next_at - utcnow() <= timedelta(days=1)

    tick_with_due(settings, console.tenant_id)
    runs = scheduled_runs(console)
    assert [run["provider"] for run in runs] == ["offline"], runs
    assert console.wait(runs[0]["id"])["status"] == "succeeded"
    moved = schedules(settings, console.tenant_id)["offline"]
    assert moved is not None and moved > utcnow()


def test_the_daily_sync_follows_google_while_it_is_present_never_both(
    console: SearchConsole, google: GoogleStandIn, settings: Settings
) -> None:
    site, _ = unique_site()
    connect_offline(console, site)
    # Google's grant holds the profile's site itself: its connection chooses that property and
    # the offline one keeps its own.
    google.sites.append({"siteUrl": site, "permissionLevel": "siteOwner"})
    started = console.ok(
        "seo.connect", {"provider": GSC, "redirectUri": SEO_REDIRECT_URI}, role="admin"
    )
    code = google.authorize(started["authorization_url"])
    console.ok(
        "seo.completeConnect",
        {"provider": GSC, "code": code, "state": started["state"]},
        role="admin",
    )
    backfill = console.ok("seo.listSyncRuns", {"provider": GSC}, role="member")["data"]
    assert console.wait(backfill[0]["id"])["status"] == "succeeded"
    now = schedules(settings, console.tenant_id)
    assert now[GSC] is not None and now["offline"] is None

    # Google's turn comes while it is present: the daily sync is Google's.
    tick_with_due(settings, console.tenant_id)
    runs = scheduled_runs(console)
    assert [run["provider"] for run in runs] == [GSC], runs
    assert console.wait(runs[0]["id"])["status"] == "succeeded"

    # Google gone, the next turn goes to the offline connection, and moves there.
    console.ok("seo.disconnect", {"provider": GSC}, role="admin")
    tick_with_due(settings, console.tenant_id)
    runs = scheduled_runs(console)
    assert [run["provider"] for run in runs] == ["offline", GSC], runs
    assert console.wait(runs[0]["id"])["status"] == "succeeded"
    now = schedules(settings, console.tenant_id)
    assert now["offline"] is not None and now[GSC] is None


def test_its_url_inspections_are_recorded_as_offline_not_google(console: SearchConsole) -> None:
    site, _ = unique_site()
    connect_offline(console, site)
    inspections = Inspections.of(console)
    url = f"{site}guides/mulch"
    answer = inspections.inspect([url])
    assert answer.status_code == 200, answer.text
    runs = console.ok("seo.listSyncRuns", {"kind": "url_inspection"}, role="member")["data"]
    assert [run["provider"] for run in runs] == ["offline"], runs
    assert inspections.wait_run(runs[0]["id"])["status"] == "succeeded"
    done = inspections.inspection(answer.json()["data"][0]["id"])
    assert done["status"] == "completed" and done["verdict"] is not None
    # The offline connection shows the run among its own; Google's has none.
    mine = console.ok("seo.getConnection", {"provider": "offline"}, role="member")
    assert runs[0]["id"] in [run["id"] for run in mine["recent_runs"]]
    googles = console.ok("seo.getConnection", {"provider": GSC}, role="member")
    assert googles["recent_runs"] == []
    by_google = {"kind": "url_inspection", "provider": GSC}
    assert console.ok("seo.listSyncRuns", by_google, role="member")["data"] == []


def test_an_inspection_asked_of_google_is_never_answered_by_offline(
    console: SearchConsole, settings: Settings
) -> None:
    site, _ = unique_site()
    connected = connect_offline(console, site)
    url = f"{site}guides/compost-bins"
    # Asked of Google (its run Google's) before the offline connection was the one in use; its
    # workflow never started, so the reconciler makes it now, with offline in use.
    property_id = uuid.UUID(connected["property"]["id"])
    run_id = plant_pending(settings, console.tenant_id, property_id, url, timedelta(), provider=GSC)
    inspections = Inspections.of(console)
    run = inspections.wait_run(run_id)
    assert (run["provider"], run["status"]) == (GSC, "failed"), run
    [found] = console.ok("seo.listUrlInspections", {"search": "compost-bins"})["data"]
    assert found["status"] == "failed" and found["error"]["code"] == "not_connected"
    assert found["verdict"] is None


def test_the_profile_warns_when_its_site_leaves_the_offline_property(
    console: SearchConsole,
) -> None:
    site, prop = unique_site()
    connect_offline(console, site)
    elsewhere = console.ok(
        "seo.updateSettings", {"siteUrl": "https://another.example.net/"}, role="admin"
    )
    assert len(elsewhere["warnings"]) == 1 and prop in elsewhere["warnings"][0]
    assert console.ok("seo.updateSettings", {"siteUrl": site}, role="admin")["warnings"] == []
