"""Audits as durable work: an audit left `running` by a process killed mid-audit (its workflow
gone with it, nothing stored) is run again to completion by the reconciler, as is one queued
whose workflow never started; one running past STALL_SECONDS is failed visibly. None stays
`running`."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.audits import checks, durable
from contentplatform.seo.models import SeoAuditRun
from tests.conftest import Run
from tests.seo.audits.support import Auditor
from tests.seo.audits.test_audits import site_pages
from tests.support.orgs import org_fixture
from tests.website_scan.support import site_url

pytestmark = pytest.mark.shared_org

auditor = org_fixture(Auditor)


def plant_audit(auditor: Auditor, run: Run, status: str, age: timedelta) -> str:
    """An audit row of a fresh snapshot, as a dead process left it: no workflow ever ran."""
    root = site_url().rstrip("/")
    config, snapshot = auditor.plant(run, site_pages(root), start_url=f"{root}/")
    config_values = checks.effective({})

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            created = utcnow() - age
            row = SeoAuditRun(
                tenant_id=auditor.tenant_id,
                config_id=uuid.UUID(config),
                snapshot_id=uuid.UUID(snapshot),
                status=status,
                trigger="manual",
                checks_version=checks.version(config_values),
                checks=config_values,
                created_at=created,
                started_at=created if status == "running" else None,
            )
            session.add(row)
            await session.flush()
            return str(row.id)

    return str(run(scenario))


@pytest.mark.parametrize("status", ["queued", "running"])
def test_an_audit_whose_workflow_is_gone_is_run_again_by_the_reconciler(
    auditor: Auditor, run: Run, status: str
) -> None:
    audit_id = plant_audit(auditor, run, status, timedelta())
    done = auditor.wait(audit_id, timeout=30)
    assert done["status"] == "completed", done
    assert done["pages_analyzed"] == 4 and done["health_score"] == 50.0
    assert auditor.issues(audit_id, search="title_missing")["total"] == 1


def test_an_audit_running_too_long_fails_visibly(auditor: Auditor, run: Run) -> None:
    age = timedelta(seconds=durable.STALL_SECONDS + 60)
    audit_id = plant_audit(auditor, run, "running", age)
    done = auditor.wait(audit_id, timeout=30)
    assert done["status"] == "failed", done
    assert "stopped" in done["error"] and done["finished_at"] is not None
