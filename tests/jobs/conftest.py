"""An organization planning jobs, and a second one, through the test's transport; and the
scheduler's tick kept to what the test itself made."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import update

from contentplatform.config import Settings
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs.models import Job
from contentplatform.kit.db import Database
from tests.jobs.support import Planner
from tests.support.database import run_on
from tests.support.orgs import org_fixture

planner = org_fixture(Planner)
other = org_fixture(Planner, second=True)  # a second organization, through the same transport


@pytest.fixture
def nothing_else_due(settings: Settings) -> Iterator[None]:
    """Every job and hand-planned instance that earlier tests left in the worker's database is
    taken off the schedule before the test ticks. A tick at an instant in 2027 would otherwise
    start every recurring job earlier modules made (hundreds of generation runs: a scheduler test
    then waited minutes behind them, and the worker spent its CPU writing them)."""

    async def park(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(Job).where(Job.next_run_at.is_not(None)).values(next_run_at=None)
            )
            await session.execute(
                update(JobInstance)
                .where(JobInstance.status == "pending", JobInstance.run_id.is_(None))
                .values(status="skipped", error="parked by the test suite")
            )

    run_on(settings, park)
    yield
