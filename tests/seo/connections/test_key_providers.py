"""seo.connect and seo.testConnection for the key providers, over REST and RPC, on a second
service pointed at small stand-ins of DataForSEO (GET /v3/appendix/user_data, Basic auth) and
of the OpenAI-compatible engines (GET /models; Perplexity a 1-token completion) and of
Anthropic (GET /v1/models, x-api-key and anthropic-version): credentials are
checked with that one call before anything is stored, and never shown again."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from contentplatform.config import Settings
from tests.conftest import Caller
from tests.seo.connections.support import Seo, connection_row
from tests.support.problems import problem
from tests.support.servers import StubServer, second_service

LOGIN, PASSWORD = "ada@example.com", "dfs-right-password-4821"
API_KEY = "sk-right-key-0123456789abcdef"


def _dataforseo(_path: str, headers: dict[str, str], _body: bytes) -> tuple[int, dict, Any]:
    expected = "Basic " + base64.b64encode(f"{LOGIN}:{PASSWORD}".encode()).decode()
    if headers.get("authorization", headers.get("Authorization")) != expected:
        return 401, {}, {"status_code": 40100, "status_message": "You are not authorized."}
    return 200, {}, {"status_code": 20000, "status_message": "Ok.", "tasks": []}


def _bearer(_path: str, headers: dict[str, str], _body: bytes) -> tuple[int, dict, Any]:
    if headers.get("authorization", headers.get("Authorization")) != f"Bearer {API_KEY}":
        return 401, {}, {"error": {"message": "Incorrect API key provided.", "type": "auth"}}
    return 200, {}, {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]}


def _anthropic(_path: str, headers: dict[str, str], _body: bytes) -> tuple[int, dict, Any]:
    lowered = {name.lower(): value for name, value in headers.items()}
    if lowered.get("x-api-key") != API_KEY or lowered.get("anthropic-version") != "2023-06-01":
        return (
            401,
            {},
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": "invalid x-api-key"},
            },
        )
    return (
        200,
        {},
        {"data": [{"id": "claude-3-5-haiku-latest", "type": "model"}], "has_more": False},
    )


@pytest.fixture(scope="module")
def providers() -> Iterator[StubServer]:
    with StubServer() as stub:
        stub.route("GET", "/v3/appendix/user_data", _dataforseo)
        stub.route("GET", "/openai/models", _bearer)
        stub.route("GET", "/gemini/models", _bearer)
        stub.route("POST", "/perplexity/chat/completions", _bearer)
        stub.route("GET", "/anthropic/v1/models", _anthropic)
        yield stub


@pytest.fixture(scope="module")
def keyed_settings(settings_with: Callable[..., Settings], providers: StubServer) -> Settings:
    return settings_with(
        dataforseo_api_base=providers.url,
        openai_api_base=f"{providers.url}/openai",
        gemini_api_base=f"{providers.url}/gemini",
        perplexity_api_base=f"{providers.url}/perplexity",
        anthropic_api_base=f"{providers.url}/anthropic",
    )


@pytest.fixture(scope="module")
def keyed_client(keyed_settings: Settings) -> Iterator[Any]:
    with second_service(keyed_settings) as running, running.in_process_client() as client:
        yield client


@pytest.fixture(params=["rest", "rpc"])
def keyed(
    request: pytest.FixtureRequest,
    keyed_client: Any,
    openapi_document: dict[str, Any],
    client: Any,
    token: Any,
    org: str,
) -> Seo:
    return Seo(Caller(keyed_client, openapi_document, request.param), client, token, org)


CONNECTS = [
    (
        "dataforseo",
        {"login": LOGIN, "password": PASSWORD},
        {"login": LOGIN, "password": "wrong-pw-123"},
    ),
    ("openai", {"apiKey": API_KEY}, {"apiKey": "sk-wrong-key-00000000"}),
    ("gemini", {"apiKey": API_KEY}, {"apiKey": "sk-wrong-key-00000000"}),
    ("perplexity", {"apiKey": API_KEY}, {"apiKey": "sk-wrong-key-00000000"}),
    ("anthropic", {"apiKey": API_KEY}, {"apiKey": "sk-wrong-key-00000000"}),
]


@pytest.mark.parametrize(("provider", "right", "wrong"), CONNECTS)
def test_a_key_provider_is_checked_before_it_is_saved(
    keyed: Seo,
    keyed_settings: Settings,
    caplog: pytest.LogCaptureFixture,
    provider: str,
    right: dict[str, str],
    wrong: dict[str, str],
) -> None:
    caplog.set_level(logging.DEBUG)
    refused = keyed.request("seo.connect", {"provider": provider, "credentials": wrong})
    body = problem(refused, 400, "BAD_REQUEST")
    assert any(
        words in body["detail"]
        for words in ("not authorized", "Incorrect API key", "invalid x-api-key")
    )
    assert connection_row(keyed_settings, keyed.tenant_id, provider) is None
    connected = keyed.ok("seo.connect", {"provider": provider, "credentials": right})
    assert connected["status"] == "connected"
    assert connected["capabilities"]
    assert connected["credential_hint"].startswith("••••")
    if provider == "dataforseo":
        assert connected["account_label"] == LOGIN
    tested = keyed.ok("seo.testConnection", {"provider": provider})
    assert tested["ok"] is True and tested["status"] == "connected"
    listed = keyed.request("seo.listConnections", role="member")
    secret = right.get("password") or right["apiKey"]
    for text in (refused.text, json.dumps(connected), json.dumps(tested), listed.text, caplog.text):
        assert secret not in text and wrong.get("password", wrong.get("apiKey", "")) not in text
    row = connection_row(keyed_settings, keyed.tenant_id, provider)
    assert secret not in (row.credentials_sealed or "")
    assert row.credentials_sealed


def test_an_unreachable_provider_is_503_and_stores_nothing(
    keyed: Seo, keyed_settings: Settings, providers: StubServer
) -> None:
    # The stand-in has no route for this one's check: a 404 is no refusal of the key, so
    # nothing can be said of it: 503, retryable.
    providers.routes.pop(("GET", "/gemini/models"))
    try:
        answer = keyed.request(
            "seo.connect", {"provider": "gemini", "credentials": {"apiKey": API_KEY}}
        )
        body = problem(answer, 503, "INTERNAL_SERVER_ERROR")
        assert body["retryable"] is True
        assert connection_row(keyed_settings, keyed.tenant_id, "gemini") is None
    finally:
        providers.route("GET", "/gemini/models", _bearer)
