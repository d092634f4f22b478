"""The Webflow strategy against a local Data API v2 stand-in (loopback only)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
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
from contentplatform.publishers.strategies.webflow import (
    Webflow,
    WebflowConfig,
    WebflowCredentials,
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
from tests.support.targets.webflow import WebflowSite, schema_field

TOKEN = "wf-0123456789abcdef0123456789abcdef"
MAPPING = {
    "content": "post-body",
    "excerpt": "post-summary",
    "seoTitle": "seo-title",
    "metaDescription": "meta-description",
}
T = TypeVar("T")


@pytest.fixture
def webflow() -> Iterator[WebflowSite]:
    with WebflowSite(token=TOKEN) as server:
        yield server


def config_for(webflow: WebflowSite, **changes: Any) -> dict[str, Any]:
    raw = {
        "apiBaseUrl": webflow.url,
        "collectionId": webflow.collection_id,
        "siteId": webflow.site_id,
        "fieldMapping": MAPPING,
        "publicUrlPattern": "https://www.acme.example/blog/{slug}",
    }
    return raw | changes


def act(
    webflow: WebflowSite,
    action: Callable[[Webflow], Awaitable[T]],
    *,
    token: str = TOKEN,
    **config: Any,
) -> T:
    return run_strategy(Webflow, config_for(webflow, **config), {"apiToken": token}, action)


def test_publish_writes_the_mapped_fields_and_publishes_the_item(webflow: WebflowSite) -> None:
    result = act(webflow, lambda s: s.publish(article(), "publish"))

    item = only(webflow.items)
    assert item["fieldData"] == {
        "name": "Acme pricing explained",
        "slug": "acme-pricing",
        "post-body": "<h2>Plans</h2><p>Three plans, billed monthly.</p>",
        "post-summary": "How the three plans differ.",
        "seo-title": "Acme pricing: plans and prices",
        "meta-description": "What each Acme plan costs and includes.",
    }
    assert webflow.live[item["id"]] == item["fieldData"]
    assert item["isDraft"] is False
    assert result.external_id == item["id"]
    assert result.status == "published"
    assert result.external_url == "https://www.acme.example/blog/acme-pricing"
    assert result.remote_version == item["lastUpdated"]
    assert result.published_at is not None and result.published_at.tzinfo is not None
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in webflow.requests] == [
        ("GET", "items"),  # looked for an earlier copy first
        ("POST", "items"),
        ("POST", "publish"),
    ]
    assert webflow.requests[0].query == {"slug": "acme-pricing"}
    assert webflow.seen("POST", webflow.items_path)[0].json()["isDraft"] is False


def test_draft_mode_leaves_the_item_a_draft_off_the_live_site(webflow: WebflowSite) -> None:
    result = act(webflow, lambda s: s.publish(article(), "draft"))

    item = only(webflow.items)
    assert item["isDraft"] is True
    assert webflow.live == {}
    assert result.status == "draft"
    assert result.external_url is None
    assert result.published_at is None
    assert not webflow.seen("POST", f"{webflow.items_path}/publish")


def test_update_changes_the_item_instead_of_adding_one(webflow: WebflowSite) -> None:
    first = act(webflow, lambda s: s.publish(article(), "publish"))

    second = act(
        webflow,
        lambda s: s.update(
            Remote(first.external_id), article(title="Acme pricing, 2026"), "publish"
        ),
    )

    item = only(webflow.items)
    assert second.external_id == first.external_id
    assert webflow.live[item["id"]]["name"] == "Acme pricing, 2026"
    assert second.remote_version != first.remote_version
    assert len(webflow.seen("POST", webflow.items_path)) == 1


def test_a_draft_update_takes_the_live_item_down(webflow: WebflowSite) -> None:
    first = act(webflow, lambda s: s.publish(article(), "publish"))

    result = act(
        webflow, lambda s: s.update(Remote(first.external_id), article(title="Rework"), "draft")
    )

    item = only(webflow.items)
    assert item["isDraft"] is True
    assert item["fieldData"]["name"] == "Rework"
    assert webflow.live == {}
    assert result.status == "draft"


def test_unpublish_takes_the_item_off_the_site_and_keeps_it_a_draft(webflow: WebflowSite) -> None:
    first = act(webflow, lambda s: s.publish(article(), "publish"))

    result = act(webflow, lambda s: s.unpublish(Remote(first.external_id)))

    assert webflow.live == {}
    assert only(webflow.items)["isDraft"] is True  # a site-wide publish will not bring it back
    assert result.status == "unpublished"
    assert result.external_url is None
    # Unpublishing again finds nothing live and is still fine.
    assert act(webflow, lambda s: s.unpublish(Remote(first.external_id))).status == "unpublished"


def test_an_item_deleted_in_webflow_is_not_found(webflow: WebflowSite) -> None:
    gone = Remote("6650b0000000000000000999")

    with pytest.raises(RemoteNotFound):
        act(webflow, lambda s: s.update(gone, article(), "publish"))
    with pytest.raises(RemoteNotFound):
        act(webflow, lambda s: s.unpublish(gone))


def test_a_create_whose_answer_was_lost_is_found_on_the_retry(webflow: WebflowSite) -> None:
    webflow.fail(Failure(502, after=True), method="POST", path=webflow.items_path)

    with pytest.raises(Ambiguous):
        act(webflow, lambda s: s.publish(article(), "publish"))
    assert len(webflow.items) == 1 and webflow.live == {}

    result = act(webflow, lambda s: s.publish(article(), "publish"))

    item = only(webflow.items)
    assert result.external_id == item["id"]
    assert webflow.live[item["id"]]["name"] == "Acme pricing explained"
    assert len(webflow.seen("POST", webflow.items_path)) == 1


def test_an_item_of_someone_else_holding_the_slug_is_left_alone(webflow: WebflowSite) -> None:
    theirs = webflow.add_item({"name": "Pricing (old)", "slug": "acme-pricing"}, live=True)

    with pytest.raises(RemoteConflict, match="acme-pricing"):
        act(webflow, lambda s: s.publish(article(), "publish"))

    assert list(webflow.items) == [theirs]
    assert webflow.items[theirs]["fieldData"]["name"] == "Pricing (old)"


def test_a_refused_token_is_an_auth_failure(webflow: WebflowSite) -> None:
    with pytest.raises(AuthFailed) as raised:
        act(webflow, lambda s: s.publish(article(), "publish"), token="wf-wrong")

    assert "401" in raised.value.message
    assert "wf-wrong" not in raised.value.message


def test_a_field_missing_from_the_collection_is_a_validation_failure(webflow: WebflowSite) -> None:
    mapping = MAPPING | {"excerpt": "summary"}

    with pytest.raises(Invalid, match="400") as raised:
        act(webflow, lambda s: s.publish(article(), "publish"), fieldMapping=mapping)

    # Webflow's details name the field.
    assert "fieldData.summary: Field not described in schema" in raised.value.message
    assert webflow.items == {}


def test_rate_limiting_reports_when_to_come_back(webflow: WebflowSite) -> None:
    webflow.fail(Failure(429, headers={"retry-after": "30"}))

    with pytest.raises(RateLimited) as raised:
        act(webflow, lambda s: s.publish(article(), "publish"))

    assert raised.value.retry_after == 30.0


def test_a_server_error_is_transient(webflow: WebflowSite) -> None:
    webflow.fail(Failure(500), method="GET")

    with pytest.raises(Transient):
        act(webflow, lambda s: s.publish(article(), "publish"))

    assert webflow.items == {}


def test_connection_test_names_site_and_collection(webflow: WebflowSite) -> None:
    result = act(webflow, lambda s: s.test_connection())

    assert result.ok is True
    assert result.account_label == "Acme Blog / Blog Posts"
    assert result.warnings == []
    assert result.capabilities == ["publish", "draft", "update", "unpublish"]


def test_connection_test_fails_when_the_mapping_does_not_fit(webflow: WebflowSite) -> None:
    webflow.fields = [
        schema_field("name", required=True),
        schema_field("slug", required=True),
        schema_field("post-body"),  # plain text, not rich text
        schema_field("author", "Reference", required=True),
    ]

    result = act(
        webflow,
        lambda s: s.test_connection(),
        fieldMapping={"content": "post-body"} | {"excerpt": "summary"},
    )

    assert result.ok is False
    warnings = " | ".join(result.warnings)
    assert "no field 'summary'" in warnings
    assert "'post-body' is PlainText, not RichText" in warnings
    assert "requires the field 'author'" in warnings


def test_connection_test_for_an_unknown_collection_or_token_raises(webflow: WebflowSite) -> None:
    with pytest.raises(RemoteNotFound):
        act(webflow, lambda s: s.test_connection(), collectionId="0" * 24)
    with pytest.raises(AuthFailed):
        act(webflow, lambda s: s.test_connection(), token="wf-wrong")


def test_credentials_hint_shows_only_the_end_of_the_token() -> None:
    assert Webflow.credentials_hint(WebflowCredentials(api_token=TOKEN)) == "••••cdef"


def test_config_defaults_and_the_url_offered_to_the_guard() -> None:
    config = WebflowConfig.model_validate(
        {"collectionId": "6650a1b2c3d4e5f6a7b8c9d0", "fieldMapping": {"content": "post-body"}}
    )

    assert config.api_base_url == "https://api.webflow.com"
    assert config.field_mapping.fields() == {
        "title": "name",
        "slug": "slug",
        "content": "post-body",
    }
    assert Webflow.urls(config) == ["https://api.webflow.com"]


GOOD = {"collectionId": "6650a1b2c3d4e5f6a7b8c9d0", "fieldMapping": {"content": "post-body"}}


@pytest.mark.parametrize(
    "raw",
    [
        GOOD | {"collectionId": "blog-posts"},
        {"collectionId": "6650a1b2c3d4e5f6a7b8c9d0"},
        GOOD | {"fieldMapping": {}},
        GOOD | {"fieldMapping": {"content": "post-body", "author": "author"}},
        GOOD | {"fieldMapping": {"content": "name"}},
        GOOD | {"fieldMapping": {"content": "Post Body"}},
        GOOD | {"apiBaseUrl": "api.webflow.com"},
        GOOD | {"publicUrlPattern": "https://www.acme.example/blog/"},
        GOOD | {"apiVersion": "v2"},
    ],
)
def test_config_refuses_bad_ids_urls_mappings_and_unknown_fields(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        WebflowConfig.model_validate(raw)


# --- the featured image ------------------------------------------------------------------------


def test_the_featured_image_goes_to_its_mapped_image_field(webflow: WebflowSite) -> None:
    mapping = MAPPING | {"featuredImage": "main-image"}
    with serving(PNG_BYTES) as files:
        url = f"{files.url}/signed/harbour.png"
        act(
            webflow,
            lambda s: s.publish(article(featured_image=our_picture(url)), "publish"),
            fieldMapping=mapping,
        )

    image = only(webflow.items)["fieldData"]["main-image"]
    assert image["alt"] == "Boats in the harbour at dawn"
    assert webflow.assets[image["fileId"]] == PNG_BYTES  # Webflow copied it from our URL


def test_a_hotlinked_stock_image_opens_the_body_instead_of_being_copied(
    webflow: WebflowSite,
) -> None:
    mapping = MAPPING | {"featuredImage": "main-image"}
    act(
        webflow,
        lambda s: s.publish(article(featured_image=stock_picture()), "publish"),
        fieldMapping=mapping,
    )

    field_data = only(webflow.items)["fieldData"]
    assert "main-image" not in field_data
    assert webflow.assets == {}
    assert field_data["post-body"].startswith(
        '<figure><img src="https://images.unsplash.com/photo-1?ixid=abc&amp;w=1080"'
    )


def test_a_featured_image_field_that_is_not_an_image_fails_the_connection_test(
    webflow: WebflowSite,
) -> None:
    mapping = MAPPING | {"content": "post-body", "seoTitle": None, "featuredImage": "seo-title"}

    result = act(webflow, lambda s: s.test_connection(), fieldMapping=mapping)

    assert result.ok is False
    assert result.warnings == [
        "The field 'seo-title' is PlainText, not Image: it cannot hold the featured image."
    ]


def test_inline_images_are_uploaded_as_site_assets_and_shown_from_webflow(
    webflow: WebflowSite,
) -> None:
    pictures = [our_picture(), stock_picture()]
    act(webflow, lambda s: s.publish(article(inline_images=pictures), "publish"))

    [asset] = webflow.site_assets.values()  # ours, with its file; the stock one never
    assert asset["data"] == PNG_BYTES
    assert asset["fileName"] == f"cp-{'ab12' * 4}-harbour.png"
    body = only(webflow.items)["fieldData"][MAPPING["content"]]
    page = BeautifulSoup(body, "html.parser")
    assert [img["src"] for img in page.find_all("img")] == [
        asset["hostedUrl"],
        "https://images.unsplash.com/photo-1?ixid=abc&w=1080",
    ]


def test_inline_images_need_the_site_id(webflow: WebflowSite) -> None:
    with pytest.raises(Invalid, match="siteId"):
        act(
            webflow,
            lambda s: s.publish(article(inline_images=[our_picture()]), "publish"),
            siteId=None,
        )
    assert webflow.items == {}
