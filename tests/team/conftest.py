"""A service process of its own for the team tests (`contentplatform serve` on backends of its
own, tests/support/processes.py), with the Clerk stand-in as its identity provider's Backend API
and a webhook signing secret. `call`, `tenant` and `other_tenant` reach it over its socket (the
suite's fixtures of those names, over this service).

A process rather than a second app in the suite's process: the identity events are applied by
DBOS workflows, and DBOS (one per process) belongs to the suite's own service there.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from contentplatform.auth import devkeys
from contentplatform.auth.context import Role
from tests.support.backends import clear_redis
from tests.support.clerk import SECRET_KEY, Clerk, new_webhook_secret
from tests.support.orgs import Org
from tests.support.processes import Service, Services, Stack, _databases
from tests.support.servers import DOCUMENT_TIMEOUT


@pytest.fixture(scope="package")
def clerk() -> Iterator[Clerk]:
    with Clerk() as standin:
        yield standin


@pytest.fixture(scope="package")
def webhook_secret() -> str:
    return new_webhook_secret()


@pytest.fixture(scope="package")
def team_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    redis_url = os.environ.get("CONTENTPLATFORM_TEST_REDIS_URL")
    run = uuid.uuid4().hex[:10]
    prefix = f"cptest:team:{run}:"
    tmp_path: Path = tmp_path_factory.mktemp("team")
    with _databases(tmp_path, run) as (database_url, dbos_database_url):
        found = Stack(tmp_path, database_url, dbos_database_url, redis_url, prefix)
        try:
            yield found
        finally:
            found.engine.dispose()
            clear_redis(redis_url, prefix)


@pytest.fixture(scope="package")
def team_service(team_stack: Stack, clerk: Clerk, webhook_secret: str) -> Iterator[Service]:
    services = Services(team_stack)
    try:
        yield services.start(
            idp_api_url=clerk.url,
            idp_secret_key=SECRET_KEY,
            idp_webhook_secret=webhook_secret,
            # High, so only an invalidation can make a change show at once.
            access_cache_seconds="3600",
            reconcile_interval_seconds="1",
        )
    finally:
        services.close()


@pytest.fixture(scope="package")
def client(team_service: Service) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=team_service.url, timeout=30) as http:
        yield http


@pytest.fixture(scope="package")
def in_process_client(client: httpx.Client) -> httpx.Client:
    return client


@pytest.fixture(scope="package")
def openapi_document(client: httpx.Client) -> dict[str, Any]:
    return client.get("/openapi.json", timeout=DOCUMENT_TIMEOUT).json()


@pytest.fixture(scope="package")
def token(team_stack: Stack, team_service: Service) -> Callable[..., str]:
    """Tokens of the team service's development key."""

    def mint(org: str | None = None, user: str | None = None, role: str = "member") -> str:
        subject = user or f"user_{uuid.uuid4().hex[:8]}"
        return devkeys.mint_token(team_stack.data_dir, org=org, user=subject, role=Role(role))

    return mint


class Team(Org):
    """An organization whose admin, editor and member the Clerk stand-in knows too."""

    clerk: Clerk

    def user_id(self, role: str) -> str:
        """Our user id of the role's user (provisioned just in time)."""
        return str(self.whoami(role)["user"]["id"])

    def member(self, user_id: str) -> dict[str, Any]:
        page = self.ok("team.listMembers", {"limit": 100})
        return next(m for m in page["data"] if m["user_id"] == user_id)


def team_of(seen: Org, clerk: Clerk) -> Team:
    team = Team.of(seen)
    team.clerk = clerk
    for role in ("admin", "editor", "member"):
        clerk.add_member(team.org, team.users[role], role)
        team.whoami(role)
    return team


@pytest.fixture
def team(tenant: Org, clerk: Clerk) -> Team:
    return team_of(tenant, clerk)


@pytest.fixture
def other_team(other_tenant: Org, clerk: Clerk) -> Team:
    return team_of(other_tenant, clerk)
