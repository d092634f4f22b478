"""A 16-month Search Console backfill survives `kill -9` of the service mid-way, on a real
`contentplatform serve` process (tests.support.processes) pointed at a Google stand-in of the
test's own: restarted, its run resumes, no day it stored is asked for again, no day's totals are
asked twice, no day's pages or query rows are fetched twice but the day in flight (counted at
the stand-in, per fact), and the stored totals are the stand-in's."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from contentplatform.kit.series import add_months
from contentplatform.seo.models import SeoSiteDay, SeoSyncedDay
from tests.seo.search_console.sync_support import GSC, asked, new_site, rows_of
from tests.support.google import GoogleStandIn
from tests.support.processes import ServiceClient, Services, Stack, wait_for

REDIRECT_URI = "https://app.example.test/seo/callback"
ENDED = ("succeeded", "partial", "failed")


def _settings(google: GoogleStandIn) -> dict[str, str]:
    values = {
        "outbound_allow_http": "true",
        "outbound_allow_loopback": "true",
        "seo_oauth_redirect_uris": json.dumps([REDIRECT_URI]),
        "seo_sync_backoff_seconds": "0.01",
        "seo_sync_max_wait_seconds": "0.05",
    }
    values.update({key: str(value) for key, value in google.settings().items()})
    return values


def _connect(client: ServiceClient, google: GoogleStandIn, site: str) -> dict[str, Any]:
    """Search Console connected as an admin does it: the connect's backfill run."""
    client.request("PATCH", "/v1/seo/settings", json={"siteUrl": site})
    started = client.request(
        "POST", f"/v1/seo/connections/{GSC}", json={"redirectUri": REDIRECT_URI}
    )
    code = google.authorize(started["authorization_url"])
    client.request(
        "POST",
        f"/v1/seo/connections/{GSC}/callback",
        json={"code": code, "state": started["state"]},
    )
    runs = client.request("GET", "/v1/seo/sync-runs?kind=search_console")["data"]
    assert [run["trigger"] for run in runs] == ["connect"], runs
    return runs[0]  # type: ignore[no-any-return]


def test_a_backfill_killed_mid_way_resumes_without_fetching_a_stored_day_again(
    services: Services, stack: Stack
) -> None:
    with GoogleStandIn() as google:
        service = services.start(**_settings(google))
        client = ServiceClient.of_new_org(services, service, "seo", role="admin")
        site = new_site()
        google.sites.append({"siteUrl": site, "permissionLevel": "siteOwner"})
        # 16 months of small days, the latest two still fresh.
        today = datetime.now(UTC).date()
        first, last = add_months(today, -16), today - timedelta(days=1)
        days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
        for day in days:
            google.set_day(site, "web", day, rows_of(day), final=day < last - timedelta(days=1))
        run = _connect(client, google, site)
        assert run["params"]["start_date"] == first.isoformat()

        def done() -> int:
            found = client.request("GET", f"/v1/seo/sync-runs/{run['id']}")
            assert found["status"] not in ENDED, "the backfill ended before the kill"
            return int(found["progress"]["done"])

        wait_for("a first part of the backfill to be stored", lambda: done() >= 60, service)
        service.kill()
        before = {day for (day,) in stack.rows(select(SeoSyncedDay.day))}
        assert 60 <= len(before) < len(days), len(before)
        # The window's totals asked once, then each stored day's pages and query rows.
        assert all(asked(google, site, day) == (1, 1, 1) for day in before)

        service = services.start(**_settings(google))
        client = ServiceClient(service, client.headers["Authorization"][7:], client.org)
        ended = wait_for(
            "the backfill to end",
            lambda: (
                (found := client.request("GET", f"/v1/seo/sync-runs/{run['id']}"))["status"]
                in ENDED
                and found
            ),
            service,
            timeout=180,
        )
        assert ended["status"] == "succeeded", ended
        assert ended["progress"]["done"] == ended["progress"]["total"] == len(days)

        # No stored day asked for again, no day's totals asked twice (the resumed run takes
        # the window's totals from its checkpoint), and every day's pages and query rows are
        # fetched once but the day in flight at the kill's, at most twice.
        counts = {day: asked(google, site, day) for day in days}
        assert all(counts[day] == (1, 1, 1) for day in before)
        assert all(counts[day][0] == 1 for day in days), [
            day for day in days if counts[day][0] != 1
        ]
        again = [day for day in days if counts[day][1:] != (1, 1)]
        assert len(again) <= 1 and all(max(counts[day]) <= 2 for day in again), again
        # Every day stored once, with the stand-in's totals.
        totals = {
            row.day: row
            for row in stack.rows(select(SeoSiteDay.day, SeoSiteDay.clicks, SeoSiteDay.impressions))
        }
        assert sorted(totals) == days
        for day in days:
            assert totals[day].clicks == sum(r.clicks for r in rows_of(day))
            assert totals[day].impressions == sum(r.impressions for r in rows_of(day))
        finals = {
            day: final for day, final in stack.rows(select(SeoSyncedDay.day, SeoSyncedDay.is_final))
        }
        assert [day for day in days if not finals[day]] == days[-2:]
