"""An organization whose members are all active, and a second one, through the test's
transport."""

from __future__ import annotations

from tests.notifications.support import Members
from tests.support.orgs import org_fixture

members = org_fixture(Members)
others = org_fixture(Members, second=True)  # a second organization, through the same transport
