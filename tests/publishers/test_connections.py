"""The seven publishers.* operations end to end over real HTTP (REST and RPC), against the
stand-in targets on loopback: the record and its defaults, per-type validation, SSRF refusals
at create and update (behind a socket guard and a fake DNS), updates, soft delete, connection
tests, the attempts list, roles, tenancy and credentials at rest."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import select
from standardwebhooks.webhooks import Webhook as StandardWebhook

from contentplatform.kit.db import Database
from contentplatform.publishers.models import PublisherConnection
from contentplatform.publishers.vault import vault
from tests.drafts.support import Drafts
from tests.publishers.support import (
    Publishers,
    connection_body,
    ghost_body,
    shopify_body,
    webflow_body,
    webhook_body,
    wordpress_body,
)
from tests.support.network import fake_dns, is_loopback_host, no_outside_connections
from tests.support.orgs import new_org, org_fixture
from tests.support.problems import problem
from tests.support.servers import second_service
from tests.support.targets.ghost import GhostServer
from tests.support.targets.scripted import Failure
from tests.support.targets.shopify import ShopifyShop
from tests.support.targets.webflow import COLLECTION_ID, WebflowSite
from tests.support.targets.webhook import WebhookReceiver
from tests.support.targets.wordpress import WordPressServer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

RECORD_FIELDS = {
    *("id", "name", "type", "config", "credentials_hint", "status", "is_default"),
    *("capabilities", "last_tested_at", "last_test_ok", "last_error"),
    *("created_at", "updated_at"),
}
# A port nothing listens on: a webhook connection is made before its receiver knows the secret.
NOWHERE = "http://127.0.0.1:9/hooks"
KINDS = ("wordpress", "ghost", "shopify", "webflow")


publishers = org_fixture(Publishers)
other = org_fixture(Publishers, second=True)  # a second organization, through the same transport
drafts = org_fixture(Drafts)  # the first organization's drafts (same users as `publishers`)


def bad_fields(response) -> list[str]:
    """The paths a 400 names."""
    body = problem(response, 400, "BAD_REQUEST")
    return [error["path"] for error in body["errors"]]


def masked(secret: str) -> str:
    return "••••" + secret[-4:]


@contextmanager
def stand_in(kind: str) -> Iterator[tuple[dict[str, Any], list[str], str, str]]:
    """A running stand-in of `kind`: (the create body that connects it, the plaintext secrets
    that must never come back, the hint expected, the account label its test reports)."""
    if kind == "wordpress":
        with WordPressServer() as wp:
            password = wp.application_password
            secrets = [password, password.replace(" ", "")]
            yield wordpress_body(wp), secrets, f"{wp.username} {masked(password)}", wp.name
    elif kind == "ghost":
        with GhostServer() as ghost:
            key = ghost.admin_api_key
            yield ghost_body(ghost), [key, ghost.secret], masked(key), ghost.title
    elif kind == "shopify":
        with ShopifyShop() as shop:
            yield shopify_body(shop), [shop.token], masked(shop.token), shop.name
    else:
        with WebflowSite() as site:
            yield webflow_body(site), [site.token], masked(site.token), "Acme Blog / Blog Posts"


def assert_no_secret(response_text: str, secrets: list[str]) -> None:
    for secret in secrets:
        assert secret not in response_text


def assert_shows(given: dict[str, Any], shown: dict[str, Any]) -> None:
    """Every field of the config given is in the config shown (URLs up to a trailing slash)."""
    for name, value in given.items():
        if isinstance(value, dict):
            assert_shows(value, shown[name])
        elif isinstance(value, str) and value.startswith("http"):
            assert shown[name].rstrip("/") == value.rstrip("/"), (name, shown)
        else:
            assert shown[name] == value, (name, shown)


# --- create, and what every answer shows ------------------------------------------------------


@pytest.mark.own_org
@pytest.mark.parametrize("kind", KINDS)
def test_a_connection_shows_its_config_and_a_hint_never_its_credentials(publishers, kind):
    with stand_in(kind) as (body, secrets, hint, _):
        response = publishers.request("publishers.create", body)
        assert response.status_code == 200, response.text
        assert_no_secret(response.text, secrets)
        created = response.json()
        assert set(created) == RECORD_FIELDS | {"signing_secret"}
        assert created["signing_secret"] is None
        assert created["type"] == kind and created["name"] == body["name"]
        assert_shows(body["config"], created["config"])
        assert created["credentials_hint"] == hint
        assert created["status"] == "active"
        assert created["last_tested_at"] is None and created["last_test_ok"] is None
        assert created["is_default"] is True  # the organization's first connection

        # Every other answer about it: no credentials, no signing secret field.
        connection_id = created["id"]
        for operation, data in (
            ("publishers.getById", {"id": connection_id}),
            ("publishers.list", {}),
            ("publishers.update", {"id": connection_id, "name": "Renamed"}),
            ("publishers.test", {"id": connection_id}),
        ):
            answer = publishers.request(operation, data)
            assert answer.status_code == 200, (operation, answer.text)
            assert_no_secret(answer.text, secrets)
            assert 'credentials"' not in answer.text and "signing_secret" not in answer.text

        shown = publishers.get(connection_id)
        assert set(shown) == RECORD_FIELDS
        assert shown["credentials_hint"] == hint and shown["name"] == "Renamed"
        assert publishers.list()["data"] == [shown]
        assert publishers.list()["total"] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_test_against_a_good_target_is_ok_and_recorded(publishers, kind):
    with stand_in(kind) as (body, _, _, label):
        connection = publishers.create(body)
        outcome = publishers.test(connection["id"])
        assert outcome["ok"] is True, outcome
        assert outcome["account_label"] == label
        assert outcome["capabilities"] and outcome["warnings"] == []
        tested = publishers.get(connection["id"])
        assert tested["last_test_ok"] is True and tested["last_tested_at"] is not None
        assert tested["capabilities"] == outcome["capabilities"]
        assert tested["status"] == "active" and tested["last_error"] is None


def test_wordpress_reports_the_users_capabilities(publishers):
    with WordPressServer(role="author") as wp:
        connection = publishers.create_wordpress(wp)
        outcome = publishers.test(connection["id"])
    assert outcome["ok"] is True
    assert outcome["capabilities"] == ["edit_posts", "publish_posts", "edit_published_posts"]


def test_a_webhook_connection_shows_its_signing_secret_once_and_signs_with_it(publishers):
    response = publishers.request("publishers.create", webhook_body(NOWHERE))
    assert response.status_code == 200, response.text
    created = response.json()
    secret = created["signing_secret"]
    assert secret.startswith("whsec_") and len(secret) > len("whsec_") + 30
    assert created["credentials_hint"] is None
    assert created["config"] == {"url": NOWHERE}

    with WebhookReceiver(secret) as receiver:
        answers = [
            publishers.request(
                "publishers.update", {"id": created["id"], "config": {"url": receiver.hook_url}}
            ),
            publishers.request("publishers.getById", {"id": created["id"]}),
            publishers.request("publishers.list", {}),
            publishers.request("publishers.test", {"id": created["id"]}),
        ]
        for answer in answers:
            assert answer.status_code == 200, answer.text
            assert secret not in answer.text and "signing_secret" not in answer.text
            # Not even the key part of it (what follows whsec_).
            assert secret.removeprefix("whsec_") not in answer.text
        outcome = answers[-1].json()
        assert outcome["ok"] is True and outcome["account_label"] == "127.0.0.1"
        # The receiver verified the test event with the secret shown at create.
        assert [event["type"] for event in receiver.events] == ["webhook.test"]
        assert receiver.rejected == []
    # A second webhook connection gets a secret of its own.
    second = publishers.create_webhook(NOWHERE, name="Another")
    assert second["signing_secret"].startswith("whsec_")
    assert second["signing_secret"] != secret


def test_a_webhook_test_signed_with_another_secret_fails(publishers):
    created = publishers.create_webhook(NOWHERE)
    other_secret = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY="
    assert other_secret != created["signing_secret"]
    StandardWebhook(other_secret)  # a well-formed secret, just not this connection's
    with WebhookReceiver(other_secret) as receiver:
        publishers.update(created["id"], config={"url": receiver.hook_url})
        outcome = publishers.test(created["id"])
        assert len(receiver.rejected) == 1
    assert outcome["ok"] is False and outcome["warnings"]
    assert publishers.get(created["id"])["status"] == "error"


@pytest.mark.own_org
def test_the_first_connection_is_the_default_until_another_is_made_default(publishers, wp):
    first = publishers.create_wordpress(wp, name="First")
    second = publishers.create_wordpress(wp, name="Second")
    assert first["is_default"] is True and second["is_default"] is False

    third = publishers.create_wordpress(wp, name="Third", isDefault=True)
    assert third["is_default"] is True
    defaults = {c["name"]: c["is_default"] for c in publishers.list()["data"]}
    assert defaults == {"First": False, "Second": False, "Third": True}

    assert publishers.update(second["id"], isDefault=True)["is_default"] is True
    defaults = {c["name"]: c["is_default"] for c in publishers.list()["data"]}
    assert defaults == {"First": False, "Second": True, "Third": False}
    # The list is oldest first.
    assert publishers.ids() == [first["id"], second["id"], third["id"]]


def race(count: int, action: Any) -> list[Any]:
    """`action(i)` for i in range(count), all released at once from threads of their own."""
    barrier = threading.Barrier(count)

    def go(index: int) -> Any:
        barrier.wait()
        return action(index)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(go, range(count)))


def test_racing_creates_and_default_changes_leave_exactly_one_default(call, client, token, wp):
    outcomes = []
    for _ in range(4):
        org = Publishers(call, client, token, new_org())
        org.list()  # the organization exists before the race
        created = race(6, lambda i: org.request("publishers.create", wordpress_body(wp)))
        after_creates = sum(c["is_default"] for c in org.list()["data"])
        ids = org.ids()
        changed = race(
            6, lambda i: org.request("publishers.update", {"id": ids[i], "isDefault": True})
        )
        after_updates = sum(c["is_default"] for c in org.list()["data"])
        statuses = sorted({r.status_code for r in created + changed})
        outcomes.append((statuses, after_creates, after_updates))
    assert outcomes == [([200], 1, 1)] * 4


@pytest.mark.own_org
def test_list_filters_by_type_and_status(publishers, wp):
    blog = publishers.create_wordpress(wp)
    hook = publishers.create_webhook(NOWHERE)
    publishers.update(hook["id"], status="disabled")
    assert publishers.ids(type="wordpress") == [blog["id"]]
    assert publishers.ids(type="webhook") == [hook["id"]]
    assert publishers.ids(status="disabled") == [hook["id"]]
    assert publishers.ids(status="active") == [blog["id"]]
    assert publishers.list(type="ghost") == {"data": [], "total": 0}


# --- validation -------------------------------------------------------------------------------


def _wordpress(config: Any = None, credentials: Any = "default") -> dict[str, Any]:
    if config is None:
        config = {"siteUrl": "http://127.0.0.1:9"}
    if credentials == "default":
        credentials = {"username": "eda", "applicationPassword": "abcd EFGH 1234 ijkl"}
    return connection_body("Blog", "wordpress", config, credentials)


def _shopify(config: dict[str, Any]) -> dict[str, Any]:
    return connection_body("S", "shopify", config, {"accessToken": "shpat_x"})


def _webflow(config: dict[str, Any]) -> dict[str, Any]:
    return connection_body("W", "webflow", config, {"apiToken": "wf"})


GHOST_KEY = "6650a1b2c3d4e5f6a7b8c9d0:" + "ab" * 32


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("body", "paths"),
    [
        pytest.param(
            _wordpress({"siteUrl": "http://127.0.0.1:9", "blogId": 3}),
            ["config.blogId"],
            id="unknown config field",
        ),
        pytest.param(_wordpress({}), ["config.siteUrl"], id="missing siteUrl"),
        pytest.param(_wordpress({"siteUrl": "not a url"}), ["config.siteUrl"], id="bad url"),
        pytest.param(_wordpress({"siteUrl": "ftp://127.0.0.1/"}), ["config.siteUrl"], id="ftp url"),
        pytest.param(
            _wordpress({"siteUrl": "http://127.0.0.1:9", "categories": [0]}),
            ["config.categories.0"],
            id="category not positive",
        ),
        pytest.param(_wordpress(credentials=None), ["credentials"], id="missing credentials"),
        pytest.param(
            _wordpress(credentials={"username": "eda"}),
            ["credentials.applicationPassword"],
            id="missing password",
        ),
        pytest.param(
            _wordpress(credentials={"username": "eda", "applicationPassword": "x", "token": "y"}),
            ["credentials.token"],
            id="unknown credentials field",
        ),
        pytest.param(
            webhook_body(NOWHERE, credentials={"token": "abc"}),
            ["credentials"],
            id="credentials on a webhook",
        ),
        pytest.param(webhook_body("ftp://127.0.0.1/hooks"), ["config.url"], id="webhook ftp"),
        pytest.param(
            connection_body("G", "ghost", {"adminUrl": "http://127.0.0.1:9"}),
            ["credentials"],
            id="ghost without credentials",
        ),
        pytest.param(
            _shopify({"storeUrl": "http://127.0.0.1:9", "blogId": "news"}),
            ["config.blogId"],
            id="shopify blog id",
        ),
        pytest.param(
            _shopify({"storeUrl": "http://127.0.0.1:9/admin", "blogId": "41"}),
            ["config.storeUrl"],
            id="shopify store url with a path",
        ),
        pytest.param(
            _webflow({"collectionId": "nope", "fieldMapping": {"content": "post-body"}}),
            ["config.collectionId"],
            id="webflow collection id",
        ),
        pytest.param(
            _webflow({"collectionId": COLLECTION_ID, "fieldMapping": {}}),
            ["config.fieldMapping.content"],
            id="webflow mapping without content",
        ),
        pytest.param(connection_body("M", "medium", {}, {}), ["type"], id="unknown type"),
    ],
)
def test_create_refuses_invalid_config_or_credentials_naming_the_field(publishers, body, paths):
    response = publishers.request("publishers.create", body)
    assert bad_fields(response) == paths
    assert publishers.list()["total"] == 0


@pytest.mark.own_org
def test_a_config_beyond_the_size_bound_is_refused(publishers):
    config = {"siteUrl": "http://127.0.0.1:9", "categories": list(range(1, 20_001))}
    response = publishers.request("publishers.create", _wordpress(config))
    assert bad_fields(response) == ["config"]
    assert publishers.list()["total"] == 0


def test_an_invalid_credential_is_not_echoed_in_the_error(publishers):
    secret_part = "ab" * 32
    body = ghost_body_with_key(f"not-hex:{secret_part}")
    response = publishers.request("publishers.create", body)
    assert bad_fields(response) == ["credentials.adminApiKey"]
    assert secret_part not in response.text


def ghost_body_with_key(key: str) -> dict[str, Any]:
    return connection_body(
        "Ghost", "ghost", {"adminUrl": "http://127.0.0.1:9"}, {"adminApiKey": key}
    )


# --- outbound safety: refused before anything is stored or connected to --------------------


PUBLIC = "93.184.216.34"
DNS = {
    "metadata.attacker.test": ["169.254.169.254"],
    "mixed.attacker.test": [PUBLIC, "10.0.0.5"],
    "mixed-v6.attacker.test": [PUBLIC, "fd00:ec2::254"],
    "half-loopback.attacker.test": ["127.0.0.1", "192.168.1.1"],
    "blog.example.test": [PUBLIC],
}
REFUSED_URLS = [
    pytest.param("http://169.254.169.254/", "metadata", id="aws-metadata"),
    pytest.param("http://[fd00:ec2::254]/", "metadata", id="aws-metadata-v6"),
    pytest.param("http://10.0.0.5/", "private", id="10/8"),
    pytest.param("http://192.168.1.1/", "private", id="192.168/16"),
    pytest.param("http://172.16.0.1/", "private", id="172.16/12"),
    pytest.param("http://[fe80::1]/", "link-local", id="link-local-v6"),
    pytest.param("http://169.254.1.1/", "link-local", id="link-local-v4"),
    pytest.param("http://100.64.0.1/", "CGNAT", id="cgnat"),
    pytest.param("http://[::ffff:169.254.169.254]/", "metadata", id="v4-mapped-metadata"),
    pytest.param("http://[::ffff:10.0.0.5]/", "private", id="v4-mapped-private"),
    pytest.param("http://[64:ff9b::a9fe:a9fe]/", "metadata", id="nat64-metadata"),
    pytest.param("http://0.0.0.0/", "reserved", id="unspecified"),
    pytest.param("http://metadata.attacker.test/", "metadata", id="name-to-metadata"),
    pytest.param("http://mixed.attacker.test/", "private", id="name-to-public-and-private"),
    pytest.param("http://mixed-v6.attacker.test/", "metadata", id="name-to-public-and-v6"),
    pytest.param("http://half-loopback.attacker.test/", "private", id="name-to-loopback-mix"),
    pytest.param("http://user:s3cr3t-pw@blog.example.test/", "credentials", id="userinfo"),
]


@contextmanager
def guarded() -> Iterator[Any]:
    """The socket guard and the fake DNS, for the test and the app server's thread alike."""
    with no_outside_connections() as guard, fake_dns(DNS) as dns:
        yield guard, dns
    assert guard.refused == []
    assert all(is_loopback_host(host) for host, _ in guard.connections), guard.connections


def url_body(kind: str, url: str) -> dict[str, Any]:
    """A create body of `kind` whose one user-supplied URL is `url`."""
    if kind == "wordpress":
        return _wordpress({"siteUrl": url})
    if kind == "ghost":
        return ghost_body_with_key(GHOST_KEY) | {"config": {"adminUrl": url}}
    if kind == "shopify":
        config = {"storeUrl": url, "blogId": "41"}
        return connection_body("Shop", "shopify", config, {"accessToken": "shpat_0123456789"})
    if kind == "webflow":
        config = {
            "apiBaseUrl": url,
            "collectionId": COLLECTION_ID,
            "fieldMapping": {"content": "post-body"},
        }
        return connection_body("Webflow", "webflow", config, {"apiToken": "wf-0123456789"})
    return webhook_body(url)


def assert_refused(response, word: str) -> None:
    body = problem(response, 400, "BAD_REQUEST")
    assert word.lower() in body["detail"].lower(), body["detail"]
    assert body["errors"] and all(e["path"].startswith("config") for e in body["errors"]), body
    assert "s3cr3t-pw" not in response.text


@pytest.mark.own_org
@pytest.mark.parametrize(("url", "word"), REFUSED_URLS)
def test_create_refuses_urls_that_reach_inside_and_stores_nothing(publishers, wp, url, word):
    kept = publishers.create_wordpress(wp)
    before = publishers.list()
    with guarded() as (_, dns):
        response = publishers.request("publishers.create", _wordpress({"siteUrl": url}))
    assert_refused(response, word)
    assert publishers.list() == before
    assert publishers.get(kept["id"]) == before["data"][0]
    # The names were looked up in the fake DNS only (the URL with credentials is refused first).
    if "attacker" in url:
        assert [name for name in dns.asked if "attacker" in name] == [url.split("/")[2]]


@pytest.mark.own_org
@pytest.mark.parametrize("kind", [*KINDS, "webhook"])
@pytest.mark.parametrize(
    ("url", "word"),
    [
        ("http://169.254.169.254", "metadata"),
        ("http://metadata.attacker.test", "metadata"),
        ("http://[fe80::1]", "link-local"),
    ],
)
def test_every_type_checks_its_url(publishers, kind, url, word):
    with guarded():
        response = publishers.request("publishers.create", url_body(kind, url))
    assert_refused(response, word)
    assert publishers.list()["total"] == 0


@pytest.mark.parametrize(("url", "word"), REFUSED_URLS)
def test_update_refuses_urls_that_reach_inside_and_keeps_the_config(publishers, wp, url, word):
    connection = publishers.create_wordpress(wp)
    with guarded():
        response = publishers.request(
            "publishers.update", {"id": connection["id"], "config": {"siteUrl": url}}
        )
    assert_refused(response, word)
    shown = publishers.get(connection["id"])
    assert shown["config"] == connection["config"]
    assert shown["updated_at"] == connection["updated_at"]
    assert wp.requests == []


@pytest.fixture(scope="module")
def strict_service(settings_with) -> Iterator[Any]:
    """A second service that refuses http and loopback targets, as outside local development."""
    settings = settings_with(outbound_allow_http=False, outbound_allow_loopback=False)
    with second_service(settings) as running, running.client() as client:
        yield client


@pytest.mark.parametrize("transport", ["rest", "rpc"])
@pytest.mark.parametrize(
    ("url", "setting"),
    [
        ("http://hooks.example.test/in", "CONTENTPLATFORM_OUTBOUND_ALLOW_HTTP=true"),
        ("https://127.0.0.1:9/hook", "CONTENTPLATFORM_OUTBOUND_ALLOW_LOOPBACK=true"),
        ("https://[::1]:9/hook", "CONTENTPLATFORM_OUTBOUND_ALLOW_LOOPBACK=true"),
    ],
)
def test_a_refused_http_or_loopback_url_names_the_setting_that_allows_it(
    strict_service, token, transport, url, setting
):
    org = new_org()
    headers = {
        "Authorization": f"Bearer {token(org, f'admin-{org}', 'admin')}",
        "x-idp-org-id": org,
    }
    path = "/api/rpc/publishers.create" if transport == "rpc" else "/v1/publishers"
    with guarded():
        response = strict_service.post(path, json=webhook_body(url), headers=headers)
    assert_refused(response, setting)
    assert "For local development" in response.json()["detail"]


def test_a_webhook_url_update_is_checked_too(publishers):
    hook = publishers.create_webhook(NOWHERE)
    with guarded():
        response = publishers.request(
            "publishers.update", {"id": hook["id"], "config": {"url": "http://10.0.0.5/hook"}}
        )
    assert_refused(response, "private")
    assert publishers.get(hook["id"])["config"] == {"url": NOWHERE}


def test_loopback_is_allowed_by_the_suites_settings_by_address_and_by_name(publishers, wp):
    """The allowance: the suite lets loopback through (outbound_allow_loopback), so a stand-in
    is reachable by 127.0.0.1 and by a name resolving to it, and the test really connects."""
    port = wp.httpd.server_address[1]
    with no_outside_connections() as guard, fake_dns({"blog.local.test": ["127.0.0.1"]}) as dns:
        by_name = publishers.create_wordpress(
            wp, config={"siteUrl": f"http://blog.local.test:{port}"}
        )
        by_address = publishers.create_wordpress(wp, config={"siteUrl": wp.url})
        assert publishers.test(by_name["id"])["ok"] is True
        assert publishers.test(by_address["id"])["ok"] is True
    assert "blog.local.test" in dns.asked
    assert ("127.0.0.1", port) in guard.connections
    assert all(is_loopback_host(host) for host, _ in guard.connections)
    # The name went to the stand-in as the Host header; the connection went to the checked address.
    hosts = [seen.headers["host"] for seen in wp.requests]
    assert f"blog.local.test:{port}" in hosts and f"127.0.0.1:{port}" in hosts


def test_the_address_is_checked_again_at_each_request(publishers, wp):
    """A name that resolved to an allowed address when the connection was made and resolves
    inside later (DNS rebinding) is refused when the connection is tested: ok false, nothing
    connected to."""
    port = wp.httpd.server_address[1]
    with no_outside_connections() as guard, fake_dns({"rebind.test": ["127.0.0.1"]}) as dns:
        connection = publishers.create_wordpress(
            wp, config={"siteUrl": f"http://rebind.test:{port}"}
        )
        dns.mapping["rebind.test"] = ["169.254.169.254"]
        outcome = publishers.test(connection["id"])
    assert outcome["ok"] is False
    assert any("metadata" in warning for warning in outcome["warnings"]), outcome
    assert publishers.get(connection["id"])["status"] == "error"
    assert wp.requests == []
    assert all(is_loopback_host(host) for host, _ in guard.connections)


# --- update -----------------------------------------------------------------------------------


def test_update_renames_disables_and_enables(publishers, wp, drafts):
    connection = publishers.create_wordpress(wp)
    renamed = publishers.update(connection["id"], name="Newsroom")
    assert renamed["name"] == "Newsroom"
    assert renamed["config"] == connection["config"]
    assert renamed["credentials_hint"] == connection["credentials_hint"]
    assert renamed["updated_at"] > connection["updated_at"]

    disabled = publishers.update(connection["id"], status="disabled")
    assert disabled["status"] == "disabled"
    assert publishers.get(connection["id"])["status"] == "disabled"
    # A disabled connection publishes nothing.
    draft = drafts.approve(drafts.create("Disabled target", content="<p>Body.</p>")["id"])
    response = publishers.try_publish(draft["id"], publisherConnectionId=connection["id"])
    problem(response, 409, "CONFLICT")
    assert wp.posts == {}

    enabled = publishers.update(connection["id"], status="active")
    assert enabled["status"] == "active"
    attempt = publishers.publish_and_wait(draft["id"], publisherConnectionId=connection["id"])
    assert attempt["status"] == "succeeded", attempt
    assert len(wp.posts) == 1


def test_update_replaces_the_config(publishers, wp):
    connection = publishers.create_wordpress(wp)
    with WordPressServer() as moved:
        updated = publishers.update(
            connection["id"], config={"siteUrl": moved.url, "categories": [4]}
        )
        assert updated["config"]["siteUrl"].rstrip("/") == moved.url
        assert updated["config"]["categories"] == [4]
        assert publishers.test(connection["id"])["ok"] is True
        assert len(moved.requests) >= 1
    assert wp.requests == []


def test_replaced_credentials_change_the_hint_and_are_the_ones_used(publishers):
    old_password, new_password = "oldp ASSW 0rd1 1111", "newp ASSW 0rd2 2222"
    with WordPressServer(application_password=new_password) as wp:
        connection = publishers.create_wordpress(
            wp, credentials={"username": wp.username, "applicationPassword": old_password}
        )
        assert connection["credentials_hint"] == f"eda {masked(old_password)}"
        refused = publishers.test(connection["id"])
        assert refused["ok"] is False and refused["warnings"]
        assert old_password not in str(refused)
        assert publishers.get(connection["id"])["status"] == "error"

        response = publishers.request(
            "publishers.update",
            {
                "id": connection["id"],
                "credentials": {"username": wp.username, "applicationPassword": new_password},
            },
        )
        assert response.status_code == 200, response.text
        assert new_password not in response.text and old_password not in response.text
        updated = response.json()
        assert updated["credentials_hint"] == f"eda {masked(new_password)}"
        # New credentials are untested: the error of the old ones no longer stands.
        assert updated["status"] == "active" and updated["last_test_ok"] is None

        outcome = publishers.test(connection["id"])
        assert outcome["ok"] is True, outcome
        assert publishers.get(connection["id"])["last_test_ok"] is True


@pytest.mark.parametrize(
    ("change", "paths"),
    [
        ({"type": "ghost"}, ["type"]),
        ({"config": {}}, ["config.siteUrl"]),
        ({"config": {"siteUrl": "http://127.0.0.1:9", "bogus": 1}}, ["config.bogus"]),
        ({"credentials": {"username": "eda"}}, ["credentials.applicationPassword"]),
        ({"status": "error"}, ["status"]),
        ({"name": ""}, ["name"]),
    ],
)
def test_update_refuses_invalid_changes_and_changes_nothing(publishers, wp, change, paths):
    connection = publishers.create_wordpress(wp)
    response = publishers.request("publishers.update", {"id": connection["id"], **change})
    assert bad_fields(response) == paths
    shown = publishers.get(connection["id"])
    assert shown["type"] == "wordpress"
    assert shown["config"] == connection["config"]
    assert shown["credentials_hint"] == connection["credentials_hint"]
    assert shown["updated_at"] == connection["updated_at"]


def test_a_webhook_takes_no_credentials_on_update_either(publishers):
    hook = publishers.create_webhook(NOWHERE)
    response = publishers.request(
        "publishers.update", {"id": hook["id"], "credentials": {"token": "abc"}}
    )
    assert bad_fields(response) == ["credentials"]


# --- delete -------------------------------------------------------------------------------------


@pytest.mark.own_org
def test_delete_is_soft_and_the_connection_is_gone_from_every_operation(publishers, wp, run):
    kept = publishers.create_wordpress(wp, name="Kept")
    gone = publishers.create_wordpress(wp, name="Gone")
    assert publishers.delete(gone["id"]) == {"success": True}

    for operation, data in (
        ("publishers.getById", {"id": gone["id"]}),
        ("publishers.delete", {"id": gone["id"]}),
        ("publishers.update", {"id": gone["id"], "name": "Back"}),
        ("publishers.test", {"id": gone["id"]}),
        ("publishers.listAttempts", {"id": gone["id"]}),
    ):
        problem(publishers.request(operation, data), 404, "NOT_FOUND")
    assert publishers.ids() == [kept["id"]]
    assert wp.requests == []

    async def scenario(db: Database) -> PublisherConnection | None:
        async with db.unit_of_work() as session:
            return await session.get(PublisherConnection, uuid.UUID(gone["id"]))

    row = run(scenario)
    assert row is not None and row.deleted_at is not None  # still stored, marked deleted
    assert row.name == "Gone" and row.credentials_sealed


@pytest.mark.own_org
def test_a_deleted_connection_is_no_publishing_target(publishers, wp, drafts):
    connection = publishers.create_wordpress(wp)
    publishers.delete(connection["id"])
    draft = drafts.approve(drafts.create("Nowhere to go", content="<p>Body.</p>")["id"])
    response = publishers.try_publish(draft["id"], publisherConnectionId=connection["id"])
    problem(response, 404, "NOT_FOUND")
    # It was the default; nothing is the default now.
    response = publishers.try_publish(draft["id"])
    assert bad_fields(response) == ["publisherConnectionId"]
    assert wp.posts == {}


# --- test ---------------------------------------------------------------------------------------


@pytest.mark.own_org
def test_wrong_credentials_fail_the_test_and_a_later_good_test_recovers(publishers, wp):
    connection = publishers.create_wordpress(wp)
    assert publishers.test(connection["id"])["ok"] is True
    first = publishers.get(connection["id"])

    # The password is revoked in WordPress.
    wp.application_password = "zzzz YYYY 9999 xxxx"
    outcome = publishers.test(connection["id"])
    assert outcome["ok"] is False
    assert any("password" in warning.lower() for warning in outcome["warnings"]), outcome
    failed = publishers.get(connection["id"])
    assert failed["status"] == "error"
    assert failed["last_test_ok"] is False
    assert failed["last_error"] and "password" in failed["last_error"].lower()
    assert failed["last_tested_at"] > first["last_tested_at"]
    assert publishers.ids(status="error") == [connection["id"]]

    # Restored: the next test brings it back.
    wp.application_password = WordPressServer().application_password
    assert publishers.test(connection["id"])["ok"] is True
    recovered = publishers.get(connection["id"])
    assert recovered["status"] == "active" and recovered["last_error"] is None
    assert recovered["last_test_ok"] is True
    assert recovered["last_tested_at"] > failed["last_tested_at"]


def test_a_target_that_is_down_fails_the_test_with_a_warning(publishers, wp):
    connection = publishers.create_wordpress(wp)
    wp.fail(Failure(503), times=5)
    outcome = publishers.test(connection["id"])
    assert outcome["ok"] is False and outcome["warnings"], outcome
    assert publishers.get(connection["id"])["status"] == "error"


def test_a_user_who_cannot_write_posts_fails_the_test(publishers):
    with WordPressServer(role="subscriber") as wp:
        connection = publishers.create_wordpress(wp)
        outcome = publishers.test(connection["id"])
    assert outcome["ok"] is False
    assert outcome["warnings"] == [
        "This user cannot create posts (it lacks edit_posts; its role is subscriber): give it "
        "the Author role, or Editor to edit other people's posts too."
    ]
    assert outcome["account_label"] == wp.name
    assert publishers.get(connection["id"])["status"] == "error"


def test_a_failed_test_leaves_a_disabled_connection_disabled(publishers, wp):
    connection = publishers.create_wordpress(wp)
    publishers.update(connection["id"], status="disabled")
    wp.application_password = "zzzz YYYY 9999 xxxx"
    assert publishers.test(connection["id"])["ok"] is False
    shown = publishers.get(connection["id"])
    assert shown["status"] == "disabled" and shown["last_test_ok"] is False


def test_a_slow_target_under_test_holds_up_no_other_organizations_writes(publishers, other, wp):
    """publishers.test waits on the target (up to the outbound timeout); other work goes on."""
    connection = publishers.create_wordpress(wp)
    other.list()  # the other organization exists before the race
    wp.fail(Failure(503, delay=3.0))
    with ThreadPoolExecutor(1) as pool:
        testing = pool.submit(publishers.test, connection["id"])
        time.sleep(0.5)  # the test is waiting on the target now
        started = time.monotonic()
        other.create_webhook(NOWHERE)
        took = time.monotonic() - started
        assert testing.result()["ok"] is False
    assert took < 1.5, f"a write of another organization waited {took:.1f} s"


def test_a_test_outcome_is_not_recorded_over_a_connection_changed_while_it_ran(publishers, wp):
    """What was tested is not what is stored any more: the outcome is answered, not kept."""
    connection = publishers.create_wordpress(wp)
    wp.fail(Failure(503, delay=1.5))
    with ThreadPoolExecutor(1) as pool:
        testing = pool.submit(publishers.test, connection["id"])
        time.sleep(0.5)  # the test is waiting on the target now
        publishers.update(connection["id"], name="Renamed meanwhile")
        assert testing.result()["ok"] is False

    shown = publishers.get(connection["id"])
    assert shown["name"] == "Renamed meanwhile"
    assert (shown["status"], shown["last_test_ok"], shown["last_tested_at"]) == (
        "active",
        None,
        None,
    )


# --- attempts -----------------------------------------------------------------------------------


def test_list_attempts_pages_and_filters_the_connections_attempts(publishers, wp, drafts):
    connection = publishers.create_wordpress(wp)
    other_target = publishers.create_webhook(NOWHERE, name="Elsewhere")
    ids = []
    for title in ("First post", "Second post", "Third post"):
        draft = drafts.approve(drafts.create(title, content=f"<p>{title}.</p>")["id"])
        if title == "Second post":
            wp.fail(Failure(400, code="rest_invalid_param"), method="POST", path=wp.POSTS)
        attempt = publishers.publish_and_wait(draft["id"], publisherConnectionId=connection["id"])
        ids.append(attempt["id"])
        assert attempt["status"] == ("failed" if title == "Second post" else "succeeded")
    first, second, third = ids

    page = publishers.attempts(connection["id"])
    assert page["total"] == 3 and page["page"] == 1 and page["limit"] == 20
    assert [a["id"] for a in page["data"]] == [third, second, first]  # newest first
    listed = page["data"][2]
    assert listed["publisher_connection_id"] == connection["id"]
    assert listed["status"] == "succeeded" and listed["external_id"]
    first_post = wp.posts[int(listed["external_id"])]
    assert listed["external_url"] == f"{wp.url}/{first_post['slug']}/"
    assert page["data"][1]["error"]["code"] == "invalid"

    page_one = publishers.attempts(connection["id"], limit=2)
    page_two = publishers.attempts(connection["id"], limit=2, page=2)
    assert [a["id"] for a in page_one["data"]] == [third, second]
    assert [a["id"] for a in page_two["data"]] == [first]
    assert page_one["total"] == page_two["total"] == 3
    assert publishers.attempts(connection["id"], page=3, limit=2)["data"] == []

    failed = publishers.attempts(connection["id"], status="failed")
    assert [a["id"] for a in failed["data"]] == [second] and failed["total"] == 1
    succeeded = publishers.attempts(connection["id"], status="succeeded")
    assert [a["id"] for a in succeeded["data"]] == [third, first] and succeeded["total"] == 2
    assert publishers.attempts(connection["id"], status="scheduled")["total"] == 0

    # Another connection's attempts are its own.
    assert publishers.attempts(other_target["id"]) == {
        "data": [],
        "total": 0,
        "page": 1,
        "limit": 20,
    }


@pytest.mark.parametrize(
    "query",
    [{"limit": 0}, {"limit": 101}, {"page": 0}, {"status": "done"}],
)
def test_list_attempts_refuses_out_of_bounds_queries(publishers, wp, query):
    connection = publishers.create_wordpress(wp)
    response = publishers.request(
        "publishers.listAttempts", {"id": connection["id"], **query}, role="member"
    )
    assert bad_fields(response) == list(query)


# --- roles --------------------------------------------------------------------------------------


@pytest.mark.own_org
@pytest.mark.parametrize("role", ["member", "editor"])
def test_members_and_editors_read_but_only_admins_manage(publishers, wp, role):
    connection = publishers.create_wordpress(wp)
    assert publishers.ok("publishers.list", role=role)["total"] == 1
    assert publishers.ok("publishers.getById", {"id": connection["id"]}, role=role)["id"]
    assert (
        publishers.ok("publishers.listAttempts", {"id": connection["id"]}, role=role)["total"] == 0
    )

    for operation, data in (
        ("publishers.create", wordpress_body(wp, name="Mine")),
        ("publishers.update", {"id": connection["id"], "name": "Mine"}),
        ("publishers.delete", {"id": connection["id"]}),
        ("publishers.test", {"id": connection["id"]}),
    ):
        problem(publishers.request(operation, data, role=role), 403, "FORBIDDEN")
    assert publishers.list()["data"] == [publishers.get(connection["id"])]
    assert publishers.get(connection["id"])["name"] == connection["name"]
    assert wp.requests == []  # the refused test never reached the target


def test_without_a_token_nothing_is_answered(call, wp, publishers):
    connection = publishers.create_wordpress(wp)
    response = call("publishers.getById", {"id": connection["id"]}, org=publishers.org)
    problem(response, 401, "UNAUTHORIZED")


# --- tenancy ------------------------------------------------------------------------------------


@pytest.mark.own_org
def test_another_organization_cannot_see_or_touch_a_connection(publishers, other, wp):
    connection = publishers.create_wordpress(wp)
    mine = other.create_webhook(NOWHERE)
    for operation, data in (
        ("publishers.getById", {"id": connection["id"]}),
        ("publishers.update", {"id": connection["id"], "name": "Taken"}),
        ("publishers.update", {"id": connection["id"], "isDefault": True}),
        ("publishers.delete", {"id": connection["id"]}),
        ("publishers.test", {"id": connection["id"]}),
        ("publishers.listAttempts", {"id": connection["id"]}),
    ):
        problem(other.request(operation, data), 404, "NOT_FOUND")
    assert other.ids() == [mine["id"]]
    assert publishers.ids() == [connection["id"]]
    shown = publishers.get(connection["id"])
    assert shown["name"] == connection["name"] and shown["is_default"] is True
    assert wp.requests == []
    # Each organization has its own default.
    assert other.get(mine["id"])["is_default"] is True


def job_body(name: str, connection_id: str) -> dict[str, Any]:
    """A jobs.create body: a paused job that publishes to the connection."""
    return {
        "name": name,
        "topics": ["Notes"],
        "status": "paused",
        "publisherConnectionId": connection_id,
    }


def test_jobs_and_drafts_cannot_name_another_organizations_connection(publishers, other, wp):
    connection = publishers.create_wordpress(wp)
    other_drafts = Drafts.of(other)

    response = other.request("jobs.create", job_body("Borrowed", connection["id"]), role="editor")
    problem(response, 404, "NOT_FOUND")

    job_id = other_drafts.job()
    response = other.request(
        "jobs.update", {"id": job_id, "publisherConnectionId": connection["id"]}, role="editor"
    )
    problem(response, 404, "NOT_FOUND")

    draft = other_drafts.approve(other_drafts.create("Theirs", content="<p>Body.</p>")["id"])
    response = other.try_publish(draft["id"], publisherConnectionId=connection["id"])
    problem(response, 404, "NOT_FOUND")
    assert wp.posts == {} and wp.requests == []
    assert publishers.attempts(connection["id"])["total"] == 0


def test_jobs_take_a_connection_of_their_own_organization(publishers, wp):
    connection = publishers.create_wordpress(wp)
    job = publishers.ok("jobs.create", job_body("Weekly", connection["id"]), role="editor")
    assert job["publisher_connection_id"] == connection["id"]
    publishers.delete(connection["id"])
    response = publishers.request(
        "jobs.update", {"id": job["id"], "publisherConnectionId": connection["id"]}, role="editor"
    )
    problem(response, 404, "NOT_FOUND")


# --- at rest ------------------------------------------------------------------------------------


def test_credentials_and_signing_secret_are_encrypted_at_rest(publishers, run, settings):
    password = "abcd EFGH 1234 ijkl MNOP 5678"
    with WordPressServer(application_password=password) as wp:
        blog = publishers.create_wordpress(wp)
    hook = publishers.create_webhook(NOWHERE)

    async def scenario(db: Database) -> dict[str, PublisherConnection]:
        async with db.unit_of_work() as session:
            rows = await session.execute(
                select(PublisherConnection).where(
                    PublisherConnection.id.in_([uuid.UUID(blog["id"]), uuid.UUID(hook["id"])])
                )
            )
            return {str(row.id): row for row in rows.scalars()}

    rows = run(scenario)
    stored = rows[blog["id"]]
    assert stored.credentials_sealed
    for plain in (password, password.replace(" ", "")):
        assert plain not in stored.credentials_sealed
        assert plain not in str(stored.config)
    # Sealed with the suite's key: it opens to exactly what was given.
    assert vault(settings).open(stored.credentials_sealed) == {
        "username": "eda",
        "application_password": password,
    }

    secret = hook["signing_secret"]
    sealed = rows[hook["id"]].signing_secret_sealed
    assert sealed and secret not in sealed and secret.removeprefix("whsec_") not in sealed
    assert vault(settings).open(sealed) == secret
    assert rows[hook["id"]].credentials_sealed is None
