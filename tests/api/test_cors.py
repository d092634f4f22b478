"""CORS at the HTTP level (a browser's view: tests/chat/test_browser.py): none at all by default;
with CONTENTPLATFORM_CORS_ORIGINS, preflights answered for those origins alone, every answer to
them (errors too) readable with the headers a client needs, and an origin not listed given no
CORS header whatever it asks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from contentplatform.config import Settings
from tests.support.problems import problem
from tests.support.servers import second_service

ALLOWED = "https://app.example.test"
ALSO = "http://localhost:5173"
STRANGER = "https://evil.example.test"


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def preflight(client: httpx.Client, origin: str, method: str, path: str, headers: str = ""):
    sent = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        sent["Access-Control-Request-Headers"] = headers
    return client.options(path, headers=sent)


@pytest.fixture(scope="module")
def browsers(settings_with: Any) -> Iterator[httpx.Client]:
    """A second service on the suite's database, allowing two origins (one written with a
    trailing slash and in capitals, as an operator might)."""
    settings = settings_with(cors_origins=["HTTPS://App.Example.Test/", ALSO])
    with second_service(settings) as running, running.client() as http:
        yield http


def test_without_origins_there_is_no_cors_at_all(client: httpx.Client, token: Any, org: str):
    asked = preflight(client, ALLOWED, "GET", "/v1/system/whoami", "authorization")
    problem(asked, 405, "BAD_REQUEST")  # as today: OPTIONS is no method of the API
    assert cors_headers(asked) == {}
    headers = {"Origin": ALLOWED, "Authorization": f"Bearer {token(org, 'u1', 'member')}"}
    answered = client.get("/v1/system/whoami", headers={**headers, "x-idp-org-id": org})
    assert answered.status_code == 200
    assert cors_headers(answered) == {}


def test_an_allowed_origin_is_preflighted_and_reads_answers_and_errors(
    browsers: httpx.Client, token: Any, org: str
):
    asked = preflight(
        browsers,
        ALLOWED,
        "POST",
        "/v1/chat/messages",
        "authorization, content-type, x-idp-org-id, last-event-id, x-request-id",
    )
    assert asked.status_code == 200, asked.text
    found = cors_headers(asked)
    assert found["access-control-allow-origin"] == ALLOWED
    assert set(found["access-control-allow-methods"].split(", ")) == {
        "GET",
        "POST",
        "PUT",
        "PATCH",
        "DELETE",
    }
    allowed = set(found["access-control-allow-headers"].split(", "))
    assert {"authorization", "content-type", "x-idp-org-id", "last-event-id"} <= allowed
    assert "x-tenant-id" in allowed  # a public feed's input header, as operations declare it
    assert found["access-control-max-age"] == "600"
    assert "access-control-allow-credentials" not in found  # bearer tokens, never cookies
    assert preflight(browsers, ALSO, "PATCH", "/v1/drafts/x", "content-type").status_code == 200

    signed = {"Authorization": f"Bearer {token(org, 'u1', 'member')}", "x-idp-org-id": org}
    for headers, status in ((signed, 200), ({}, 401)):
        answered = browsers.get("/v1/system/whoami", headers={"Origin": ALLOWED, **headers})
        assert answered.status_code == status
        found = cors_headers(answered)
        assert found["access-control-allow-origin"] == ALLOWED
        exposed = set(found["access-control-expose-headers"].split(", "))
        assert exposed == {"x-request-id", "retry-after"}
        assert "Origin" in answered.headers["vary"]


def test_an_origin_not_listed_gets_no_cors_header(browsers: httpx.Client, token: Any, org: str):
    asked = preflight(browsers, STRANGER, "GET", "/v1/system/whoami", "authorization")
    body = problem(asked, 400, "BAD_REQUEST")
    assert "origin" in body["detail"]
    assert cors_headers(asked) == {}
    signed = {"Authorization": f"Bearer {token(org, 'u1', 'member')}", "x-idp-org-id": org}
    answered = browsers.get("/v1/system/whoami", headers={"Origin": STRANGER, **signed})
    assert answered.status_code == 200  # served (no preflight needed to ask) but unreadable
    assert cors_headers(answered) == {}
    assert "Origin" in answered.headers["vary"]  # a cache keeps the allowed origin's apart
    # Same scheme and host, another port: another origin.
    other_port = preflight(browsers, "https://app.example.test:8443", "GET", "/v1/system/whoami")
    problem(other_port, 400, "BAD_REQUEST")


def test_an_allowed_origin_asking_another_method_or_header_is_refused(browsers: httpx.Client):
    for method, headers, refused in (
        ("TRACE", "", "method"),
        ("GET", "authorization, x-custom-thing", "headers"),
    ):
        asked = preflight(browsers, ALLOWED, method, "/v1/system/whoami", headers)
        assert refused in problem(asked, 400, "BAD_REQUEST")["detail"]
        assert cors_headers(asked) == {}


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        (["https://App.Example.com/"], ["https://app.example.com"]),
        (["http://localhost:3000", "http://localhost:3000/"], ["http://localhost:3000"]),
        (["http://[::1]:8080"], ["http://[::1]:8080"]),
        ([], []),
    ],
)
def test_origins_are_kept_as_browsers_send_them(given: list[str], kept: list[str]):
    assert Settings(_env_file=None, cors_origins=given).cors_origins == kept  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "origin", ["*", "https://app.example.com/path", "app.example.com", "ftp://x.test", "https://"]
)
def test_anything_but_an_origin_is_refused_at_start(origin: str):
    with pytest.raises(ValidationError, match="CONTENTPLATFORM_CORS_ORIGINS"):
        Settings(_env_file=None, cors_origins=[origin])  # type: ignore[call-arg]
