"""Search Console connected through the real OAuth round trip against the Google stand-in, its
days seeded there, and sync runs waited for by their workflow: what the sync's tests share."""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from typing import Any
from urllib.parse import quote

from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.seo.models import SeoPageDay, SeoQueryDay, SeoSiteDay, SeoSyncedDay
from contentplatform.seo.search_console import durable
from tests.conftest import SEO_REDIRECT_URI
from tests.support.database import select_all
from tests.support.google import GoogleStandIn, SearchRow
from tests.support.orgs import Org
from tests.support.waits import until_workflow_ends

GSC = "google_search_console"
ENDED = ("succeeded", "partial", "failed")


class SearchConsole(Org):
    default_role = "editor"

    def connect(self, google: GoogleStandIn, *, site: str | None = None, months: int = 1) -> str:
        """Search Console connected with a property of its own (`site`, else a new one),
        matched by the settings' siteUrl, the backfill `months` long; the property's site URL.
        The connect's backfill is waited for."""
        site = site or new_site()
        google.sites.append({"siteUrl": site, "permissionLevel": "siteOwner"})
        self.ok(
            "seo.updateSettings",
            {"siteUrl": site, "searchConsole": {"backfillMonths": months}},
            role="admin",
        )
        started = self.ok(
            "seo.connect", {"provider": GSC, "redirectUri": SEO_REDIRECT_URI}, role="admin"
        )
        code = google.authorize(started["authorization_url"])
        connected = self.ok(
            "seo.completeConnect",
            {"provider": GSC, "code": code, "state": started["state"]},
            role="admin",
        )
        assert connected["status"] == "connected", connected
        runs = self.ok("seo.listSyncRuns", {"kind": "search_console"}, role="member")["data"]
        assert [run["trigger"] for run in runs] == ["connect"], runs
        backfill = self.wait(runs[0]["id"])
        assert backfill["status"] == "succeeded", backfill
        return site

    def sync(self, role: str = "editor", **fields: Any) -> dict[str, Any]:
        found: dict[str, Any] = self.ok("seo.syncSearchConsole", fields, role=role)
        return found

    def run(self, run_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.ok("seo.getSyncRun", {"id": run_id}, role="member")
        return found

    def wait(self, run_id: str, timeout: float = 90.0) -> dict[str, Any]:
        """The run once it has ended."""

        def ended() -> dict[str, Any] | None:
            found = self.run(run_id)
            return found if found["status"] in ENDED else None

        return until_workflow_ends(
            f"seo.sync:{run_id}", ended, timeout=timeout, what=f"sync run {run_id}"
        )

    def synced(self, **fields: Any) -> dict[str, Any]:
        """A sync of the window asked for, once it has ended."""
        return self.wait(self.sync(**fields)["id"])


def new_site() -> str:
    return f"https://s{uuid.uuid4().hex[:12]}.example.com/"


def rows_of(day: date, *, scale: int = 1) -> list[SearchRow]:
    """A day's rows: three queries over two pages and devices, and an anonymized query (counted
    in the totals, never returned as a query row). `scale` changes every figure."""
    n = day.toordinal() % 7 + 1
    return [
        SearchRow(
            "garden soil", "https://x.test/soil", "usa", "DESKTOP", 3 * n * scale, 40 * n, 2.5
        ),
        SearchRow("garden soil", "https://x.test/soil", "gbr", "MOBILE", n * scale, 25 * n, 4.0),
        SearchRow("compost bins", "https://x.test/bins", "usa", "MOBILE", 2 * scale, 30 + n, 7.25),
        SearchRow(None, "https://x.test/soil", "usa", "DESKTOP", 5 * scale, 60 + n, 9.0),
    ]


def seed(
    google: GoogleStandIn,
    site: str,
    last: date,
    days: int,
    *,
    fresh: int = 0,
    scale: int = 1,
    search_type: str = "web",
) -> list[date]:
    """`days` days through `last` seeded for the site, the latest `fresh` of them not final:
    the days, oldest first."""
    seeded = [last - timedelta(days=n) for n in reversed(range(days))]
    for index, day in enumerate(seeded):
        final = index < days - fresh
        google.set_day(site, search_type, day, rows_of(day, scale=scale), final=final)
    return seeded


def fetches(google: GoogleStandIn, site: str, day: date, search_type: str = "web") -> int:
    """searchAnalytics.query requests that covered the day (dataState all), at the stand-in:
    a window's totals count for each of its days."""
    return google.fetched[(site, search_type, day, "all")]


def asked(
    google: GoogleStandIn, site: str, day: date, search_type: str = "web"
) -> tuple[int, int, int]:
    """Requests that covered the day, per fact the sync asks for: (the site's totals, the
    pages', the query rows)."""
    return (
        google.fetched_by[(site, search_type, day, tuple(durable.SITE))],
        google.fetched_by[(site, search_type, day, tuple(durable.PAGES))],
        google.fetched_by[(site, search_type, day, tuple(durable.QUERIES))],
    )


def requests_of(google: GoogleStandIn, site: str) -> int:
    """The property's searchAnalytics.query requests the stand-in answered or refused."""
    return sum(1 for method, path in google.requests if path.endswith(site_path(site)))


def site_path(site: str) -> str:
    """What `fail_next` matches to fail only this property's searchAnalytics requests."""
    return f"{quote(site, safe='')}/searchAnalytics/query"


def stored(settings: Settings, tenant_id: uuid.UUID, model: Any) -> list[Any]:
    return select_all(settings, select(model).where(model.tenant_id == tenant_id))


def site_days(settings: Settings, tenant_id: uuid.UUID) -> dict[date, SeoSiteDay]:
    return {row.day: row for row in stored(settings, tenant_id, SeoSiteDay)}


def synced_days(settings: Settings, tenant_id: uuid.UUID) -> dict[date, SeoSyncedDay]:
    return {row.day: row for row in stored(settings, tenant_id, SeoSyncedDay)}


def query_days(settings: Settings, tenant_id: uuid.UUID) -> list[SeoQueryDay]:
    return stored(settings, tenant_id, SeoQueryDay)


def page_days(settings: Settings, tenant_id: uuid.UUID) -> list[SeoPageDay]:
    return stored(settings, tenant_id, SeoPageDay)
