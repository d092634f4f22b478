"""Audits through one organization (`Auditor`): a snapshot planted as a crawl leaves it
(tests/website_scan/seed.py), an audit asked for and waited for by its workflow, and its
issues and URLs read back."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from contentplatform.kit.db import Database
from contentplatform.seo.audits import durable
from contentplatform.website_scan.crawling.pages import PageRecord
from contentplatform.website_scan.models import CrawlSnapshot
from tests.conftest import Run
from tests.support.orgs import Org
from tests.support.waits import until_workflow_ends
from tests.website_scan.seed import seed_snapshot
from tests.website_scan.support import site_url

ENDED = ("completed", "failed")


class Auditor(Org):
    default_role = "editor"

    def config(self, start_url: str | None = None) -> str:
        config = self.ok(
            "websiteScan.createConfig",
            {"name": "Shop", "startUrl": start_url or site_url()},
            role="editor",
        )
        return str(config["id"])

    def plant(
        self,
        run: Run,
        pages: list[PageRecord],
        *,
        config_id: str | None = None,
        start_url: str | None = None,
        site_files: dict[str, Any] | None = None,
        partial: bool = False,
        created_at: datetime | None = None,
    ) -> tuple[str, str]:
        """(config id, snapshot id) of a finished scan holding `pages`; `site_files` sets the
        snapshot's robots_txt, llms_txt and sitemaps."""
        config = config_id or self.config(start_url)

        async def scenario(db: Database) -> str:
            seeded = await seed_snapshot(
                db,
                self.tenant_id,
                uuid.UUID(config),
                pages,
                partial=partial,
                created_at=created_at,
            )
            if site_files:
                async with db.unit_of_work() as session:
                    snapshot = await session.get(CrawlSnapshot, seeded.snapshot_id)
                    assert snapshot is not None
                    for name, value in site_files.items():
                        setattr(snapshot, name, value)
            return str(seeded.snapshot_id)

        return config, run(scenario)

    def audit(self, snapshot_id: str | None = None, **fields: Any) -> dict[str, Any]:
        """seo.createAudit, then the audit once it ended."""
        data: dict[str, Any] = dict(fields)
        if snapshot_id is not None:
            data["snapshotId"] = snapshot_id
        started = self.ok("seo.createAudit", data)
        return self.wait(started["id"])

    def wait(self, audit_id: str, timeout: float = 60) -> dict[str, Any]:
        def ended() -> dict[str, Any] | None:
            found = self.ok("seo.getAudit", {"id": audit_id}, role="member")
            return found if found["status"] in ENDED else None

        return until_workflow_ends(
            durable.workflow_id(uuid.UUID(audit_id)), ended, timeout=timeout, what="audit"
        )

    def issues(self, audit_id: str, **query: Any) -> dict[str, Any]:
        return self.ok("seo.listAuditIssues", {"id": audit_id, **query}, role="member")

    def urls(self, audit_id: str, check_id: str, **query: Any) -> dict[str, Any]:
        return self.ok(
            "seo.listAuditIssueUrls",
            {"id": audit_id, "checkId": check_id, "limit": 500, **query},
            role="member",
        )

    def found(self, audit_id: str) -> dict[str, set[str]]:
        """Every failing check's URLs (change new or persisting)."""
        issues = self.issues(audit_id, limit=100)
        assert issues["total"] <= 100
        return {
            issue["check_id"]: {
                row["url"]
                for row in self.urls(audit_id, issue["check_id"])["data"]
                if row["change"] != "fixed"
            }
            for issue in issues["data"]
            if issue["change"] != "fixed"
        }
