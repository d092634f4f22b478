"""Stock photos on a service without a provider's key (the suite's own): search and import are
a 400 naming the provider, and nothing is sent anywhere."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.media.support import Media
from tests.support.network import NetworkGuard, no_outside_connections
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

media = org_fixture(Media)


@pytest.fixture(autouse=True)
def network() -> Iterator[NetworkGuard]:
    with no_outside_connections() as guard:
        yield guard


@pytest.mark.parametrize("provider", [None, "unsplash"])
def test_search_without_a_configured_provider_is_400(
    media: Media, network: NetworkGuard, provider: str | None
) -> None:
    query = {"query": "garden"} | ({"provider": provider} if provider else {})
    body = problem(media.request("media.searchStock", query, role="member"), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["provider"]
    assert "configured" in body["detail"]
    assert network.refused == []


def test_import_without_a_configured_provider_is_400(media: Media) -> None:
    data = {"stock": {"provider": "unsplash", "assetId": "abc"}}
    body = problem(media.request("media.confirmUpload", data), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["stock.provider"]
    assert "not configured" in body["detail"]
    assert media.listed()["total"] == 0
