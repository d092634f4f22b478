"""What is published carries a draft's title, excerpt, SEO title and description and tags as plain
text, never as markup: to a webhook receiver and Ghost as text, to WordPress (which prints
titles and excerpts as HTML) and Shopify's summary escaped. That holds for a draft written
through the API (its markup stripped on the way in) and for one whose row still holds markup
(written before titles were plain text), over REST and RPC, against the stand-ins on loopback."""

from __future__ import annotations

from typing import Any

import pytest

from tests.drafts.support import put_status
from tests.publishers.test_publishing import Desk, only_post, webhook_to
from tests.support.orgs import org_fixture
from tests.support.targets.ghost import GhostServer
from tests.support.targets.shopify import ShopifyShop

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

desk = org_fixture(Desk)

ATTACK = "<img src=x onerror=alert(1)>"
# A row from before: markup in every text field.
MARKED_UP: dict[str, Any] = {
    "title": f"{ATTACK}Tom & Jerry <3 <b>espresso</b>",
    "excerpt": "<script>alert(2)</script>Short <em>and</em> strong & sweet <3",
    "seo_meta": {
        "seo_title": f"{ATTACK}Espresso",
        "meta_description": '<a href="javascript:alert(3)">Pull</a> a shot',
        "focus_keywords": ["<i>espresso</i>", "crema"],
    },
}
PLAIN = {
    "title": "Tom & Jerry <3 espresso",
    "excerpt": "Short and strong & sweet <3",
    "seo_title": "Espresso",
    "meta_description": "Pull a shot",
    "tags": ["espresso", "crema"],
}


def marked_up_draft(desk: Desk, run: Any) -> str:
    """An approved draft whose row holds markup in its text fields: its id."""
    draft = desk.approved("Placeholder", "<p>Grind fine.</p>")
    put_status(run, draft["id"], "approved", **MARKED_UP)
    return str(draft["id"])


def test_a_markup_title_reaches_a_webhook_receiver_as_plain_text(desk: Desk) -> None:
    with webhook_to(desk) as (receiver, connection):
        draft = desk.create(f"{ATTACK}Fresh beans", "<p>Grind fine.</p>")
        desk.update(draft["id"], excerpt=f"{ATTACK}Why fresh <b>matters</b>")
        desk.approve(draft["id"])

        attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

        assert attempt["status"] == "succeeded", attempt
        [event] = receiver.events
        assert (event["data"]["title"], event["data"]["excerpt"]) == (
            "Fresh beans",
            "Why fresh matters",
        )
        assert "<img" not in event["data"]["html"]


def test_a_row_holding_markup_goes_to_a_webhook_as_plain_text(desk: Desk, run) -> None:
    with webhook_to(desk) as (receiver, connection):
        draft_id = marked_up_draft(desk, run)

        attempt = desk.published(draft_id, publisherConnectionId=connection["id"])

        assert attempt["status"] == "succeeded", attempt
        [event] = receiver.events
        sent = {key: event["data"][key] for key in PLAIN}
        assert sent == PLAIN


def test_wordpress_gets_the_title_and_excerpt_escaped(desk: Desk, wp, run) -> None:
    connection = desk.wordpress(wp)
    draft_id = marked_up_draft(desk, run)

    attempt = desk.published(draft_id, publisherConnectionId=connection["id"])

    assert attempt["status"] == "succeeded", attempt
    post = only_post(wp)
    # WordPress prints them as HTML: what a reader sees is the plain text, and no tag.
    assert post["title"] == "Tom &amp; Jerry &lt;3 espresso"
    assert post["excerpt"] == "Short and strong &amp; sweet &lt;3"


def test_ghost_gets_plain_text_and_shopify_an_escaped_summary(desk: Desk, run) -> None:
    with GhostServer() as ghost, ShopifyShop() as shop:
        to_ghost = desk.connect(
            "ghost", {"adminUrl": ghost.url}, {"adminApiKey": ghost.admin_api_key}
        )
        to_shopify = desk.connect(
            "shopify", {"storeUrl": shop.url, "blogId": shop.blog_id}, {"accessToken": shop.token}
        )
        draft_id = marked_up_draft(desk, run)

        for connection in (to_ghost, to_shopify):
            attempt = desk.published(draft_id, publisherConnectionId=connection["id"])
            assert attempt["status"] == "succeeded", attempt

        [post] = ghost.posts.values()
        assert (post["title"], post["custom_excerpt"]) == (PLAIN["title"], PLAIN["excerpt"])
        assert (post["meta_title"], post["meta_description"]) == ("Espresso", "Pull a shot")
        [article] = shop.articles.values()
        assert article["title"] == PLAIN["title"]
        assert article["summary"] == "Short and strong &amp; sweet &lt;3"


def test_a_connection_name_is_plain_visible_text(desk: Desk, wp) -> None:
    named = desk.wordpress(wp, name="<b>Company</b> blog")
    assert named["name"] == "Company blog"
    # Nothing but markup keeps its words, without the brackets (kit/text.py).
    assert desk.wordpress(wp, name="<img src=x>")["name"] == "img src=x"
    for name in ("Company\u202eblog", "Company\x00blog"):
        response = desk.request(
            "publishers.create",
            {"name": name, "type": "webhook", "config": {"url": "https://hooks.example/in"}},
            role="admin",
        )
        assert response.status_code == 400, (name, response.text)
        assert [e["path"] for e in response.json()["errors"]] == ["name"]
