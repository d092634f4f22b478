"""An organization planning jobs, and a second one, through the test's transport."""

from __future__ import annotations

from tests.jobs.support import Planner
from tests.support.orgs import org_fixture

planner = org_fixture(Planner)
other = org_fixture(Planner, second=True)  # a second organization, through the same transport
