"""The JWKS cache through an identity-provider outage and a malformed key set."""

from __future__ import annotations

import asyncio

import pytest

from contentplatform import __version__
from contentplatform.auth.tokens import JwksCache
from contentplatform.kit.errors import InternalError
from tests.support.idp import SigningKey
from tests.support.servers import StubServer


def jwks_server(state: dict) -> StubServer:
    server = StubServer()
    server.route("GET", "/jwks", lambda *_: (state["status"], {}, state["body"]))
    return server


def fetches(server: StubServer) -> int:
    return len(server.requests)


def test_an_outage_keeps_the_last_keys_and_does_not_refetch_per_request():
    key = SigningKey("ES256")
    state = {"status": 200, "body": {"keys": [key.jwk]}}
    with jwks_server(state) as server:
        cache = JwksCache(f"{server.url}/jwks", cache_seconds=0, min_refetch_seconds=60)

        async def scenario() -> None:
            assert (await cache.key(key.kid)) is not None
            state["status"], state["body"] = 503, {"error": "down"}
            for _ in range(5):
                # Stale (cache_seconds=0) but refetching is throttled: the old key still works.
                assert (await cache.key(key.kid)) is not None

        asyncio.run(scenario())
        assert fetches(server) == 1


def test_the_fetch_names_the_service_in_its_user_agent():
    key = SigningKey("ES256")
    with jwks_server({"status": 200, "body": {"keys": [key.jwk]}}) as server:
        cache = JwksCache(f"{server.url}/jwks", cache_seconds=300, min_refetch_seconds=0)
        assert asyncio.run(cache.key(key.kid)) is not None
        [fetch] = server.requests
        headers = {name.lower(): value for name, value in fetch["headers"].items()}
        assert headers["user-agent"] == f"contentplatform/{__version__}"


def test_no_keys_at_all_is_a_server_error_not_a_client_one():
    state = {"status": 503, "body": {"error": "down"}}
    with jwks_server(state) as server:
        cache = JwksCache(f"{server.url}/jwks", cache_seconds=300, min_refetch_seconds=0)
        with pytest.raises(InternalError):
            asyncio.run(cache.key("any"))


@pytest.mark.parametrize("body", [["not", "an", "object"], {"keys": "nope"}, {"nokeys": []}])
def test_a_malformed_document_is_treated_as_unavailable(body):
    with jwks_server({"status": 200, "body": body}) as server:
        cache = JwksCache(f"{server.url}/jwks", cache_seconds=300, min_refetch_seconds=0)
        with pytest.raises(InternalError):
            asyncio.run(cache.key("any"))


def test_one_unusable_key_does_not_discard_the_others():
    good = SigningKey("RS256")
    bad = {"kty": "RSA", "kid": "broken", "n": "!!", "e": "AQAB"}
    junk = "not a key"
    state = {"status": 200, "body": {"keys": [bad, junk, good.jwk]}}
    with jwks_server(state) as server:
        cache = JwksCache(f"{server.url}/jwks", cache_seconds=300, min_refetch_seconds=0)
        assert asyncio.run(cache.key(good.kid)) is not None
        assert asyncio.run(cache.key("broken")) is None
