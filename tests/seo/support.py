"""SEO through one organization (`Seo`), and what the tests of several parts plant straight in
the database: a sync run opened as the parts open theirs (`plant_run`), a Search Console
property selected on the tenant's connection (`select_property`)."""

from __future__ import annotations

import uuid
from typing import Any

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.seo.models import SeoConnection, SeoProperty
from contentplatform.seo.sync_runs import service as sync_runs
from tests.support.database import run_on
from tests.support.orgs import Org

SEARCH_CONSOLE = "google_search_console"


class Seo(Org):
    default_role = "admin"

    def settings(self, role: str = "member") -> dict[str, Any]:
        return self.ok("seo.getSettings", {}, role=role)

    def update(self, role: str = "admin", **fields: Any) -> dict[str, Any]:
        return self.ok("seo.updateSettings", fields, role=role)

    def add_competitor(self, role: str = "editor", **fields: Any) -> dict[str, Any]:
        return self.ok("seo.createCompetitor", fields, role=role)

    def competitors(self) -> dict[str, Any]:
        return self.ok("seo.listCompetitors", {}, role="member")


def plant_run(
    settings: Settings,
    tenant_id: uuid.UUID,
    *,
    kind: str = "search_console",
    provider: str = SEARCH_CONSOLE,
    run_key: str | None = None,
    trigger: str = "manual",
    params: dict[str, Any] | None = None,
    status: str = "queued",
    error: dict[str, Any] | None = None,
) -> str:
    """A sync run opened with `open_run` (and taken to `status`: running, or an ending through
    `finish`), in a unit of work of its own: its id."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            run, _ = await sync_runs.open_run(
                session,
                tenant_id,
                kind=kind,
                provider=provider,
                run_key=run_key or f"{kind}:{uuid.uuid4().hex}",
                trigger=trigger,
                params=params or {},
            )
            if status != "queued":
                await sync_runs.mark_running(session, tenant_id, run.id)
            if status not in ("queued", "running"):
                await sync_runs.finish(session, tenant_id, run.id, status=status, error=error)
            return str(run.id)

    return str(run_on(settings, scenario))


def select_property(settings: Settings, tenant_id: uuid.UUID, site_url: str) -> None:
    """A Search Console property `site_url`, selected on the tenant's connection (made
    connected, when the tenant has none yet)."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            prop = SeoProperty(tenant_id=tenant_id, site_url=site_url, permission_level="siteOwner")
            session.add(prop)
            await session.flush()
            session.add(
                SeoConnection(
                    tenant_id=tenant_id,
                    provider=SEARCH_CONSOLE,
                    status="connected",
                    property_id=prop.id,
                )
            )

    run_on(settings, scenario)
