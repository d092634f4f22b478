"""An organization planning jobs, and a second one, through the test's transport."""

from __future__ import annotations

import pytest

from tests.documents.support import new_org
from tests.jobs.support import Planner


@pytest.fixture
def planner(call, client, token, org) -> Planner:
    return Planner(call, client, token, org)


@pytest.fixture
def other(call, client, token) -> Planner:
    """A second organization, through the same transport."""
    return Planner(call, client, token, new_org())
