"""An organization that connects SEO providers through the test's transport, the Google
stand-in playing the admin's browser at the consent page, and rows written behind the API."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import date
from typing import Any

import httpx
from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.models import (
    SeoConnection,
    SeoProperty,
    SeoSettings,
    SeoSiteDay,
    SeoSitemap,
    SeoSyncRun,
    SeoUrlInspection,
)
from tests.conftest import SEO_REDIRECT_URI
from tests.support.database import run_on
from tests.support.google import GoogleStandIn
from tests.support.orgs import Org

GSC = "google_search_console"


class Seo(Org):
    default_role = "admin"

    @property
    def site(self) -> str:
        """The organization's own site (each organization its own, on the one stand-in)."""
        return f"https://{self.org.replace('_', '-')}.example.com/"

    def see_properties(self, google: GoogleStandIn, *extra: dict[str, str]) -> None:
        """The grant sees the organization's URL-prefix and domain properties (and `extra`)."""
        mine = {self.site, f"sc-domain:{self.site[8:-1]}"}
        google.sites[:] = [s for s in google.sites if s["siteUrl"] not in mine]
        google.sites += [
            {"siteUrl": self.site, "permissionLevel": "siteOwner"},
            {"siteUrl": f"sc-domain:{self.site[8:-1]}", "permissionLevel": "siteFullUser"},
            *extra,
        ]

    def start(self, *, read_only: bool = False, role: str = "admin") -> httpx.Response:
        body = {"provider": GSC, "redirectUri": SEO_REDIRECT_URI, "readOnly": read_only}
        return self.request("seo.connect", body, role=role)

    def complete(self, code: str, state: str, role: str = "admin") -> httpx.Response:
        body = {"provider": GSC, "code": code, "state": state}
        return self.request("seo.completeConnect", body, role=role)

    def connect_google(self, google: GoogleStandIn, *, read_only: bool = False) -> dict[str, Any]:
        """The whole flow: connect, consent at the stand-in, complete. The connection."""
        # These tests look at the connection, not at the backfill a connect starts: a month of
        # it, not 16, so it stays out of the way of the session's other tests.
        self.ok("seo.updateSettings", {"searchConsole": {"backfillMonths": 1}}, role="admin")
        started = self.start(read_only=read_only)
        assert started.status_code == 200, started.text
        body = started.json()
        response = self.complete(google.authorize(body["authorization_url"]), body["state"])
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found


def on_db(settings: Settings, scenario: Callable[[Database], Awaitable[Any]]) -> Any:
    return run_on(settings, scenario)


def set_site_url(settings: Settings, tenant_id: uuid.UUID, site_url: str) -> None:
    """settings.site_url, written as the root part's updateSettings would."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            found = await session.scalar(
                select(SeoSettings).where(SeoSettings.tenant_id == tenant_id)
            )
            if found is None:
                session.add(
                    SeoSettings(
                        tenant_id=tenant_id,
                        site_url=site_url,
                        brand_terms=[],
                        devices=[],
                        blocks={},
                    )
                )
            else:
                found.site_url = site_url

    run_on(settings, scenario)


def connection_row(settings: Settings, tenant_id: uuid.UUID, provider: str = GSC) -> Any:
    async def scenario(db: Database) -> Any:
        async with db.unit_of_work() as session:
            found = await session.scalar(
                select(SeoConnection).where(
                    SeoConnection.tenant_id == tenant_id, SeoConnection.provider == provider
                )
            )
            if found is not None:
                session.expunge(found)
            return found

    return run_on(settings, scenario)


def seed_data(settings: Settings, tenant_id: uuid.UUID, site_url: str) -> uuid.UUID:
    """A day of site totals, a Search Console sitemap, a robots.txt sitemap, an inspection and
    a queued Search Console run for the property (made when the connection chose none, so no
    first backfill of the sync part writes beside the test's rows): the property's id."""

    async def scenario(db: Database) -> uuid.UUID:
        async with db.unit_of_work() as session:
            prop = await session.scalar(
                select(SeoProperty).where(
                    SeoProperty.tenant_id == tenant_id, SeoProperty.site_url == site_url
                )
            )
            if prop is None:
                prop = SeoProperty(tenant_id=tenant_id, site_url=site_url)
                session.add(prop)
                await session.flush()
            session.add_all(
                [
                    SeoSiteDay(
                        tenant_id=tenant_id,
                        property_id=prop.id,
                        search_type="web",
                        day=date(2026, 1, 1),
                        clicks=3,
                        impressions=30,
                        position_sum=90.0,
                    ),
                    SeoSitemap(
                        tenant_id=tenant_id,
                        property_id=prop.id,
                        url=f"{site_url}sitemap.xml",
                        source="search_console",
                    ),
                    SeoSitemap(
                        tenant_id=tenant_id,
                        property_id=prop.id,
                        url=f"{site_url}robots-sitemap.xml",
                        source="robots_txt",
                    ),
                    SeoUrlInspection(
                        tenant_id=tenant_id,
                        property_id=prop.id,
                        url=f"{site_url}a",
                        status="completed",
                    ),
                    SeoSyncRun(
                        tenant_id=tenant_id,
                        kind="search_console",
                        provider=GSC,
                        status="queued",
                        trigger="manual",
                        run_key=f"search_console:{uuid.uuid4().hex}",
                        property_id=prop.id,
                        created_at=utcnow(),
                    ),
                ]
            )
            return prop.id

    found: uuid.UUID = run_on(settings, scenario)
    return found


def count_rows(settings: Settings, tenant_id: uuid.UUID, table: Any) -> int:
    async def scenario(db: Database) -> int:
        async with db.unit_of_work() as session:
            rows = await session.scalars(select(table).where(table.tenant_id == tenant_id))
            return len(list(rows))

    found: int = run_on(settings, scenario)
    return found
