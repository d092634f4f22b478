"""Sitemaps and URL inspections through one organization (`Inspections`): Search Console
connected over the OAuth round trip against the Google stand-in, with a property of the test's
own; and rows planted straight in the database (robots.txt sitemaps, a day's quota used)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, select

from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.inspections import durable
from contentplatform.seo.inspections.service import quota_day
from contentplatform.seo.models import SeoConnection, SeoSitemap, SeoUrlInspection
from contentplatform.seo.sync_runs import service as sync_runs
from tests.conftest import SEO_REDIRECT_URI
from tests.support.database import run_on
from tests.support.google import GoogleStandIn
from tests.support.orgs import Org
from tests.support.waits import until_workflow_ends

SEARCH_CONSOLE = "google_search_console"
INSPECT_PATH = "/v1/urlInspection/index:inspect"


def new_site() -> str:
    """A host of the test's own, so the stand-in's sites (shared by the process) never mix."""
    return f"s{uuid.uuid4().hex[:10]}.example.com"


class Inspections(Org):
    default_role = "admin"

    def connect(
        self,
        google: GoogleStandIn,
        site_url: str,
        *,
        permission: str = "siteOwner",
        read_only: bool = False,
    ) -> None:
        """Search Console connected (OAuth with PKCE against the stand-in, as an admin's
        browser would) and `site_url` selected."""
        with google.lock:
            google.sites.append({"siteUrl": site_url, "permissionLevel": permission})
        started = self.ok(
            "seo.connect",
            {"provider": SEARCH_CONSOLE, "redirectUri": SEO_REDIRECT_URI, "readOnly": read_only},
        )
        code = google.authorize(started["authorization_url"])
        self.ok(
            "seo.completeConnect",
            {"provider": SEARCH_CONSOLE, "code": code, "state": started["state"]},
        )
        # Syncing paused: choosing a property would otherwise start its 16-month backfill, work
        # these tests never look at, queued ahead of the sync tests' own.
        self.ok(
            "seo.updateConnection",
            {"provider": SEARCH_CONSOLE, "property": site_url, "syncEnabled": False},
        )

    def inspect(self, urls: list[str], role: str = "editor", **more: Any) -> Any:
        return self.request("seo.inspectUrls", {"urls": urls, **more}, role=role)

    def inspection(self, inspection_id: str, role: str = "member") -> dict[str, Any]:
        return self.ok("seo.getUrlInspection", {"id": inspection_id}, role=role)

    def wait_run(self, run_id: str, timeout: float = 30) -> dict[str, Any]:
        """The inspections' sync run once it ended."""

        def ended() -> dict[str, Any] | None:
            run = self.ok("seo.getSyncRun", {"id": run_id}, role="member")
            return run if run["status"] not in ("queued", "running") else None

        return until_workflow_ends(
            durable.workflow_id(uuid.UUID(run_id)), ended, timeout=timeout, what="inspections"
        )


def inspections_sent(google: GoogleStandIn) -> int:
    with google.lock:
        return sum(1 for method, path in google.requests if path == INSPECT_PATH)


def run_of(settings: Settings, tenant_id: uuid.UUID, inspection_id: str) -> str:
    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            row = await session.get(SeoUrlInspection, uuid.UUID(inspection_id))
            assert row is not None and row.tenant_id == tenant_id
            return str(row.run_id)

    return str(run_on(settings, scenario))


def selected_property(settings: Settings, tenant_id: uuid.UUID) -> uuid.UUID:
    async def scenario(db: Database) -> uuid.UUID:
        async with db.unit_of_work() as session:
            statement = select(SeoConnection.property_id).where(
                SeoConnection.tenant_id == tenant_id, SeoConnection.provider == SEARCH_CONSOLE
            )
            found = (await session.execute(statement)).scalar_one()
            assert found is not None
            return found

    result: uuid.UUID = run_on(settings, scenario)
    return result


def plant_sitemap(
    settings: Settings,
    tenant_id: uuid.UUID,
    url: str,
    *,
    source: str = "robots_txt",
    property_id: uuid.UUID | None = None,
) -> str:
    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            row = SeoSitemap(
                tenant_id=tenant_id,
                property_id=property_id,
                url=url,
                source=source,
                contents=[],
                synced_at=utcnow(),
            )
            session.add(row)
            await session.flush()
            return str(row.id)

    return str(run_on(settings, scenario))


def plant_inspections(
    settings: Settings,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    count: int,
    *,
    at: datetime | None = None,
    url: str = "https://planted.example.com/",
    **values: Any,
) -> list[str]:
    """`count` inspections made at `at` (now), all at once."""
    when = at or utcnow()
    rows = [
        {
            "id": uuid.uuid4(),
            "tenant_id": tenant_id,
            "property_id": property_id,
            "url": f"{url}{index}" if count > 1 else url,
            "status": "completed",
            "sitemaps": [],
            "referring_urls": [],
            "created_at": when,
            "updated_at": when,
            "completed_at": when,
            **values,
        }
        for index in range(count)
    ]

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(insert(SeoUrlInspection), rows)

    run_on(settings, scenario)
    return [str(row["id"]) for row in rows]


def seconds_to_pacific_midnight() -> float:
    now = utcnow()
    return (quota_day(now)[1] - now).total_seconds()


def plant_pending(
    settings: Settings,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    url: str,
    age: timedelta,
    *,
    provider: str = SEARCH_CONSOLE,
) -> str:
    """A run of `provider` and its pending inspection, stored as inspectUrls stores them but
    with no workflow enqueued (a crash between the commit and the enqueue): the run's id."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            run, _ = await sync_runs.open_run(
                session,
                tenant_id,
                kind="url_inspection",
                provider=provider,
                run_key=f"url_inspection:{uuid.uuid4()}",
                trigger="manual",
                params={},
                property_id=property_id,
            )
            at = utcnow() - age
            session.add(
                SeoUrlInspection(
                    tenant_id=tenant_id,
                    property_id=property_id,
                    run_id=run.id,
                    url=url,
                    status="pending",
                    sitemaps=[],
                    referring_urls=[],
                    created_at=at,
                    updated_at=at,
                )
            )
            return str(run.id)

    return str(run_on(settings, scenario))
