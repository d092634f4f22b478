"""Search Console data planted straight in the database through `repository.replace_day` (what
the sync calls), and the tenant's connection pointed at the property, so reads can be tested
without Google."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.seo.models import SeoConnection, SeoProperty, SeoSettings
from contentplatform.seo.search_console.repository import (
    Figures,
    PageRow,
    QueryRow,
    replace_day,
)
from tests.support.database import run_on

PROVIDER = "google_search_console"


@dataclass
class Day:
    """One day's facts: the site totals and its page and query rows."""

    day: date
    site: Figures
    pages: list[PageRow] = field(default_factory=list)
    queries: list[QueryRow] = field(default_factory=list)
    is_final: bool = True
    search_type: str = "web"


def days(start: date, count: int) -> list[date]:
    return [start + timedelta(days=offset) for offset in range(count)]


def make_property(
    settings: Settings,
    tenant_id: uuid.UUID,
    site_url: str = "https://example.com/",
    *,
    select: bool = True,
    brand_terms: Iterable[str] = (),
) -> uuid.UUID:
    """A property of the tenant, selected on its Search Console connection when `select`;
    the tenant's brand terms set when given. Its id."""

    async def scenario(db: Database) -> uuid.UUID:
        async with db.unit_of_work() as session:
            prop = SeoProperty(tenant_id=tenant_id, site_url=site_url, permission_level="siteOwner")
            session.add(prop)
            await session.flush()
            if select:
                session.add(
                    SeoConnection(
                        tenant_id=tenant_id,
                        provider=PROVIDER,
                        status="connected",
                        scopes=[],
                        config={},
                        available_properties=[{"siteUrl": site_url}],
                        property_id=prop.id,
                    )
                )
            terms = list(brand_terms)
            if terms:
                session.add(SeoSettings(tenant_id=tenant_id, brand_terms=terms))
            return prop.id

    result: uuid.UUID = run_on(settings, scenario)
    return result


def plant(
    settings: Settings, tenant_id: uuid.UUID, property_id: uuid.UUID, planted: Iterable[Day]
) -> int:
    """Store the days as a sync would; rows written."""
    planted = list(planted)

    async def scenario(db: Database) -> int:
        written = 0
        async with db.unit_of_work() as session:
            for one in planted:
                written += await replace_day(
                    session,
                    tenant_id,
                    property_id,
                    one.search_type,
                    one.day,
                    site=one.site,
                    pages=one.pages,
                    queries=one.queries,
                    is_final=one.is_final,
                    run_id=None,
                )
        return written

    result: int = run_on(settings, scenario)
    return result


def q(
    query: str, page: str, clicks: int, impressions: int, position: float, **more: Any
) -> QueryRow:
    return QueryRow(
        clicks=clicks,
        impressions=impressions,
        position=position,
        query=query,
        page=page,
        country=more.get("country", "usa"),
        device=more.get("device", "DESKTOP"),
    )


def p(page: str, clicks: int, impressions: int, position: float, **more: Any) -> PageRow:
    return PageRow(
        clicks=clicks,
        impressions=impressions,
        position=position,
        page=page,
        country=more.get("country", "usa"),
        device=more.get("device", "DESKTOP"),
    )
