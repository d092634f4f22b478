"""Every strategy test runs behind the socket guard: its strategy may reach the stand-in targets
on loopback (tests/support/targets) and nothing else."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.network import NetworkGuard, no_outside_connections


@pytest.fixture(autouse=True)
def network() -> Iterator[NetworkGuard]:
    with no_outside_connections() as guard:
        yield guard
