"""publishers.listTargets over REST and RPC against the stand-in targets on loopback: what each
type lists, read through the target's real API with the stored credentials (and a page at a
time); the 5-minute cache and `refresh`; a refused credential (409, the connection marked
`error`), other refusals and a target that is down; roles and tenancy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pytest

from tests.publishers.desk import Desk
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.targets.ghost import GhostServer
from tests.support.targets.scripted import Failure
from tests.support.targets.shopify import ShopifyShop
from tests.support.targets.webflow import COLLECTION_ID, WebflowSite
from tests.support.targets.wordpress import WordPressServer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

# Nothing listens here: a webhook's targets are never read from its receiver.
NOWHERE = "http://127.0.0.1:9/hooks"
KINDS = ("wordpress", "ghost", "shopify", "webflow")

desk = org_fixture(Desk)
other = org_fixture(Desk, second=True)


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@contextmanager
def connected(desk: Desk, kind: str) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A running stand-in of `kind` and a connection of the desk to it."""
    if kind == "wordpress":
        with WordPressServer() as wp:
            yield wp, desk.wordpress(wp)
    elif kind == "ghost":
        with GhostServer() as ghost:
            yield ghost, desk.ghost(ghost)
    elif kind == "shopify":
        with ShopifyShop() as shop:
            yield shop, desk.shopify(shop)
    else:
        with WebflowSite() as site:
            yield site, desk.webflow(site)


def refuse_credentials(kind: str, target: Any) -> None:
    """The target stops accepting the credentials the connection holds (they were revoked)."""
    if kind == "wordpress":
        target.application_password = "revoked revoked revoked"
    elif kind == "ghost":
        target.secret = "00" * 32
    else:
        target.token = "revoked-token"


# --- what each type lists -------------------------------------------------------------------


def test_wordpress_lists_its_categories_tags_and_authors(desk: Desk, wp: WordPressServer) -> None:
    garden = wp.add_term("category", "Garden & Home")
    roses = wp.add_term("post_tag", "Roses")
    sam = wp.add_user("Sam Author", role="author")
    wp.add_user("Sue Subscriber", role="subscriber")  # cannot write posts: no author
    connection = desk.wordpress(wp)

    targets = desk.targets(connection["id"])

    assert set(targets) == {"type", "categories", "tags", "authors", "fetched_at"}
    assert targets["type"] == "wordpress"
    # Ordered by name, as WordPress lists them; the name WordPress keeps escaped is plain text.
    assert targets["categories"] == [
        {"id": garden, "name": "Garden & Home"},
        {"id": 1, "name": "Uncategorized"},
    ]
    assert targets["tags"] == [{"id": roses, "name": "Roses"}]
    assert targets["authors"] == [
        {"id": wp.user_id, "name": wp.name},
        {"id": sam, "name": "Sam Author"},
    ]
    assert instant(targets["fetched_at"]).tzinfo is not None
    # Read with the stored Application Password, 100 a page, the users who may write posts.
    reads = wp.seen("GET")
    # Who we are first (a refused password reads as a visitor), then the lists.
    assert {seen.path for seen in reads} == {wp.ME, wp.CATEGORIES, wp.TAGS, wp.USERS}
    reads = [seen for seen in reads if seen.path != wp.ME]
    assert all(seen.headers["authorization"].startswith("Basic ") for seen in reads)
    assert all(seen.query["per_page"] == "100" for seen in reads)
    assert wp.seen("GET", wp.USERS)[0].query["who"] == "authors"


def test_wordpress_lists_are_read_a_page_at_a_time(desk: Desk, wp: WordPressServer) -> None:
    tags = [wp.add_term("post_tag", f"Tag {number:03d}") for number in range(150)]
    connection = desk.wordpress(wp)

    listed = desk.targets(connection["id"])["tags"]

    assert [tag["id"] for tag in listed] == tags
    assert [seen.query["page"] for seen in wp.seen("GET", wp.TAGS)] == ["1", "2"]


def test_ghost_lists_its_tags_and_staff(desk: Desk) -> None:
    with GhostServer() as ghost:
        gardening = ghost.add_tag("Gardening")
        internal = ghost.add_tag("#featured")
        writer = ghost.add_user("Sam Writer")
        owner = next(iter(ghost.staff))
        connection = desk.ghost(ghost)

        targets = desk.targets(connection["id"])

        assert set(targets) == {"type", "tags", "authors", "fetched_at"}
        assert targets["type"] == "ghost"
        assert targets["tags"] == [  # in the order they were made, as Ghost lists them
            {"id": gardening, "name": "Gardening"},
            {"id": internal, "name": "#featured"},
        ]
        assert targets["authors"] == [
            {"id": writer, "name": "Sam Writer"},
            {"id": owner, "name": "Stand-in Owner"},
        ]
        reads = ghost.seen("GET")
        assert [seen.path for seen in reads] == [
            "/ghost/api/admin/tags/",
            "/ghost/api/admin/users/",
        ]
        assert all(seen.headers["authorization"].startswith("Ghost ") for seen in reads)
        assert len(ghost.tokens) == 2  # a JWT of the stored Admin API key per request


def test_ghost_lists_more_than_a_page(desk: Desk) -> None:
    with GhostServer() as ghost:
        for number in range(120):
            ghost.add_tag(f"Tag {number:03d}")
        connection = desk.ghost(ghost)

        tags = desk.targets(connection["id"])["tags"]

        assert [tag["name"] for tag in tags] == [f"Tag {number:03d}" for number in range(120)]
        pages = [seen.query["page"] for seen in ghost.seen("GET", "/ghost/api/admin/tags/")]
        assert pages == ["1", "2"]


def test_shopify_lists_its_blogs(desk: Desk) -> None:
    with ShopifyShop() as shop:
        recipes = shop.add_blog("Recipes", "recipes")
        connection = desk.shopify(shop)

        targets = desk.targets(connection["id"])

        assert set(targets) == {"type", "blogs", "fetched_at"}
        assert targets["blogs"] == [
            {"id": shop.blog_id, "handle": "news", "title": "News"},
            {"id": recipes, "handle": "recipes", "title": "Recipes"},
        ]
        assert shop.operations() == ["Blogs"]
        assert shop.seen()[0].headers["x-shopify-access-token"] == shop.token


def test_shopify_blogs_are_read_a_page_at_a_time(desk: Desk) -> None:
    with ShopifyShop() as shop:
        for number in range(260):
            shop.add_blog(f"Blog {number}", f"blog-{number}")
        connection = desk.shopify(shop)

        blogs = desk.targets(connection["id"])["blogs"]

        assert len(blogs) == 261 and len({blog["id"] for blog in blogs}) == 261
        assert shop.operations() == ["Blogs", "Blogs"]


def test_shopify_without_a_content_scope_is_refused(desk: Desk) -> None:
    with ShopifyShop(scopes=("read_products",)) as shop:
        connection = desk.shopify(shop)

        body = problem(desk.try_targets(connection["id"]), 409, "CONFLICT")

        assert "read_content" in body["detail"]
        assert desk.connection(connection["id"])["status"] == "error"


def test_webflow_lists_its_collections_fields(desk: Desk) -> None:
    with WebflowSite() as site:
        connection = desk.webflow(site)

        targets = desk.targets(connection["id"])

        assert set(targets) == {"type", "collections", "fetched_at"}
        assert targets["collections"] == [
            {
                "id": COLLECTION_ID,
                "name": "Blog Posts",
                "fields": [
                    {"slug": "name", "type": "PlainText", "required": True},
                    {"slug": "slug", "type": "PlainText", "required": True},
                    {"slug": "post-body", "type": "RichText", "required": False},
                    {"slug": "post-summary", "type": "PlainText", "required": False},
                    {"slug": "seo-title", "type": "PlainText", "required": False},
                    {"slug": "meta-description", "type": "PlainText", "required": False},
                    {"slug": "main-image", "type": "Image", "required": False},
                ],
            }
        ]
        [read] = site.seen()
        assert (read.method, read.path) == ("GET", site.collection_path)
        assert read.headers["authorization"] == f"Bearer {site.token}"


def test_a_webhook_has_nothing_to_list(desk: Desk) -> None:
    connection = desk.webhook(NOWHERE)

    targets = desk.targets(connection["id"])

    assert set(targets) == {"type", "fetched_at"}
    assert targets["type"] == "webhook"


# --- the cache ------------------------------------------------------------------------------


def test_targets_are_kept_until_refresh_reads_them_again(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)
    first = desk.targets(connection["id"])
    reads = len(wp.requests)
    wp.add_term("post_tag", "Roses")

    again = desk.targets(connection["id"])

    assert again == first  # answered as it was read, the target not asked
    assert len(wp.requests) == reads

    fresh = desk.targets(connection["id"], refresh=True)

    assert [tag["name"] for tag in fresh["tags"]] == ["Roses"]
    assert instant(fresh["fetched_at"]) > instant(first["fetched_at"])
    assert len(wp.requests) == 2 * reads
    # The fresh read is what is kept now.
    assert desk.targets(connection["id"]) == fresh
    assert len(wp.requests) == 2 * reads


def test_a_changed_connection_is_read_again(desk: Desk) -> None:
    with WordPressServer() as first_site, WordPressServer(name="Other Editor") as second_site:
        connection = desk.wordpress(first_site)
        assert desk.targets(connection["id"])["authors"][0]["name"] == first_site.name

        desk.ok(
            "publishers.update",
            {"id": connection["id"], "config": {"siteUrl": second_site.url}},
            role="admin",
        )

        assert desk.targets(connection["id"])["authors"][0]["name"] == "Other Editor"


def test_each_connection_is_kept_apart(desk: Desk) -> None:
    with WordPressServer() as wp, ShopifyShop() as shop:
        blog = desk.wordpress(wp)
        store = desk.shopify(shop)
        assert desk.targets(blog["id"])["type"] == "wordpress"
        assert desk.targets(store["id"])["type"] == "shopify"


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_refused_credentials_are_a_conflict_that_marks_the_connection(
    desk: Desk, kind: str
) -> None:
    with connected(desk, kind) as (target, connection):
        refuse_credentials(kind, target)

        body = problem(desk.try_targets(connection["id"]), 409, "CONFLICT")

        shown = desk.connection(connection["id"])
        assert shown["status"] == "error"
        assert shown["last_error"] == body["detail"]
        # The target's own words, naming it.
        assert body["detail"].startswith(
            {
                "wordpress": "WordPress",
                "ghost": "Ghost",
                "shopify": "Shopify",
                "webflow": "Webflow",
            }[kind]
        )


def test_a_refusal_is_not_kept(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)
    password = wp.application_password
    wp.application_password = "revoked revoked revoked"
    problem(desk.try_targets(connection["id"]), 409, "CONFLICT")

    wp.application_password = password

    assert desk.targets(connection["id"])["type"] == "wordpress"


def test_a_user_who_cannot_write_posts_cannot_list_authors(desk: Desk) -> None:
    with WordPressServer(role="subscriber") as wp:
        connection = desk.wordpress(wp)

        body = problem(desk.try_targets(connection["id"]), 409, "CONFLICT")

        assert "not allowed to query users" in body["detail"]


def test_a_missing_collection_is_a_conflict_that_leaves_the_connection_active(
    desk: Desk,
) -> None:
    with WebflowSite() as site:
        connection = desk.webflow(site)
        site.collection_id = "0" * 24  # the collection was deleted in Webflow

        body = problem(desk.try_targets(connection["id"]), 409, "CONFLICT")

        assert "Collection not found" in body["detail"]
        assert desk.connection(connection["id"])["status"] == "active"


def test_a_target_that_is_down_is_a_503_to_try_again(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)
    wp.fail(Failure(503, headers={"retry-after": "7"}))

    response = desk.try_targets(connection["id"])

    body = problem(response, 503, "INTERNAL_SERVER_ERROR")
    assert body["retryable"] is True
    assert response.headers["retry-after"] == "7"
    assert desk.connection(connection["id"])["status"] == "active"
    assert desk.targets(connection["id"])["type"] == "wordpress"  # nothing failed was kept


# --- roles and tenancy ------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["editor", "admin"])
def test_editors_and_admins_list_targets(desk: Desk, role: str) -> None:
    connection = desk.webhook(NOWHERE)
    assert desk.targets(connection["id"], role=role)["type"] == "webhook"


def test_members_may_not_list_targets(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)

    problem(desk.try_targets(connection["id"], role="member"), 403, "FORBIDDEN")

    assert wp.requests == []


def test_another_organizations_connection_is_not_found(
    desk: Desk, other: Desk, wp: WordPressServer
) -> None:
    connection = desk.wordpress(wp)
    desk.targets(connection["id"])  # kept in the cache: still not the other's to read

    problem(other.try_targets(connection["id"]), 404, "NOT_FOUND")
    problem(other.try_targets(connection["id"], refresh=True), 404, "NOT_FOUND")
    problem(desk.try_targets("00000000-0000-4000-8000-000000000000"), 404, "NOT_FOUND")
