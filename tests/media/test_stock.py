"""media.searchStock and the stock import of media.confirmUpload, over REST and RPC, against a
service of their own whose Unsplash is the stand-in (tests/support/targets/unsplash.py): what
is sent (key, version, paging, orientation), how results are mapped (referral links, credit,
hotlinking), the 10-minute cache, the provider's failures as 503, the download tracking on
import, de-duplication, the licence only an admin may change, and nothing beyond loopback."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from contentplatform.media import service
from tests.conftest import Caller
from tests.media.support import Media
from tests.support.network import NetworkGuard, no_outside_connections
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.servers import AppServer, second_service
from tests.support.targets.scripted import Failure
from tests.support.targets.unsplash import UnsplashServer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

APP = "cp_tests"
REFERRAL = f"utm_source={APP}&utm_medium=referral"


@pytest.fixture(scope="module")
def unsplash() -> Iterator[UnsplashServer]:
    with UnsplashServer() as server:
        yield server


@pytest.fixture(scope="module")
def stock_service(settings_with: Any, unsplash: UnsplashServer) -> Iterator[AppServer]:
    settings = settings_with(
        stock_unsplash_base_url=unsplash.url,
        stock_unsplash_access_key=unsplash.access_key,
        stock_unsplash_app_name=APP,
    )
    with second_service(settings) as running:
        yield running


@pytest.fixture(scope="module")
def stock_client(stock_service: AppServer) -> Iterator[httpx.Client]:
    with stock_service.in_process_client() as http:
        yield http


@pytest.fixture(scope="module")
def stock_document(stock_client: httpx.Client) -> dict[str, Any]:
    return stock_client.get("/openapi.json").json()


@pytest.fixture(params=["rest", "rpc"])
def call(request: pytest.FixtureRequest, stock_client: httpx.Client, stock_document) -> Caller:
    """The suite's `call`, reaching the stock service (same database, its own settings)."""
    return Caller(stock_client, stock_document, request.param)


@pytest.fixture(autouse=True)
def network() -> Iterator[NetworkGuard]:
    with no_outside_connections() as guard:
        yield guard


media = org_fixture(Media)
other = org_fixture(Media, second=True)


def word() -> str:
    """A word of the test's own: searches and photos of one test meet no other test's (nor the
    cache's answers to them)."""
    return f"w{uuid.uuid4().hex[:10]}"


def photos(unsplash: UnsplashServer, topic: str) -> list[dict[str, Any]]:
    """Three photos about `topic`: landscape, portrait and square."""
    return [
        unsplash.add_photo(
            f"{topic}-land",
            description=f"A watering can in a {topic} garden",
            alt_description="green watering can on a path",
            author="Ada Gardener",
            username="ada",
            width=4000,
            height=3000,
            tags=(topic, "Watering"),
        ),
        unsplash.add_photo(
            f"{topic}-tall",
            description=f"Tall {topic} sunflowers",
            author="Bo Bloom",
            username="bo",
            width=2000,
            height=3000,
        ),
        unsplash.add_photo(
            f"{topic}-square", description=f"A square {topic} bed", width=2000, height=2000
        ),
    ]


def search(media: Media, role: str = "member", **query: Any) -> httpx.Response:
    return media.request("media.searchStock", query, role=role)


# --- search -----------------------------------------------------------------------------------


def test_search_sends_the_key_and_version_and_maps_the_results(
    media: Media, unsplash: UnsplashServer
) -> None:
    topic = word()
    photos(unsplash, topic)
    response = search(media, query=f"  {topic}   {topic}x ")
    assert response.status_code == 200, response.text
    page = response.json()
    assert (page["total"], page["page"], page["limit"]) == (3, 1, 20)
    first = page["data"][0]
    assert first == {
        "provider": "unsplash",
        "asset_id": f"{topic}-land",
        "thumb_url": f"https://images.unsplash.test/photo-{topic}-land?ixid=stand-in&w=400&fm=jpg",
        "preview_url": (
            f"https://images.unsplash.test/photo-{topic}-land?ixid=stand-in&w=1080&fm=jpg"
        ),
        "width": 4000,
        "height": 3000,
        "description": f"A watering can in a {topic} garden",
        "author_name": "Ada Gardener",
        "author_url": f"https://unsplash.test/@ada?{REFERRAL}",
        "source_url": f"https://unsplash.test/photos/{topic}-land?{REFERRAL}",
        "license_type": "unsplash",
        "attribution_text": "Photo by Ada Gardener on Unsplash",
        "hotlink_required": True,
    }
    assert [result["asset_id"] for result in page["data"]] == [
        f"{topic}-land",
        f"{topic}-tall",
        f"{topic}-square",
    ]
    (sent,) = unsplash.seen(path="/search/photos")[-1:]
    assert sent.query == {"query": f"{topic} {topic}x", "page": "1", "per_page": "20"}
    assert sent.headers["authorization"] == f"Client-ID {unsplash.access_key}"
    assert sent.headers["accept-version"] == "v1"
    assert sent.headers["user-agent"].startswith("contentplatform/")


def test_orientation_and_paging_go_to_the_provider(media: Media, unsplash: UnsplashServer) -> None:
    topic = word()
    photos(unsplash, topic)
    portrait = search(media, query=topic, orientation="portrait").json()
    assert [result["asset_id"] for result in portrait["data"]] == [f"{topic}-tall"]
    assert unsplash.seen(path="/search/photos")[-1].query["orientation"] == "portrait"
    second = search(media, query=topic, limit=1, page=2).json()
    assert [result["asset_id"] for result in second["data"]] == [f"{topic}-tall"]
    assert (second["total"], second["page"], second["limit"]) == (3, 2, 1)
    sent = unsplash.seen(path="/search/photos")[-1].query
    assert (sent["page"], sent["per_page"]) == ("2", "1")
    assert "orientation" not in sent


def test_the_same_search_is_answered_from_the_cache(
    media: Media, other: Media, unsplash: UnsplashServer
) -> None:
    topic = word()
    photos(unsplash, topic)
    before = len(unsplash.seen(path="/search/photos"))
    first = search(media, query=topic).json()
    assert len(unsplash.seen(path="/search/photos")) == before + 1
    # Again, and from another organization: the provider is not asked again.
    assert search(media, query=topic).json() == first
    assert search(other, query=topic).json() == first
    assert len(unsplash.seen(path="/search/photos")) == before + 1
    # Another page is another search.
    search(media, query=topic, page=2)
    assert len(unsplash.seen(path="/search/photos")) == before + 2


@pytest.mark.parametrize(
    ("failure", "retryable"),
    [
        (Failure(500), True),
        (Failure(503), True),
        (Failure(429), True),
        (Failure(403, headers={"x-ratelimit-remaining": "0"}), True),
        (Failure(401), False),
        (Failure(404), False),
        (Failure(400), False),
        (Failure(drop=True), True),
        (Failure(200, body=b"<html>not json</html>"), False),
        (Failure(200, body={"no": "results"}), False),
    ],
)
def test_a_failing_provider_is_503_and_not_cached(
    media: Media, unsplash: UnsplashServer, failure: Failure, retryable: bool
) -> None:
    topic = word()
    photos(unsplash, topic)
    unsplash.fail(failure, path="/search/photos")
    body = problem(search(media, query=topic), 503, "INTERNAL_SERVER_ERROR")
    assert body["retryable"] is retryable
    assert body["provider"] == "unsplash"
    assert unsplash.access_key not in body["detail"]
    assert search(media, query=topic).status_code == 200


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "a" * 201}, "query"),
        ({"query": "a\x00b"}, "query"),
        ({"query": "x", "limit": 31}, "limit"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "page": 0}, "page"),
        ({"query": "x", "orientation": "diagonal"}, "orientation"),
        ({"query": "x", "provider": "pexels"}, "provider"),
        ({"query": "x", "provider": "shutterstock"}, "provider"),
    ],
)
def test_search_refuses_what_is_out_of_bounds_or_unknown(
    media: Media, unsplash: UnsplashServer, query: dict[str, Any], field: str
) -> None:
    before = len(unsplash.requests)
    body = problem(search(media, **query), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}, body
    assert len(unsplash.requests) == before


def test_search_needs_a_token_and_names_unsplash_as_the_default(
    media: Media, call: Caller, unsplash: UnsplashServer
) -> None:
    problem(call("media.searchStock", {"query": "x"}, org=media.org), 401, "UNAUTHORIZED")
    topic = word()
    photos(unsplash, topic)
    assert search(media, query=topic, provider="Unsplash").status_code == 200


# --- import -----------------------------------------------------------------------------------


def stock(media: Media, asset_id: str, role: str = "editor", **extra: Any) -> httpx.Response:
    data = {"stock": {"provider": "unsplash", "assetId": asset_id}, **extra}
    return media.request("media.confirmUpload", data, role=role)


@pytest.mark.own_org
def test_an_import_tracks_the_download_and_hotlinks_the_photo(
    media: Media, unsplash: UnsplashServer
) -> None:
    topic = word()
    photo = photos(unsplash, topic)[0]
    response = stock(media, photo["id"], caption="Our can")
    assert response.status_code == 200, response.text
    asset = response.json()
    assert unsplash.downloads.count(photo["id"]) == 1
    (tracked,) = [r for r in unsplash.seen() if r.path == f"/photos/{photo['id']}/download"]
    assert tracked.headers["authorization"] == f"Client-ID {unsplash.access_key}"
    assert tracked.query == {"ixid": "stand-in"}

    assert asset["unchanged"] is False
    assert (asset["storage"], asset["source"]) == ("hotlink", "stock")
    assert (asset["provider"], asset["provider_asset_id"]) == ("unsplash", photo["id"])
    assert asset["url"] == photo["urls"]["regular"]
    assert asset["thumbnail_url"] == photo["urls"]["small"]
    assert asset["renditions"] == {}
    assert (asset["bytes"], asset["content_hash"]) == (None, None)
    assert (asset["width"], asset["height"]) == (4000, 3000)
    assert (asset["kind"], asset["mime_type"]) == ("image", "image/jpeg")
    assert asset["filename"] == f"unsplash-{photo['id']}.jpg"
    assert asset["title"] == f"A watering can in a {topic} garden"
    assert asset["alt_text"] == "green watering can on a path"
    assert asset["caption"] == "Our can"
    assert asset["tags"] == [topic, "Watering"]
    license = asset["license"]
    assert license["type"] == "unsplash"
    assert license["source_name"] == "Unsplash"
    assert license["source_url"] == f"https://unsplash.test/photos/{photo['id']}?{REFERRAL}"
    assert license["attribution"] == {
        "required": True,
        "text": "Photo by Ada Gardener on Unsplash",
        "author_name": "Ada Gardener",
        "author_url": f"https://unsplash.test/@ada?{REFERRAL}",
    }
    assert license["usage_rights"] == {
        "commercial": True,
        "editorial_only": False,
        "modification": True,
    }
    assert license["expires_at"] is None
    assert asset["license_status"] == "valid"
    assert media.get(asset["id"])["url"] == photo["urls"]["regular"]
    assert media.ids(source="stock") == [asset["id"]]

    # Attached, it carries its credit.
    draft = media.draft()
    attached = media.attach(asset["id"], draft, role="featured").json()
    assert attached["attribution_text"] == "Photo by Ada Gardener on Unsplash"


def test_the_same_photo_again_is_the_same_asset(
    media: Media, other: Media, unsplash: UnsplashServer
) -> None:
    photo = photos(unsplash, word())[1]
    first = stock(media, photo["id"]).json()
    again = stock(media, photo["id"], filename="again.jpg")
    assert again.status_code == 200
    assert (again.json()["id"], again.json()["unchanged"]) == (first["id"], True)
    assert unsplash.downloads.count(photo["id"]) == 1
    theirs = stock(other, photo["id"]).json()
    assert theirs["unchanged"] is False and theirs["id"] != first["id"]
    assert unsplash.downloads.count(photo["id"]) == 2


@pytest.mark.own_org
def test_a_photo_the_provider_does_not_have_is_404(media: Media, unsplash: UnsplashServer) -> None:
    missing = word()
    body = problem(stock(media, missing), 404, "NOT_FOUND")
    assert body["errors"] == [{"path": "stock.assetId", "message": "no such photo"}]
    assert missing not in unsplash.downloads
    assert media.listed()["total"] == 0


@pytest.mark.own_org
def test_when_tracking_fails_nothing_is_stored(media: Media, unsplash: UnsplashServer) -> None:
    photo = photos(unsplash, word())[0]
    unsplash.fail(Failure(500), path=f"/photos/{photo['id']}/download")
    body = problem(stock(media, photo["id"]), 503, "INTERNAL_SERVER_ERROR")
    assert body["retryable"] is True
    assert media.listed()["total"] == 0
    unsplash.fail(Failure(503), path=f"/photos/{photo['id']}")
    problem(stock(media, photo["id"]), 503, "INTERNAL_SERVER_ERROR")
    # A photo gone between reading it and reporting its download is no photo.
    unsplash.fail(Failure(404), path=f"/photos/{photo['id']}/download")
    problem(stock(media, photo["id"]), 404, "NOT_FOUND")
    assert media.listed()["total"] == 0
    assert stock(media, photo["id"]).status_code == 200


@pytest.mark.own_org
def test_the_key_never_goes_to_a_download_location_elsewhere(
    media: Media, unsplash: UnsplashServer, network: NetworkGuard
) -> None:
    photo = unsplash.add_photo(word(), description="Elsewhere")
    photo["links"]["download_location"] = "http://127.0.0.1:9/photos/x/download"
    body = problem(stock(media, photo["id"]), 503, "INTERNAL_SERVER_ERROR")
    assert body["retryable"] is False
    assert ("127.0.0.1", 9) not in network.connections
    assert media.listed()["total"] == 0


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"stock": {"provider": "unsplash", "assetId": "../../me"}}, "stock.assetId"),
        ({"stock": {"provider": "unsplash", "assetId": ""}}, "stock.assetId"),
        ({"stock": {"provider": "nope", "assetId": "abc"}}, "stock.provider"),
        ({"stock": {"provider": "pexels", "assetId": "abc"}}, "stock.provider"),
        ({"stock": {"provider": "unsplash"}}, "stock.assetId"),
        (
            {"stock": {"provider": "unsplash", "assetId": "abc"}, "mimeType": "video/mp4"},
            "mimeType",
        ),
    ],
)
def test_an_import_refuses_bad_choices(
    media: Media, unsplash: UnsplashServer, data: dict[str, Any], field: str
) -> None:
    before = len(unsplash.requests)
    body = problem(media.request("media.confirmUpload", data), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}, body
    assert len(unsplash.requests) == before


def test_a_member_may_not_import(media: Media, unsplash: UnsplashServer) -> None:
    photo = photos(unsplash, word())[0]
    problem(stock(media, photo["id"], role="member"), 403, "FORBIDDEN")
    assert photo["id"] not in unsplash.downloads


def test_only_an_admin_changes_a_stock_photos_licence(
    media: Media, unsplash: UnsplashServer
) -> None:
    photo = photos(unsplash, word())[0]
    given = {"notes": "Bought the extended licence."}
    problem(stock(media, photo["id"], license=given), 403, "FORBIDDEN")
    assert photo["id"] not in unsplash.downloads
    asset = stock(media, photo["id"], role="admin", license=given).json()
    assert asset["license"]["notes"] == "Bought the extended licence."
    assert asset["license"]["type"] == "unsplash"

    problem(media.update(asset["id"], license={"expiresAt": None, "notes": "x"}), 403, "FORBIDDEN")
    # Metadata is the editor's, and a licence sent back unchanged changes nothing.
    same = {"type": "unsplash", "notes": "Bought the extended licence."}
    response = media.update(asset["id"], title="Our can", license=same)
    assert response.status_code == 200, response.text
    assert response.json()["title"] == "Our can"
    changed = media.update(
        asset["id"], role="admin", license={"usageRights": {"commercial": False}}
    )
    assert changed.json()["license"]["usage_rights"]["commercial"] is False
    assert media.get(asset["id"])["license"]["attribution"]["required"] is True


def test_what_other_domains_ask_of_the_providers() -> None:
    assert service.allows_automated_selection("unsplash") is False
    assert service.allows_automated_selection(None) is True
    assert "unsplash" not in service.AUTOMATED_SELECTION_PROVIDERS
    assert service.hotlink_required("unsplash") is True
    assert service.hotlink_required(None) is False
