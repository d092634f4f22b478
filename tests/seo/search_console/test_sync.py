"""seo.syncSearchConsole against the Google stand-in, over REST and RPC: a 90-day property
stored exactly (the site's totals, the pages', the query rows and the hidden share between
them) from one request for the window's totals and two per day with data, fresh days replaced
by final ones, quota answers retried or named in a partial run, a revoked grant, the run a
reconciler starts when its workflow never did, and another organization that sees none of
it."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.kit.series import add_months
from contentplatform.seo.models import SeoConnection, SeoProperty
from contentplatform.seo.search_console import durable
from contentplatform.seo.sync_runs import service as sync_runs
from tests.conftest import SEO_REDIRECT_URI
from tests.seo.search_console.sync_support import (
    GSC,
    SearchConsole,
    asked,
    fetches,
    new_site,
    page_days,
    query_days,
    requests_of,
    rows_of,
    seed,
    site_days,
    site_path,
    stored,
    synced_days,
)
from tests.support.database import run_on
from tests.support.google import GoogleStandIn
from tests.support.orgs import org_fixture

pytestmark = [pytest.mark.shared_org, pytest.mark.own_org]

console = org_fixture(SearchConsole)
other = org_fixture(SearchConsole, second=True)


def yesterday() -> datetime:
    return datetime.now(UTC) - timedelta(days=1)


def test_a_90_day_property_is_stored_exactly_and_fresh_days_become_final(
    console: SearchConsole, other: SearchConsole, google: GoogleStandIn, settings: Settings
) -> None:
    last = yesterday().date()
    site = new_site()
    # Seeded before the connect: its backfill (3 months) is the first sync.
    days = seed(google, site, last, 90, fresh=2)
    console.connect(google, site=site, months=3)
    # The window's totals in one request, then per day with data its pages and query rows.
    assert requests_of(google, site) == 1 + 2 * len(days)

    tenant = console.tenant_id
    totals = site_days(settings, tenant)
    for day in days:
        rows = rows_of(day)
        stored_day = totals[day]
        # Exactly the stand-in's totals, the anonymized query included.
        assert stored_day.clicks == sum(r.clicks for r in rows)
        assert stored_day.impressions == sum(r.impressions for r in rows)
        assert stored_day.position_sum == pytest.approx(
            sum(r.position * r.impressions for r in rows)
        )
        # Three requests a day, each once.
        assert fetches(google, site, day) == 3, day
    # The query rows leave out the anonymized query: the hidden share is what it took.
    clicks_by_day: dict[object, int] = defaultdict(int)
    for row in query_days(settings, tenant):
        clicks_by_day[row.day] += row.clicks
    for day in days:
        anonymized = sum(r.clicks for r in rows_of(day) if r.query is None)
        assert totals[day].clicks - clicks_by_day[day] == anonymized > 0
    # Page totals count the anonymized query too: per day they add up to the site's.
    page_clicks: dict[object, int] = defaultdict(int)
    for page_row in page_days(settings, tenant):
        page_clicks[page_row.day] += page_row.clicks
        assert page_row.device in ("desktop", "mobile") and page_row.country in ("usa", "gbr")
    assert all(page_clicks[day] == totals[day].clicks for day in days)
    # The backfill's days before the seeded ones have no data: the window's totals have no row
    # for them (so no page or query can), and they are stored final as zeros, all together.
    first = add_months(datetime.now(UTC).date(), -3)
    empty = [first + timedelta(days=n) for n in range((days[0] - first).days)]
    assert empty
    synced = synced_days(settings, tenant)
    for day in empty:
        assert asked(google, site, day) == (1, 0, 0)
        assert (totals[day].clicks, totals[day].impressions) == (0, 0)
        assert synced[day].rows == 1
    assert len({synced[day].synced_at for day in empty}) == 1
    # The latest two days are fresh; what comes before is final.
    assert [day for day in empty + days if not synced[day].is_final] == days[-2:]
    prop = stored(settings, tenant, SeoProperty)[0]
    assert (prop.final_through, prop.fresh_through) == (days[-3], days[-1])

    # Google finalizes the two fresh days with other figures: the next sync replaces them and
    # fetches no final day again.
    seed(google, site, last, 2, scale=3)
    before = requests_of(google, site)
    run = console.synced()
    assert run["status"] == "succeeded", run
    assert requests_of(google, site) == before + 1 + 2 * 2
    assert run["trigger"] == "manual"
    assert run["params"]["start_date"] == (days[-3] - timedelta(days=3)).isoformat()
    assert run["progress"]["done"] == run["progress"]["total"] == 6
    totals = site_days(settings, tenant)
    for day in days[-2:]:
        assert totals[day].clicks == sum(r.clicks for r in rows_of(day, scale=3))
        assert fetches(google, site, day) == 6
    assert fetches(google, site, days[-3]) == 3
    assert all(row.is_final for row in synced_days(settings, tenant).values())

    # The same window again the same day: the run that synced it, nothing fetched.
    window = {"startDate": run["params"]["start_date"], "endDate": run["params"]["end_date"]}
    again = console.sync(**window)
    assert again["id"] == run["id"]
    # The default window now starts 3 days before the new last final day: all of it final,
    # so its run fetches nothing.
    later = console.synced()
    assert later["id"] != run["id"] and later["status"] == "succeeded", later
    assert later["params"]["start_date"] == (days[-1] - timedelta(days=3)).isoformat()
    assert later["rows_written"] == 0
    assert all(fetches(google, site, day) == 6 for day in days[-2:])
    assert requests_of(google, site) == before + 1 + 2 * 2

    # Another organization sees none of it.
    missing = other.request("seo.getSyncRun", {"id": run["id"]}, role="member")
    assert missing.status_code == 404
    assert missing.json()["code"] == "NOT_FOUND"
    assert other.ok("seo.listSyncRuns", {}, role="member")["total"] == 0
    assert site_days(settings, other.tenant_id) == {}


def test_quota_answers_are_retried_and_days_still_refused_make_the_run_partial(
    console: SearchConsole, google: GoogleStandIn, settings: Settings
) -> None:
    site = console.connect(google, months=1)
    last = yesterday().date() - timedelta(days=60)
    days = seed(google, site, last, 3)
    # Twice a 429 (with Retry-After), then answered: the run succeeds, each day fetched once.
    google.fail_next(site_path(site), 429, "rateLimitExceeded", times=2)
    run = console.synced(startDate=days[0].isoformat(), endDate=days[-1].isoformat())
    assert run["status"] == "succeeded", run
    assert [fetches(google, site, day) for day in days] == [3, 3, 3]
    assert run["rows_written"] == 3 * (1 + 3 + 3)  # per day: the site, 3 pages, 3 query rows

    # The window's totals refused at every attempt (a first try and five retries): each of its
    # days is named, none asked for further.
    refused = seed(google, site, last - timedelta(days=10), 5)
    google.fail_next(site_path(site), 403, "quotaExceeded", times=6)
    window = {"startDate": refused[0].isoformat(), "endDate": refused[-1].isoformat()}
    partial = console.synced(**window)
    assert partial["status"] == "partial", partial
    error = partial["error"]
    assert error["code"] == "quota_exceeded" and error["retryable"] is True
    assert [(item["day"], item["search_type"]) for item in error["items"]] == [
        (day.isoformat(), "web") for day in refused
    ]
    assert "5 days were not synced" in error["message"]
    assert "kept refusing" in error["message"]
    synced = synced_days(settings, console.tenant_id)
    assert not any(day in synced for day in refused)
    assert all(fetches(google, site, day) == 0 for day in refused)

    # Asked again, the window gets a run of its own, which fetches them.
    retried = console.synced(**window)
    assert retried["id"] != partial["id"]
    assert retried["status"] == "succeeded", retried
    assert all(fetches(google, site, day) == 3 for day in refused)

    # The daily quota spent: the totals answered, then every attempt at three days' pages in a
    # row refused, so the two days after them are not asked for either.
    spent = seed(google, site, last - timedelta(days=20), 5)
    google.fail_next(site_path(site), 403, "quotaExceeded", times=3 * 6, dimensions=durable.PAGES)
    window = {"startDate": spent[0].isoformat(), "endDate": spent[-1].isoformat()}
    partial = console.synced(**window)
    assert partial["status"] == "partial", partial
    error = partial["error"]
    assert [(item["day"], item["reason"] == durable.QUOTA_SPENT) for item in error["items"]] == [
        (day.isoformat(), index >= 3) for index, day in enumerate(spent)
    ]
    assert "5 days were not synced: Search Console's quota was spent" in error["message"]
    synced = synced_days(settings, console.tenant_id)
    assert not any(day in synced for day in spent)
    assert [asked(google, site, day) for day in spent] == [(1, 0, 0)] * 5


def test_a_revoked_grant_fails_the_run_and_the_connection_needs_reauth(
    console: SearchConsole, google: GoogleStandIn, settings: Settings
) -> None:
    site = console.connect(google, months=1)
    last = yesterday().date() - timedelta(days=50)
    days = seed(google, site, last, 2)
    google.fail_next(site_path(site), 401, "authError", times=1)
    run = console.synced(startDate=days[0].isoformat(), endDate=days[-1].isoformat())
    assert run["status"] == "failed", run
    assert run["error"]["code"] == "needs_reauth"
    assert "reconnect" in run["error"]["message"]
    connection = console.ok("seo.getConnection", {"provider": "google_search_console"})
    assert connection["status"] == "needs_reauth"
    # Until it is connected again, a sync is refused.
    refused = console.request("seo.syncSearchConsole", {})
    assert refused.status_code == 409, refused.text


def test_a_run_whose_workflow_never_started_is_started_by_the_reconciler(
    console: SearchConsole, google: GoogleStandIn, settings: Settings
) -> None:
    site = console.connect(google, months=1)
    last = yesterday().date() - timedelta(days=80)
    days = seed(google, site, last, 2)
    tenant = console.tenant_id

    async def plant(db: Database) -> str:
        # As a crash between the trigger's commit and its enqueue leaves it: queued, no workflow.
        async with db.unit_of_work() as session:
            connection = (
                await session.execute(
                    select(SeoConnection).where(SeoConnection.tenant_id == tenant)
                )
            ).scalar_one()
            run, _ = await sync_runs.open_run(
                session,
                tenant,
                kind="search_console",
                provider="google_search_console",
                run_key=f"search_console:{connection.property_id}:{days[0]}:{days[-1]}",
                trigger="manual",
                params={
                    "start_date": days[0].isoformat(),
                    "end_date": days[-1].isoformat(),
                    "include": ["search_analytics"],
                    "search_types": ["web"],
                },
                property_id=connection.property_id,
            )
            return str(run.id)

    run_id = run_on(settings, plant)
    run = console.wait(run_id)
    assert run["status"] == "succeeded", run
    assert all(fetches(google, site, day) == 3 for day in days)


def test_a_property_chosen_after_connect_starts_its_backfill(
    console: SearchConsole, google: GoogleStandIn
) -> None:
    site = new_site()
    google.sites.append({"siteUrl": site, "permissionLevel": "siteOwner"})
    # The profile's site matches no property, so connecting chooses none and syncs nothing.
    console.ok(
        "seo.updateSettings",
        {"siteUrl": new_site(), "searchConsole": {"backfillMonths": 1}},
        role="admin",
    )
    started = console.ok(
        "seo.connect", {"provider": GSC, "redirectUri": SEO_REDIRECT_URI}, role="admin"
    )
    code = google.authorize(started["authorization_url"])
    connected = console.ok(
        "seo.completeConnect",
        {"provider": GSC, "code": code, "state": started["state"]},
        role="admin",
    )
    assert connected["property"] is None, connected
    before = {run["id"] for run in console.ok("seo.listSyncRuns", {"limit": 100})["data"]}

    console.ok("seo.updateConnection", {"provider": GSC, "property": site}, role="admin")
    runs = [
        run
        for run in console.ok("seo.listSyncRuns", {"limit": 100})["data"]
        if run["id"] not in before
    ]
    assert [(run["kind"], run["trigger"]) for run in runs] == [("search_console", "connect")]
    assert console.wait(runs[0]["id"])["status"] == "succeeded"
    # Choosing the same property again starts nothing more.
    console.ok("seo.updateConnection", {"provider": GSC, "property": site}, role="admin")
    again = console.ok("seo.listSyncRuns", {"limit": 100})["data"]
    assert len(again) == len(before) + 1
