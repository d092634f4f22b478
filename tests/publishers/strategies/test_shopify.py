"""The Shopify strategy against a local Admin GraphQL stand-in (loopback only)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

import pytest
from bs4 import BeautifulSoup
from pydantic import ValidationError

from contentplatform.publishers.strategies.base import (
    Ambiguous,
    AuthFailed,
    Invalid,
    RateLimited,
    Remote,
    RemoteConflict,
    RemoteNotFound,
    Transient,
)
from contentplatform.publishers.strategies.shopify import (
    API_VERSION,
    Shopify,
    ShopifyConfig,
    ShopifyCredentials,
)
from tests.publishers.strategies.support import (
    PNG_BYTES,
    article,
    only,
    our_picture,
    run_strategy,
    serving,
    stock_picture,
)
from tests.support.targets.scripted import Failure
from tests.support.targets.shopify import ShopifyShop, throttled

TOKEN = "shpat_0123456789abcdef0123456789abcdef"
T = TypeVar("T")


@pytest.fixture
def shop() -> Iterator[ShopifyShop]:
    with ShopifyShop(token=TOKEN, api_version=API_VERSION) as server:
        yield server


def act(
    shop: ShopifyShop,
    action: Callable[[Shopify], Awaitable[T]],
    *,
    token: str = TOKEN,
    **config: Any,
) -> T:
    config = {"storeUrl": shop.url, "blogId": shop.blog_id} | config
    return run_strategy(Shopify, config, {"accessToken": token}, action)


def test_publish_creates_a_live_article_with_its_url(shop: ShopifyShop) -> None:
    result = act(shop, lambda s: s.publish(article(), "publish"))

    stored = only(shop.articles)
    assert result.external_id == stored["id"]
    assert result.status == "published"
    assert result.external_url == "https://shop.acme.example/blogs/news/acme-pricing"
    assert result.remote_version == stored["updatedAt"]
    assert isinstance(result.published_at, datetime) and result.published_at.tzinfo is not None
    assert stored["title"] == "Acme pricing explained"
    assert stored["body"] == "<h2>Plans</h2><p>Three plans, billed monthly.</p>"
    assert stored["summary"] == "How the three plans differ."
    assert stored["tags"] == ["pricing", "plans"]
    assert stored["handle"] == "acme-pricing"
    assert stored["isPublished"] is True
    # No author configured: the shop's name, as Shopify needs one.
    assert stored["author"] == {"name": "Acme Store"}
    assert stored["metafields"][("global", "title_tag")] == "Acme pricing: plans and prices"
    assert stored["metafields"][("global", "description_tag")].startswith("What each Acme")
    # It looked for an earlier copy before creating one.
    assert shop.operations() == ["PublishContext", "CreateArticle"]
    assert all(r.path == f"/admin/api/{API_VERSION}/graphql.json" for r in shop.requests)


def test_draft_mode_creates_a_hidden_article_by_the_configured_author(shop: ShopifyShop) -> None:
    result = act(shop, lambda s: s.publish(article(), "draft"), authorName="Dana Writer")

    stored = only(shop.articles)
    assert stored["isPublished"] is False
    assert stored["author"] == {"name": "Dana Writer"}
    assert result.status == "draft"
    assert result.external_url is None
    assert result.published_at is None


def test_update_changes_the_article_instead_of_adding_one(shop: ShopifyShop) -> None:
    first = act(shop, lambda s: s.publish(article(), "publish"))
    remote = Remote(first.external_id, first.remote_version, first.external_url)

    second = act(
        shop,
        lambda s: s.update(
            remote,
            article(version=2, title="Acme pricing, 2026", slug="acme-pricing-2026"),
            "publish",
        ),
    )

    stored = only(shop.articles)
    assert second.external_id == first.external_id
    assert stored["title"] == "Acme pricing, 2026"
    assert second.external_url == "https://shop.acme.example/blogs/news/acme-pricing-2026"
    assert second.remote_version != first.remote_version
    update = shop.requests[-1].json()
    assert update["variables"]["article"]["redirectNewHandle"] is True
    assert "CreateArticle" not in shop.operations()[2:]


def test_a_create_whose_answer_was_lost_is_found_on_the_retry(shop: ShopifyShop) -> None:
    shop.fail_operation("articleCreate", Failure(502, after=True))

    with pytest.raises(Ambiguous):
        act(shop, lambda s: s.publish(article(), "publish"))
    assert len(shop.articles) == 1  # it was created all the same

    result = act(shop, lambda s: s.publish(article(), "publish"))

    stored = only(shop.articles)
    assert result.external_id == stored["id"]
    assert result.status == "published"
    assert shop.operations()[-2:] == ["PublishContext", "UpdateArticle"]


def test_a_merchants_article_with_the_same_handle_is_left_alone(shop: ShopifyShop) -> None:
    theirs = shop.add_article("acme-pricing", "Our own pricing page")

    with pytest.raises(RemoteConflict, match="acme-pricing"):
        act(shop, lambda s: s.publish(article(), "publish"))

    assert list(shop.articles) == [theirs]
    assert shop.articles[theirs]["title"] == "Our own pricing page"


def test_unpublish_hides_the_article(shop: ShopifyShop) -> None:
    first = act(shop, lambda s: s.publish(article(), "publish"))

    result = act(shop, lambda s: s.unpublish(Remote(first.external_id)))

    assert only(shop.articles)["isPublished"] is False
    assert result.status == "unpublished"
    assert result.external_id == first.external_id
    assert result.external_url is None


def test_updating_an_article_deleted_in_shopify_is_not_found(shop: ShopifyShop) -> None:
    gone = Remote("gid://shopify/Article/1")

    with pytest.raises(RemoteNotFound, match="does not exist"):
        act(shop, lambda s: s.update(gone, article(), "publish"))
    with pytest.raises(RemoteNotFound):
        act(shop, lambda s: s.unpublish(gone))


def test_a_refused_token_is_an_auth_failure_that_does_not_repeat_it(shop: ShopifyShop) -> None:
    wrong = "shpat_wrong_wrong_wrong_wrong_0000"

    with pytest.raises(AuthFailed) as raised:
        act(shop, lambda s: s.publish(article(), "publish"), token=wrong)

    assert "401" in raised.value.message
    assert wrong not in raised.value.message
    assert shop.articles == {}


def test_a_token_without_the_write_scope_is_an_auth_failure(shop: ShopifyShop) -> None:
    shop.scopes = ["read_content"]

    with pytest.raises(AuthFailed, match="Access denied"):
        act(shop, lambda s: s.publish(article(), "publish"))


def test_user_errors_are_a_validation_failure(shop: ShopifyShop) -> None:
    with pytest.raises(Invalid, match="title: Title can't be blank") as raised:
        act(shop, lambda s: s.publish(article(title=" "), "publish"))

    assert not raised.value.retryable
    assert shop.articles == {}


def test_throttling_waits_for_the_points_the_query_needs(shop: ShopifyShop) -> None:
    # 1000 points asked, 200 there, 100 back per second: 8 seconds.
    shop.fail(throttled(requested=1000, available=200, restore_rate=100))

    with pytest.raises(RateLimited) as raised:
        act(shop, lambda s: s.publish(article(), "publish"))

    assert raised.value.retry_after == 8.0
    assert raised.value.retryable


def test_a_server_error_before_any_write_is_transient(shop: ShopifyShop) -> None:
    shop.fail(Failure(503))

    with pytest.raises(Transient):
        act(shop, lambda s: s.publish(article(), "publish"))

    assert shop.articles == {}
    assert shop.operations() == ["PublishContext"]


def test_connection_test_names_the_shop(shop: ShopifyShop) -> None:
    result = act(shop, lambda s: s.test_connection())

    assert result.ok is True
    assert result.account_label == "Acme Store"
    assert result.capabilities == ["publish", "draft", "update", "unpublish"]
    assert result.warnings == []


def test_connection_test_fails_for_an_unknown_blog_or_a_missing_scope(shop: ShopifyShop) -> None:
    shop.scopes = ["read_content"]

    result = act(shop, lambda s: s.test_connection(), blogId="gid://shopify/Blog/999")

    assert result.ok is False
    assert result.account_label == "Acme Store"
    assert any("gid://shopify/Blog/999" in warning for warning in result.warnings)
    assert any("write_content" in warning for warning in result.warnings)


def test_connection_test_with_a_refused_token_raises(shop: ShopifyShop) -> None:
    with pytest.raises(AuthFailed):
        act(shop, lambda s: s.test_connection(), token="shpat_nope")


def test_publishing_to_a_blog_that_is_gone_is_not_found(shop: ShopifyShop) -> None:
    with pytest.raises(RemoteNotFound, match="no blog"):
        act(shop, lambda s: s.publish(article(), "publish"), blogId="7")


def test_credentials_hint_shows_only_the_end_of_the_token() -> None:
    hint = Shopify.credentials_hint(ShopifyCredentials(access_token=TOKEN))

    assert hint == "••••cdef"
    assert TOKEN not in repr(ShopifyCredentials(access_token=TOKEN))


def test_config_is_normalized_and_its_url_is_offered_to_the_guard() -> None:
    config = ShopifyConfig.model_validate(
        {"storeUrl": "https://acme-store.myshopify.com/", "blogId": "41"}
    )

    assert config.store_url == "https://acme-store.myshopify.com"
    assert config.blog_id == "gid://shopify/Blog/41"
    assert Shopify.urls(config) == ["https://acme-store.myshopify.com"]


@pytest.mark.parametrize(
    "raw",
    [
        {"storeUrl": "acme-store", "blogId": "41"},
        {"storeUrl": "ftp://acme-store.myshopify.com", "blogId": "41"},
        {"storeUrl": "https://acme-store.myshopify.com/admin", "blogId": "41"},
        {"storeUrl": "https://user:pw@acme-store.myshopify.com", "blogId": "41"},
        {"storeUrl": "https://acme-store.myshopify.com", "blogId": "gid://shopify/Product/1"},
        {"storeUrl": "https://acme-store.myshopify.com"},
        {"storeUrl": "https://acme-store.myshopify.com", "blogId": "41", "apiVersion": "2024-01"},
    ],
)
def test_config_refuses_bad_urls_missing_and_unknown_fields(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ShopifyConfig.model_validate(raw)


def test_credentials_need_a_token() -> None:
    with pytest.raises(ValidationError):
        ShopifyCredentials.model_validate({"accessToken": ""})
    with pytest.raises(ValidationError):
        ShopifyCredentials.model_validate({"token": TOKEN})


# --- the featured image ------------------------------------------------------------------------


def test_the_featured_image_is_fetched_by_shopify_from_our_signed_url(shop: ShopifyShop) -> None:
    with serving(PNG_BYTES) as files:
        url = f"{files.url}/signed/harbour.png"
        act(shop, lambda s: s.publish(article(featured_image=our_picture(url)), "publish"))

    stored = only(shop.articles)
    assert stored["image"] == {
        "url": url,
        "altText": "Boats in the harbour at dawn",
        "bytes": PNG_BYTES,
    }


def test_a_hotlinked_stock_image_opens_the_body_instead_of_being_copied(shop: ShopifyShop) -> None:
    act(shop, lambda s: s.publish(article(featured_image=stock_picture()), "publish"))

    stored = only(shop.articles)
    assert "image" not in stored
    assert stored["body"].startswith(
        '<figure><img src="https://images.unsplash.com/photo-1?ixid=abc&amp;w=1080" '
        'alt="A lighthouse" loading="lazy"><figcaption>Photo by <a href='
    )
    assert stored["body"].endswith("<h2>Plans</h2><p>Three plans, billed monthly.</p>")


def test_inline_images_become_shop_files_shown_from_shopifys_cdn(shop: ShopifyShop) -> None:
    signed = "https://files.example/signed/harbour.png?sig=1"
    pictures = [our_picture(signed), stock_picture()]
    act(shop, lambda s: s.publish(article(inline_images=pictures), "publish"))

    [made] = shop.files.values()  # ours, made from our signed URL; the stock one never
    assert (made["originalSource"], made["contentType"]) == (signed, "IMAGE")
    assert made["alt"] == "Boats in the harbour at dawn"
    assert made["fileStatus"] == "READY"  # read back until Shopify had processed it
    page = BeautifulSoup(only(shop.articles)["body"], "html.parser")
    assert [img["src"] for img in page.find_all("img")] == [
        made["url"],
        "https://images.unsplash.com/photo-1?ixid=abc&w=1080",
    ]
    assert shop.operations()[1:3] == ["CreateFile", "FileStatus"]
