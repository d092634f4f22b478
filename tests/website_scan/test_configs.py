"""websiteScan.listConfigs, createConfig, getConfig, updateConfig and deleteConfig over REST and
RPC: defaults and bounds, the start URL through the outbound guard (never sent anywhere), path
patterns compiled and probed, the one config per start URL, robots.txt only turned off by an
admin, the roles, soft delete, and a second organization that sees none of it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.kit.errors import PlatformError
from contentplatform.website_scan import schemas, service
from contentplatform.website_scan.errors import StartUrlRefused
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.website_scan.support import SITE, Scanner, site_url

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

scanner = org_fixture(Scanner)
other = org_fixture(Scanner, second=True)

CONFIG_FIELDS = {
    "id",
    "tenant_id",
    "name",
    "start_url",
    "host",
    "include_patterns",
    "exclude_patterns",
    "max_pages",
    "max_depth",
    "respect_robots_txt",
    "requests_per_second",
    "concurrency",
    "sitemap_mode",
    "allow_subdomains",
    "check_external_links",
    "render_javascript",
    "user_agent",
    "schedule",
    "last_run",
    "created_at",
    "updated_at",
}


def test_an_editor_creates_a_config_with_the_defaults(scanner: Scanner) -> None:
    url = site_url("blog/")
    config = scanner.config(name="  Garden <b>shop</b> ", startUrl=url)
    assert set(config) == CONFIG_FIELDS
    assert config["tenant_id"] == str(scanner.tenant_id)
    assert config["name"] == "Garden shop"  # plain text, trimmed
    assert (config["start_url"], config["host"]) == (url, "127.0.0.1")
    assert {
        key: config[key]
        for key in CONFIG_FIELDS
        - {"id", "tenant_id", "name", "start_url", "host", "created_at", "updated_at"}
    } == {
        "include_patterns": [],
        "exclude_patterns": [],
        "max_pages": 200,
        "max_depth": 3,
        "respect_robots_txt": True,
        "requests_per_second": 2.0,
        "concurrency": 2,
        "sitemap_mode": "include",
        "allow_subdomains": False,
        "check_external_links": False,
        "render_javascript": False,
        "user_agent": schemas.USER_AGENT,
        "schedule": None,
        "last_run": None,
    }
    assert config["user_agent"].startswith("contentplatform-crawler/")
    assert scanner.get(config["id"]) == config


def test_every_setting_is_kept_as_given(scanner: Scanner) -> None:
    given: dict[str, Any] = {
        "includePatterns": ["^/blog/", r"^/shop/\d+$"],
        "excludePatterns": ["/tag/", r"\?page="],
        "maxPages": 5000,
        "maxDepth": 0,
        "requestsPerSecond": 0.2,
        "concurrency": 1,
        "sitemapMode": "only",
        "allowSubdomains": True,
        "checkExternalLinks": True,
        "renderJavascript": False,
    }
    config = scanner.config(**given)
    assert config["include_patterns"] == ["^/blog/", r"^/shop/\d+$"]
    assert config["exclude_patterns"] == ["/tag/", r"\?page="]
    assert (config["max_pages"], config["max_depth"]) == (5000, 0)
    assert (config["requests_per_second"], config["concurrency"]) == (0.2, 1)
    assert (config["sitemap_mode"], config["allow_subdomains"]) == ("only", True)
    assert config["check_external_links"] is True


@pytest.mark.own_org
def test_the_start_url_is_normalized(scanner: Scanner) -> None:
    config = scanner.config(startUrl="HTTP://LocalHost:9/Shop/?b=2&a=1#reviews")
    assert config["start_url"] == "http://localhost:9/Shop/?b=2&a=1"
    assert config["host"] == "localhost"
    bare = scanner.config(startUrl="http://127.0.0.1:80")
    assert bare["start_url"] == "http://127.0.0.1/"


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "n" * 101}, "name"),
        ({"startUrl": SITE + "/" + "a" * 2048}, "startUrl"),
        ({"maxPages": 0}, "maxPages"),
        ({"maxPages": 5001}, "maxPages"),
        ({"maxDepth": -1}, "maxDepth"),
        ({"maxDepth": 11}, "maxDepth"),
        ({"requestsPerSecond": 0.1}, "requestsPerSecond"),
        ({"requestsPerSecond": 10.5}, "requestsPerSecond"),
        ({"concurrency": 0}, "concurrency"),
        ({"concurrency": 3}, "concurrency"),
        ({"sitemapMode": "everything"}, "sitemapMode"),
        ({"includePatterns": ["^/ok/", "("]}, "includePatterns.1"),
        ({"excludePatterns": ["[a-"]}, "excludePatterns.0"),
        ({"includePatterns": [""]}, "includePatterns.0"),
        ({"includePatterns": ["a" * 201]}, "includePatterns.0"),
        ({"excludePatterns": [f"/p{i}/" for i in range(51)]}, "excludePatterns"),
        # Backtracks without end on a long path: refused when given, not at every URL.
        ({"excludePatterns": ["(a+)+$"]}, "excludePatterns.0"),
        ({"includePatterns": ["^/(a|aa)+$"]}, "includePatterns.0"),
        ({"renderJavascript": True}, "renderJavascript"),
        ({"colour": "green"}, "colour"),
    ],
)
def test_a_setting_out_of_bounds_is_400_naming_it(
    scanner: Scanner, fields: dict[str, Any], path: str
) -> None:
    data = {"name": "Shop", "startUrl": site_url(), **fields}
    body = problem(scanner.request("websiteScan.createConfig", data), 400, "BAD_REQUEST")
    assert path in {error["path"] for error in body["errors"]}, body
    assert scanner.listed()["total"] == 0


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://127.0.0.1/", "Only"),
        ("http://user:secret@127.0.0.1:9/", "credentials"),
        ("http://10.0.0.7/", "a private address"),
        ("http://192.168.1.1/", "a private address"),
        ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
        ("http://[::ffff:10.0.0.1]/", "a private address"),
        ("http://100.64.0.1/", "a shared (CGNAT) address"),
        ("http://0.0.0.0/", "address"),
        ("not a url", "Only"),
    ],
)
def test_a_start_url_the_guard_refuses_is_400_and_nothing_is_stored(
    scanner: Scanner, url: str, reason: str
) -> None:
    response = scanner.request("websiteScan.createConfig", {"name": "Shop", "startUrl": url})
    body = problem(response, 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["startUrl"]
    assert reason in body["detail"]
    assert "secret" not in response.text
    assert scanner.listed()["total"] == 0


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/", "Only https"),
        ("https://127.0.0.1/", "a loopback address"),
        ("https://[::1]:8443/", "a loopback address"),
        ("https://localhost/", "a loopback address"),
    ],
)
def test_without_the_operators_allowance_loopback_and_http_are_refused(
    settings_with: Any, url: str, reason: str
) -> None:
    """The suite allows http and loopback (its sites listen there); a service as deployed does
    not. Checked through the service's own function: no request is made."""
    deployed: Settings = settings_with(outbound_allow_http=False, outbound_allow_loopback=False)
    with pytest.raises(StartUrlRefused) as refused:
        asyncio.run(service.checked_start_url(deployed, url))
    assert reason in refused.value.detail
    assert [error.path for error in refused.value.errors or []] == ["startUrl"]
    assert isinstance(refused.value, PlatformError) and refused.value.http_status == 400


def test_one_config_per_start_url(scanner: Scanner, other: Scanner) -> None:
    url = site_url("blog/")
    first = scanner.config(startUrl=url)
    # The same URL spelled otherwise is the same site.
    again = url.replace("http://", "HTTP://") + "#top"
    response = scanner.request("websiteScan.createConfig", {"name": "Again", "startUrl": again})
    body = problem(response, 409, "CONFLICT")
    assert first["id"] in body["detail"] and body["configId"] == first["id"]

    second = scanner.config(startUrl=site_url())
    moved = scanner.request("websiteScan.updateConfig", {"id": second["id"], "startUrl": url})
    problem(moved, 409, "CONFLICT")
    assert scanner.get(second["id"])["start_url"] == second["start_url"]
    # Setting a config's own URL again is no conflict.
    kept = scanner.ok("websiteScan.updateConfig", {"id": first["id"], "startUrl": url})
    assert kept["start_url"] == url

    # Another organization may crawl the same site.
    assert other.config(startUrl=url)["start_url"] == url
    # A deleted config frees its URL.
    scanner.ok("websiteScan.deleteConfig", {"id": first["id"]}, role="admin")
    assert scanner.config(startUrl=url)["start_url"] == url


def test_an_update_changes_only_what_it_gives(scanner: Scanner) -> None:
    config = scanner.config(includePatterns=["^/blog/"], maxPages=50)
    moved = site_url("news/")
    updated = scanner.ok(
        "websiteScan.updateConfig",
        {
            "id": config["id"],
            "name": "Garden news",
            "startUrl": moved,
            "excludePatterns": ["/draft/"],
            "maxDepth": 10,
            "requestsPerSecond": 10,
            "maxPages": None,  # null: unchanged
        },
    )
    assert updated["name"] == "Garden news"
    assert updated["start_url"] == moved
    assert updated["include_patterns"] == ["^/blog/"]
    assert updated["exclude_patterns"] == ["/draft/"]
    assert (updated["max_depth"], updated["max_pages"]) == (10, 50)
    assert updated["requests_per_second"] == 10.0
    assert updated["created_at"] == config["created_at"]
    assert updated["updated_at"] > config["updated_at"]
    assert scanner.get(config["id"]) == updated

    cleared = scanner.ok("websiteScan.updateConfig", {"id": config["id"], "includePatterns": []})
    assert cleared["include_patterns"] == []


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"maxPages": 5001}, "maxPages"),
        ({"maxDepth": 11}, "maxDepth"),
        ({"concurrency": 5}, "concurrency"),
        ({"includePatterns": ["(unclosed"]}, "includePatterns.0"),
        ({"name": ""}, "name"),
        ({"startUrl": "http://10.1.2.3/"}, "startUrl"),
        ({"renderJavascript": True}, "renderJavascript"),
    ],
)
def test_an_update_out_of_bounds_is_400_and_changes_nothing(
    scanner: Scanner, fields: dict[str, Any], path: str
) -> None:
    config = scanner.config()
    response = scanner.request("websiteScan.updateConfig", {"id": config["id"], **fields})
    body = problem(response, 400, "BAD_REQUEST")
    assert path in {error["path"] for error in body["errors"]}
    assert scanner.get(config["id"]) == config


def test_only_an_admin_turns_off_robots_txt(scanner: Scanner) -> None:
    data = {"name": "Shop", "startUrl": site_url(), "respectRobotsTxt": False}
    body = problem(scanner.request("websiteScan.createConfig", data), 403, "FORBIDDEN")
    assert "robots.txt" in body["detail"]
    config = scanner.config(role="admin", **data)
    assert config["respect_robots_txt"] is False

    polite = scanner.config()
    off = {"id": polite["id"], "respectRobotsTxt": False}
    problem(scanner.request("websiteScan.updateConfig", off), 403, "FORBIDDEN")
    assert scanner.get(polite["id"])["respect_robots_txt"] is True
    # An editor may change the other settings of an admin's config, and turn robots.txt on.
    assert scanner.ok("websiteScan.updateConfig", {"id": config["id"], "maxDepth": 1})
    on = scanner.ok("websiteScan.updateConfig", {"id": config["id"], "respectRobotsTxt": True})
    assert on["respect_robots_txt"] is True


@pytest.mark.own_org
def test_the_list_pages_searches_and_filters(scanner: Scanner) -> None:
    shop = scanner.config(name="Garden shop")
    blog = scanner.config(name="Garden blog", startUrl=site_url("journal/"))
    news = scanner.config(name="News")
    assert scanner.schedule(news["id"]).status_code == 200

    listed = scanner.listed()
    assert (listed["total"], listed["page"], listed["limit"]) == (3, 1, 20)
    assert [c["id"] for c in listed["data"]] == [news["id"], blog["id"], shop["id"]]  # newest first
    assert listed["data"][0]["schedule"]["cron_expression"] == "30 2 * * *"
    assert listed["data"][1] == blog

    assert [c["id"] for c in scanner.listed(search="GARDEN")["data"]] == [blog["id"], shop["id"]]
    assert [c["id"] for c in scanner.listed(search="journal")["data"]] == [blog["id"]]
    assert scanner.listed(search="100%")["total"] == 0
    assert [c["id"] for c in scanner.listed(scheduled=True)["data"]] == [news["id"]]
    assert [c["id"] for c in scanner.listed(scheduled=False)["data"]] == [blog["id"], shop["id"]]

    second = scanner.listed(page=2, limit=2)
    assert (second["total"], [c["id"] for c in second["data"]]) == (3, [shop["id"]])
    for query, path in (
        ({"limit": 101}, "limit"),
        ({"page": 0}, "page"),
        ({"search": "s" * 256}, "search"),
    ):
        response = scanner.request("websiteScan.listConfigs", query, role="member")
        assert path in {e["path"] for e in problem(response, 400, "BAD_REQUEST")["errors"]}


@pytest.mark.own_org
def test_delete_hides_the_config_everywhere(scanner: Scanner) -> None:
    config = scanner.config()
    kept = scanner.config()
    assert scanner.schedule(config["id"]).status_code == 200

    assert scanner.ok("websiteScan.deleteConfig", {"id": config["id"]}, role="admin") == {
        "success": True
    }
    ref = {"id": config["id"]}
    for operation, data, role in (
        ("websiteScan.getConfig", ref, "member"),
        ("websiteScan.updateConfig", {**ref, "name": "Back"}, "editor"),
        ("websiteScan.deleteConfig", ref, "admin"),
        ("websiteScan.setSchedule", {**ref, "cronExpression": "0 3 * * *"}, "editor"),
        ("websiteScan.deleteSchedule", ref, "admin"),
    ):
        body = problem(scanner.request(operation, data, role=role), 404, "NOT_FOUND")
        assert config["id"] in body["detail"], operation
    listed = scanner.listed()
    assert [c["id"] for c in listed["data"]] == [kept["id"]]
    assert scanner.listed(scheduled=True)["total"] == 0


@pytest.mark.own_org
def test_each_operation_needs_its_role(scanner: Scanner) -> None:
    config = scanner.config()
    ref = {"id": config["id"]}
    refused = (
        ("websiteScan.createConfig", {"name": "Shop", "startUrl": site_url()}, "member"),
        ("websiteScan.updateConfig", {**ref, "name": "Renamed"}, "member"),
        ("websiteScan.deleteConfig", ref, "member"),
        ("websiteScan.deleteConfig", ref, "editor"),
    )
    for operation, data, role in refused:
        problem(scanner.request(operation, data, role=role), 403, "FORBIDDEN")
    assert scanner.get(config["id"]) == config
    assert scanner.listed(role="member")["total"] == 1


@pytest.mark.own_org
def test_another_organization_sees_none_of_it(scanner: Scanner, other: Scanner) -> None:
    config = scanner.config()
    assert scanner.schedule(config["id"]).status_code == 200
    ref = {"id": config["id"]}
    for operation, data in (
        ("websiteScan.getConfig", ref),
        ("websiteScan.updateConfig", {**ref, "name": "Mine now", "maxPages": 1}),
        ("websiteScan.deleteConfig", ref),
        ("websiteScan.setSchedule", {**ref, "cronExpression": "0 3 * * *"}),
        ("websiteScan.deleteSchedule", ref),
    ):
        problem(other.request(operation, data, role="admin"), 404, "NOT_FOUND")
    assert other.listed()["total"] == 0
    assert other.listed(search="Garden")["total"] == 0
    mine = scanner.get(config["id"])
    assert mine["name"] == config["name"] and mine["schedule"]["cron_expression"] == "30 2 * * *"
