"""Acceptance: a suspended tenant's scheduled jobs do not run; reactivated (admin.setTenantStatus),
each runs once. Its daily jobs miss three days while suspended: the ticks start nothing of it;
the first tick after the reactivation starts one run per job (the latest occurrence) and records
the missed ones as skipped, and the next tick starts nothing more. Ticks at instants in 2024,
where no other test's job is due."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from contentplatform.flows import scheduler
from tests.admin.support import Operator
from tests.jobs.support import Planner, instances_of, set_next_run, tick
from tests.support.orgs import Org

FIRST = datetime(2024, 1, 8, 9, tzinfo=UTC)
IN_FLIGHT = ("pending", "running")


@pytest.mark.parametrize("call", ["rpc"], indirect=True)  # runs are costly: once is enough
def test_a_suspended_tenants_jobs_wait_and_each_runs_once_when_reactivated(
    operator: Operator, tenant: Org, settings
) -> None:
    planner = Planner.of(tenant)
    jobs = [
        planner.job(jobType="recurring", cronExpression="0 9 * * *", name=f"Daily notes {n}")["id"]
        for n in range(2)
    ]
    try:
        for job in jobs:
            set_next_run(settings, job, FIRST)
        status = {"id": str(tenant.tenant_id), "reason": "Chargeback under review"}
        operator.ok("admin.setTenantStatus", {**status, "status": "suspended"})
        for day in range(4):  # 8, 9, 10 and 11 January pass while suspended
            tick(settings, FIRST + timedelta(days=day, seconds=30))
        assert [instances_of(settings, job) for job in jobs] == [[], []]

        operator.ok("admin.setTenantStatus", {**status, "status": "active"})
        now = FIRST + timedelta(days=3, minutes=1)
        report = tick(settings, now)
        assert report.started == 2 and report.skipped == 6
        for job in jobs:
            found = instances_of(settings, job)
            assert Counter(row["status"] == "skipped" for row in found) == {True: 3, False: 1}
            [ran] = [row for row in found if row["status"] != "skipped"]
            assert ran["scheduled_date"] == FIRST + timedelta(days=3)
        # Coalesced for good: the next tick starts nothing more.
        assert tick(settings, now + timedelta(seconds=30)) == scheduler.TickReport()
    finally:
        for job in jobs:
            for row in instances_of(settings, job):
                if row["run_id"] is not None and row["status"] in IN_FLIGHT:
                    planner.wait_instance(row["id"])
            response = planner.request("jobs.delete", {"id": job})
            assert response.status_code in (200, 404), response.text
