"""One real service for the whole run: its own database, DBOS, a stand-in identity provider.

`call(operation_id, input, token=..., org=...)` runs a test over REST and again over RPC, handing
requests to the app in-process; `client` reaches the same app over its real socket. `tenant`
and `other_tenant` are organizations seen through `call` (tests/support/orgs.py).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest

from contentplatform.app import create_app
from contentplatform.auth import devkeys
from contentplatform.auth.context import Role
from contentplatform.config import Settings
from contentplatform.events import service as events
from contentplatform.kit import migrations
from contentplatform.kit.db import Database
from tests.analytics.content.standin import ContentStandIn
from tests.seo.ai_visibility.standin import AnswerEngineStandIn
from tests.seo.pagespeed.standin import PageSpeedStandIn
from tests.seo.rank.standin import SerpStandIn
from tests.support.backends import Backends, test_backends
from tests.support.database import run_on
from tests.support.google import GoogleStandIn
from tests.support.idp import AUDIENCE, ISSUER, IdentityProvider
from tests.support.mailbox import Mailbox
from tests.support.orgs import Org, new_org
from tests.support.servers import DOCUMENT_TIMEOUT, AppServer

# The `stack` and `services` fixtures: service processes on backends of their own; `chromium`:
# the browser for the browser tests (tests/support/browser.py).
pytest_plugins = ("tests.support.processes", "tests.support.browser")

# The fixtures through which a test reaches a database or Redis: the suite's own backends, or
# service processes' backends of their own (tests/support/processes.py, team's and billing's).
BACKED = frozenset({"backends", "stack", "team_stack", "billing_stack"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With CONTENTPLATFORM_TEST_ONLY_BACKED=1 (CI's PostgreSQL+Redis suite), run only the tests
    that reach the backends: the others (parsing, HTML, schedules, strategies against stand-ins,
    about 28% of the suite) run the same code on any backend, and the SQLite suite runs them.
    A test reaches the backends through these fixtures, never from the environment itself."""
    if os.environ.get("CONTENTPLATFORM_TEST_ONLY_BACKED") != "1":
        return
    backed: list[pytest.Item] = []
    free: list[pytest.Item] = []
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        (backed if uses & BACKED else free).append(item)
    if free:
        config.hook.pytest_deselected(items=free)
        items[:] = backed


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def backends(data_dir: Path) -> Iterator[Backends]:
    with test_backends(data_dir) as found:
        yield found


@pytest.fixture(scope="session")
def idp() -> Iterator[IdentityProvider]:
    with IdentityProvider() as provider:
        yield provider


# The Google stand-in's URLs and OAuth client, which every service of the session is given
# (SEO's Search Console connections: tests/support/google).
_google = GoogleStandIn()
# PageSpeed Insights' stand-in (tests/seo/pagespeed/standin.py), every service pointed at it.
_pagespeed = PageSpeedStandIn()
# DataForSEO's SERP API stand-in (tests/seo/rank/standin.py), every service pointed at it.
_serp = SerpStandIn()
# The AI answer engines' stand-in (tests/seo/ai_visibility/standin.py), every service pointed at
# it.
_answers = AnswerEngineStandIn()
# Plausible's, GA4's Data API and Umami's stand-in (tests/analytics/content/standin.py), every
# service pointed at it; GA4's tokens are the Google stand-in's.
_content = ContentStandIn(_google)
# Where the suite's SEO OAuth flows say the front end receives Google's redirect.
SEO_REDIRECT_URI = "https://app.example.test/seo/callback"


@pytest.fixture(scope="session")
def google() -> Iterator[GoogleStandIn]:
    """The Google stand-in the session's services are pointed at (started on first use)."""
    if not _google.thread.is_alive():
        _google.thread.start()
    yield _google


@pytest.fixture(scope="session")
def content_providers() -> Iterator[ContentStandIn]:
    """The Plausible, GA4 and Umami stand-in the session's services are pointed at (started on
    first use, with the Google stand-in whose tokens GA4 takes)."""
    _content.start()
    if not _google.thread.is_alive():
        _google.thread.start()
    yield _content


@pytest.fixture(scope="session")
def pagespeed() -> Iterator[PageSpeedStandIn]:
    """The PageSpeed Insights stand-in the session's services are pointed at (started on first
    use)."""
    if not _pagespeed.thread.is_alive():
        _pagespeed.thread.start()
    yield _pagespeed


@pytest.fixture(scope="session")
def serp() -> Iterator[SerpStandIn]:
    """The DataForSEO SERP stand-in the session's services are pointed at (started on first
    use)."""
    if not _serp.thread.is_alive():
        _serp.thread.start()
    yield _serp


@pytest.fixture(scope="session")
def answer_engines() -> Iterator[AnswerEngineStandIn]:
    """The AI answer engines' stand-in the session's services are pointed at (started on first
    use)."""
    if not _answers.thread.is_alive():
        _answers.thread.start()
    yield _answers


# The SMTP server on loopback every service of the session sends its mail to (mail/).
_mailbox = Mailbox()


@pytest.fixture(scope="session")
def mailbox() -> Iterator[Mailbox]:
    """What the session's services send: `mailbox.wait_for(to=..., subject_contains=...)`."""
    with _mailbox.start():
        yield _mailbox


def _pools(database_url: str) -> dict[str, int]:
    """Every xdist worker of the PostgreSQL suite runs a service (and some tests a second one,
    or `serve` processes), all within the server's 100 connections. A pool keeps `pool_size`
    connections once opened and closes its overflow when returned: few kept, the same ten at a
    burst. DBOS keeps all of its own (no overflow), and each of its queues' pollers takes one at
    a time: six, which they share. SQLite has no such limit, and a connection opened again
    loads its extensions again: the pools stay as they were."""
    if database_url.startswith("postgresql"):
        return {"database_pool_size": 2, "database_max_overflow": 8, "dbos_pool_size": 6}
    return {"database_pool_size": 5, "database_max_overflow": 5, "dbos_pool_size": 10}


def make_settings(
    data_dir: Path, backends: Backends, idp: IdentityProvider, **overrides: Any
) -> Settings:
    values: dict[str, Any] = {
        "env": "local",
        "data_dir": data_dir,
        "database_url": backends.database_url,
        "dbos_database_url": backends.dbos_database_url,
        "redis_url": backends.redis_url,
        "redis_prefix": backends.redis_prefix,
        "jwks_url": idp.jwks_url,
        "jwt_issuer": ISSUER,
        "jwt_audience": AUDIENCE,
        "jwks_min_refetch_seconds": 0,
        "rate_limit": "100000/minute",
        "rate_limit_public": "100000/minute",
        **_pools(backends.database_url),
        # Each pass reads every domain's unfinished work (about 12 ms of CPU on SQLite): every
        # 3 s rather than every second, as six services share CI's two cores.
        "reconcile_interval_seconds": 3,
        # A worker's service ends with its session: nothing waits for work a test left running.
        "shutdown_grace_seconds": 0,
        # Tests tick the scheduler themselves, at the instants they choose.
        "scheduler_interval_seconds": 0,
        # The stand-in CMSs and webhook receivers listen on http://127.0.0.1; every other
        # address stays refused.
        "outbound_allow_http": True,
        "outbound_allow_loopback": True,
        "publish_retry_seconds": 0.05,
        # Outbound webhooks: three attempts within a second, and a short attempt timeout.
        "webhook_retry_seconds": [0, 0.2, 0.4],
        # Events a test commits on its own loop wake no service's dispatcher: `run` wakes it
        # after each scenario; what a test commits otherwise is found by this poll (each poll
        # is a read: at 0.1 s an idle service spent 10 ms of CPU a second on it).
        "events_poll_seconds": 0.5,
        "webhook_timeout_seconds": 2,
        # SEO: Google is the stand-in (serving once a test asks for the `google` fixture).
        **_google.settings(),
        **_pagespeed.settings(),
        **_serp.settings(),
        **_answers.settings(),
        **_content.settings(),
        "seo_oauth_redirect_uris": [SEO_REDIRECT_URI],
        # Search Console syncs retry quota answers at once (Retry-After capped too).
        "seo_sync_backoff_seconds": 0.01,
        "seo_sync_max_wait_seconds": 0.05,
        # Mail goes to the session's loopback SMTP server; a failed attempt is retried soon.
        **_mailbox.settings(),
        "mail_retry_first_seconds": 0.1,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture(scope="session")
def settings(
    data_dir: Path, backends: Backends, idp: IdentityProvider, mailbox: Mailbox
) -> Settings:
    return make_settings(data_dir, backends, idp)


@pytest.fixture(scope="session")
def server(settings: Settings) -> Iterator[AppServer]:
    migrations.upgrade(settings)
    with AppServer(create_app(settings)) as running:
        yield running


@pytest.fixture(scope="session")
def client(server: AppServer) -> Iterator[httpx.Client]:
    """The app over its real socket (uvicorn's HTTP stack): what `Org` uses for its own
    requests (whoami, uploads), and what tests of the HTTP layer use directly."""
    with server.client() as http:
        yield http


@pytest.fixture(scope="session")
def in_process_client(server: AppServer) -> Iterator[httpx.Client]:
    """The same app without the socket (tests/support/servers.py InProcessTransport): what
    `call` uses, as most tests are about an operation, not about HTTP: 0.6 to 0.9 of the time
    per call (bench/calls.py)."""
    with server.in_process_client() as http:
        yield http


@pytest.fixture(scope="session")
def settings_with(
    server: AppServer, data_dir: Path, backends: Backends, idp: IdentityProvider
) -> Callable[..., Settings]:
    """`settings_with(**changes)`: the suite's settings with `changes`, for a second service on
    the suite's database (which `server` has migrated already)."""
    return lambda **changes: make_settings(data_dir, backends, idp, **changes)


@pytest.fixture(scope="session")
def openapi_document(client: httpx.Client) -> dict[str, Any]:
    return client.get("/openapi.json", timeout=DOCUMENT_TIMEOUT).json()


Token = Callable[..., str]


@pytest.fixture(scope="session")
def token(settings: Settings) -> Token:
    """Mint a token exactly as `contentplatform dev-token` does."""

    def mint(
        org: str | None = None, user: str | None = None, role: str = "member", **extra: Any
    ) -> str:
        return devkeys.mint_token(
            settings.data_dir,
            org=org,
            user=user or f"user_{uuid4().hex[:8]}",
            role=Role(role),
            **extra,
        )

    return mint


# --- organizations: a test's own, or its module's (docs/contributors/ci.md, plan item 4) -------


def shares_organizations(request: pytest.FixtureRequest) -> bool:
    """Whether the test runs in its module's organizations: its module is marked `shared_org`
    and the test is not marked `own_org`."""
    node = request.node
    return node.get_closest_marker("shared_org") is not None and not node.get_closest_marker(
        "own_org"
    )


@pytest.fixture(scope="module")
def module_orgs() -> tuple[str, str]:
    """The two organizations a `shared_org` module's tests share (on each xdist worker)."""
    return new_org(), new_org()


@pytest.fixture
def org(request: pytest.FixtureRequest) -> str:
    """The test's organization id: a fresh one, or its module's in a `shared_org` module."""
    if shares_organizations(request):
        return request.getfixturevalue("module_orgs")[0]
    return new_org()


@pytest.fixture
def other_org(request: pytest.FixtureRequest) -> str:
    """A second organization id, for cross-tenant checks: fresh, or the module's second."""
    if shares_organizations(request):
        return request.getfixturevalue("module_orgs")[1]
    return new_org()


class Caller:
    """Calls an operation by operationId over one transport (REST or RPC)."""

    def __init__(self, client: httpx.Client, document: dict[str, Any], transport: str) -> None:
        self.client = client
        self.transport = transport
        self.operations: dict[str, tuple[str, str, dict[str, Any]]] = {}
        for path, item in document["paths"].items():
            for method, operation in item.items():
                self.operations[operation["operationId"]] = (method.upper(), path, operation)

    def __call__(
        self,
        operation_id: str,
        input: dict[str, Any] | None = None,
        *,
        token: str | None = None,
        org: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        sent = dict(headers or {})
        if token:
            sent["Authorization"] = f"Bearer {token}"
        if org:
            sent["x-idp-org-id"] = org
        data = dict(input or {})
        if self.transport == "rpc":
            return self.client.post(f"/api/rpc/{operation_id}", json=data, headers=sent)
        method, path, operation = self.operations[operation_id]
        params: dict[str, Any] = {}
        for parameter in operation.get("parameters", []):
            name = parameter["name"]
            if name not in data:
                continue
            value = data.pop(name)
            if parameter["in"] == "path":
                path = path.replace("{" + name + "}", str(value))
            elif parameter["in"] == "query":
                params[name] = value
        body = data if "requestBody" in operation else None
        if body is None and data:
            raise AssertionError(f"{operation_id} has no body for {sorted(data)}")
        return self.client.request(method, path, params=params, json=body, headers=sent)


@pytest.fixture(params=["rest", "rpc"])
def call(
    request: pytest.FixtureRequest,
    in_process_client: httpx.Client,
    openapi_document: dict[str, Any],
) -> Caller:
    return Caller(in_process_client, openapi_document, request.param)


@pytest.fixture
def tenant(call: Caller, client: httpx.Client, token: Token, org: str) -> Org:
    """The test's organization (`org`) through the test's transport: a token per role,
    `request()`/`ok()`, its `tenant_id`."""
    return Org(call, client, token, org)


@pytest.fixture
def other_tenant(call: Caller, client: httpx.Client, token: Token, other_org: str) -> Org:
    """A second organization (`other_org`) through the same transport, for cross-tenant checks."""
    return Org(call, client, token, other_org)


Run = Callable[[Callable[[Database], Awaitable[Any]]], Any]


# --- the fuzz pass's summary (tests/fuzz) ---------------------------------------------------------

# The last summary each test process recorded (tests/fuzz/test_schemathesis.py), by process.
_fuzz_summaries: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        for name, value in report.user_properties:
            if name.startswith("fuzz:"):
                _fuzz_summaries[name] = str(value)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _fuzz_summaries.values():
        terminalreporter.write_line(f"schemathesis pass {line}")


@pytest.fixture
def run(server: AppServer, settings: Settings) -> Run:
    """`run(scenario)` runs `async def scenario(db)` against the suite's migrated database, then
    wakes the service's event dispatcher for what the scenario emitted (its commits, on the
    test's own loop, wake none)."""

    def run_and_wake(scenario: Callable[[Database], Awaitable[Any]]) -> Any:
        try:
            return run_on(settings, scenario)
        finally:
            assert server.loop is not None
            asyncio.run_coroutine_threadsafe(events.wake_dispatcher(), server.loop).result(10)

    return run_and_wake
