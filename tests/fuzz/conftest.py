"""The fuzz pass's world: the network stood in for, and one organization seeded through the
suite's server (tests/fuzz/support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fuzz.support import Seeded, Seeder
from tests.support.network import StandInNetwork, no_outside_connections, stand_in_network
from tests.support.orgs import new_org


@pytest.fixture(scope="module")
def network() -> Iterator[StandInNetwork]:
    """No request of the service leaves this process: URLs a fuzzer wrote are answered by a
    stand-in (200), and anything that would still leave loopback fails the pass."""
    with no_outside_connections(), stand_in_network(status=200) as stood_in:
        yield stood_in


@pytest.fixture(scope="module")
def seeded(network: StandInNetwork, client: httpx.Client, token: Any) -> Seeded:
    org = new_org()
    admin = token(org, f"admin-{org}", "admin")
    seeded = Seeded(
        org=org, tenant_id="", headers={"Authorization": f"Bearer {admin}", "x-idp-org-id": org}
    )
    seeder = Seeder(client, seeded)
    seeded.tenant_id = seeder.ok("GET", "/v1/system/whoami")["tenant_id"]
    seeder.seed()
    return seeded
