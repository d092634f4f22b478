"""An organization seen through the API, the way every domain's tests see one: a user and a token
per role, `request()`/`ok()` as one of them over the test's transport (`call`: REST or RPC), and
the tenant id the service gave it; and `new_tenant(db)`, a tenant for tests below the API.

The domains' helpers (Docs, Drafts, Publishers, Writer, Planner, ...) are classes built on `Org`.
A test takes its organization through the `tenant` and `other_tenant` fixtures
(tests/conftest.py); a domain names its own fixtures with `org_fixture`:

    docs = org_fixture(Docs)                  # the test's organization, through Docs
    other = org_fixture(Docs, second=True)    # a second one, for cross-tenant checks

In a module marked `pytestmark = pytest.mark.shared_org` its tests share two organizations
(each xdist worker its own pair), so the service provisions a tenant and its members once per
module rather than once per test. A test there that counts or lists what the organization holds,
or changes what is the organization's (its time zone, its settings, its status, its plan's
limits), is marked `@pytest.mark.own_org` and gets organizations of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Self, TypeVar

import httpx
import pytest

from contentplatform.kit.db import Database
from contentplatform.tenants import repository as tenants

ROLES = ("member", "editor", "admin")

V = TypeVar("V", bound="Org")

# The tenant id the service gave each organization id (ids are random: never reused).
_tenant_ids: dict[str, uuid.UUID] = {}


def new_org() -> str:
    """A fresh organization id: each test gets tenants of its own."""
    return f"org_{uuid.uuid4().hex[:12]}"


async def new_tenant(db: Database) -> uuid.UUID:
    """A tenant made straight in the database, for tests below the API: its id."""
    org = new_org()
    async with db.unit_of_work() as session:
        return (await tenants.ensure_tenant(session, org, org)).id


class Org:
    """One organization through one transport (`call`), with a user and a token per role."""

    # The role a request goes as when it names none; a domain's helpers may pick another.
    default_role = "admin"

    def __init__(
        self, call: Any, client: httpx.Client, token: Callable[..., str], org: str | None = None
    ) -> None:
        self.call = call
        self.client = client
        self.token = token
        self.org = org or new_org()
        self.users = {role: f"{role}-{self.org}" for role in ROLES}
        self.tokens = {role: token(self.org, self.users[role], role) for role in ROLES}

    @classmethod
    def of(cls, seen: Org) -> Self:
        """The same organization (its users, through the same transport), seen through another
        domain's helpers."""
        return cls(seen.call, seen.client, seen.token, seen.org)

    def request(
        self, operation: str, data: dict[str, Any] | None = None, *, role: str | None = None
    ) -> httpx.Response:
        token = self.tokens[role or self.default_role]
        response: httpx.Response = self.call(operation, data, token=token, org=self.org)
        return response

    def ok(self, operation: str, data: dict[str, Any] | None = None, *, role: str | None = None):
        """The operation's answer, which must be a 200."""
        response = self.request(operation, data, role=role)
        assert response.status_code == 200, (operation, response.text)
        return response.json()

    def whoami(self, role: str = "member") -> dict[str, Any]:
        """Also makes the role's user a member of the organization (just in time)."""
        headers = {"Authorization": f"Bearer {self.tokens[role]}", "x-idp-org-id": self.org}
        response = self.client.get("/v1/system/whoami", headers=headers)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    @property
    def tenant_id(self) -> uuid.UUID:
        """The tenant the service made for the organization (asked once per organization, as
        the member: a module's tests may share one)."""
        if self.org not in _tenant_ids:
            _tenant_ids[self.org] = uuid.UUID(self.whoami()["tenant_id"])
        return _tenant_ids[self.org]


def org_fixture(view: type[V], *, second: bool = False) -> Any:
    """A fixture: the test's organization (`tenant`), or with `second` a second one
    (`other_tenant`, for cross-tenant checks), seen through `view`. pytest names a fixture after
    the attribute it is bound to: `docs = org_fixture(Docs)` is the fixture `docs`."""
    if second:

        @pytest.fixture
        def second_org(other_tenant: Org) -> V:
            return view.of(other_tenant)

        return second_org

    @pytest.fixture
    def own_org(tenant: Org) -> V:
        return view.of(tenant)

    return own_org
