"""drafts.unpublish and drafts.archive over REST and RPC, against the stand-in targets on loopback:
each target sees its real unpublish request; the draft goes back to approved once no target
keeps it live; scheduled publishes are cancelled; the attempts are recorded and the activity
trail tells (`draft.unpublished`, `publish_attempt.failed`); an archive leaves the public feed at
once and, with unpublishRemote, takes the copies down; roles and tenancy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from standardwebhooks.webhooks import Webhook

from contentplatform.config import Settings
from contentplatform.events.models import Event
from contentplatform.publishers.strategies.webhook import new_signing_secret
from tests.publishers.desk import Desk
from tests.support.database import select_all
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.targets.ghost import GhostServer
from tests.support.targets.scripted import Failure
from tests.support.targets.shopify import ShopifyShop
from tests.support.targets.webflow import WebflowSite
from tests.support.targets.webhook import WebhookReceiver
from tests.support.targets.wordpress import WordPressServer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

desk = org_fixture(Desk)
other = org_fixture(Desk, second=True)


def payloads(settings: Settings, tenant_id: Any, action: str) -> list[dict[str, Any]]:
    """The payloads of the tenant's events of `action`, oldest first (the outbox's rows: the
    trail does not show them)."""
    rows = select_all(
        settings,
        select(Event)
        .where(Event.tenant_id == tenant_id, Event.type == action)
        .order_by(Event.created_at),
    )
    return [row.payload for row in rows]


def only_post(wp: WordPressServer) -> dict[str, Any]:
    with wp.lock:
        [post] = wp.posts.values()
        return dict(post)


@contextmanager
def webhook_to(desk: Desk) -> Iterator[tuple[WebhookReceiver, dict[str, Any]]]:
    with WebhookReceiver(new_signing_secret()) as receiver:
        connection = desk.webhook(receiver.hook_url)
        receiver.verifier = Webhook(connection["signing_secret"])
        yield receiver, connection


# --- unpublish --------------------------------------------------------------------------------


def test_unpublishing_takes_the_post_down_and_the_draft_back_to_approved(
    desk: Desk, wp: WordPressServer
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])
    assert draft["slug"] in desk.feed_slugs()

    answer = desk.unpublish(draft["id"])

    assert answer["draft"]["id"] == draft["id"]
    assert answer["draft"]["status"] == "published"  # until the target has taken it down
    [pending] = answer["attempts"]
    assert pending["mode"] == "unpublish" and pending["status"] == "pending"
    assert pending["publisher_connection_id"] == connection["id"]
    assert pending["triggered_by"] == "user"
    assert pending["triggered_by_id"] == desk.users["editor"]

    attempt = desk.wait(draft["id"], pending["id"])

    assert attempt["status"] == "succeeded", attempt
    post = only_post(wp)
    assert post["status"] == "draft"
    [request] = wp.seen("POST", f"{wp.POSTS}/{post['id']}")
    assert request.json() == {"status": "draft"}
    assert attempt["external_id"] == str(post["id"])
    taken_down = desk.get(draft["id"])
    assert taken_down["status"] == "approved"
    assert draft["slug"] not in desk.feed_slugs()
    assert [a["mode"] for a in desk.attempts(draft["id"])] == ["unpublish", "publish"]
    # Nothing is live any more: a second unpublish has nothing to do.
    body = problem(desk.try_unpublish(draft["id"]), 409, "CONFLICT")
    assert "neither live nor scheduled" in body["detail"]


@pytest.mark.parametrize("kind", ["ghost", "shopify", "webflow", "webhook"])
def test_each_target_receives_its_own_unpublish(desk: Desk, kind: str) -> None:
    with live_on(kind, desk) as (connection, copy_is_live):
        draft = desk.live_draft(connection["id"])
        assert copy_is_live() is True

        [attempt] = desk.taken_down(draft["id"])

        assert attempt["status"] == "succeeded", attempt
        assert copy_is_live() is False
        assert desk.get(draft["id"])["status"] == "approved"


@contextmanager
def live_on(kind: str, desk: Desk) -> Iterator[tuple[dict[str, Any], Any]]:
    """A connection to a running stand-in of `kind`, and how to ask it whether the one copy on
    it is live (as its own API would show it)."""
    if kind == "ghost":
        with GhostServer() as ghost:
            yield desk.ghost(ghost), lambda: _one(ghost.posts)["status"] == "published"
    elif kind == "shopify":
        with ShopifyShop() as shop:
            yield desk.shopify(shop), lambda: _one(shop.articles)["isPublished"]
    elif kind == "webflow":
        with WebflowSite() as site:
            # Its live copy gone, and marked a draft so a site publish does not bring it back.
            yield (
                desk.webflow(site),
                lambda: bool(site.live) and not _one(site.items)["isDraft"],
            )
    else:
        with webhook_to(desk) as (receiver, connection):
            yield connection, lambda: receiver.events[-1]["type"] != "article.unpublished"


def _one(items: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    [item] = items.values()
    return item


def test_the_webhook_event_names_the_copy_and_is_signed(desk: Desk) -> None:
    with WebhookReceiver(
        new_signing_secret(), answer=lambda event: {"id": "post-77", "url": "https://blog/77"}
    ) as receiver:
        connection = desk.webhook(receiver.hook_url)
        receiver.verifier = Webhook(connection["signing_secret"])
        draft = desk.live_draft(connection["id"])

        desk.taken_down(draft["id"])

        assert receiver.rejected == []
        assert receiver.events[-1]["type"] == "article.unpublished"
        assert receiver.events[-1]["data"] == {"external_id": "post-77"}


def test_one_connection_at_a_time_and_the_draft_stays_published_while_live_elsewhere(
    desk: Desk, wp: WordPressServer
) -> None:
    with webhook_to(desk) as (receiver, hook):
        blog = desk.wordpress(wp)
        draft = desk.live_draft(blog["id"])
        desk.published(draft["id"], hook["id"])

        [first] = desk.taken_down(draft["id"], publisherConnectionId=blog["id"])

        assert first["publisher_connection_id"] == blog["id"]
        assert only_post(wp)["status"] == "draft"
        assert receiver.events[-1]["type"] == "article.published"  # still live there
        assert desk.get(draft["id"])["status"] == "published"
        problem(desk.try_unpublish(draft["id"], publisherConnectionId=blog["id"]), 409, "CONFLICT")

        [second] = desk.taken_down(draft["id"])  # every connection it is still live on

        assert second["publisher_connection_id"] == hook["id"]
        assert receiver.events[-1]["type"] == "article.unpublished"
        assert desk.get(draft["id"])["status"] == "approved"


def test_republishing_puts_the_same_post_back(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])
    desk.taken_down(draft["id"])

    attempt = desk.published(draft["id"], connection["id"])

    post = only_post(wp)
    assert post["status"] == "publish"
    assert attempt["external_id"] == str(post["id"])
    assert desk.get(draft["id"])["status"] == "published"


def test_unpublishing_cancels_a_scheduled_publish(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    scheduled = desk.ok(
        "drafts.publish",
        {
            "id": draft["id"],
            "publisherConnectionId": connection["id"],
            "mode": "schedule",
            "scheduledAt": later,
        },
    )["attempt"]

    answer = desk.unpublish(draft["id"])

    [cancelled] = answer["attempts"]
    assert cancelled["id"] == scheduled["id"] and cancelled["status"] == "cancelled"
    assert answer["draft"]["status"] == "approved"
    assert wp.requests == []
    problem(desk.try_unpublish(draft["id"]), 409, "CONFLICT")


def test_a_copy_deleted_on_the_target_counts_as_taken_down(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])
    with wp.lock:
        wp.posts.clear()  # someone deleted it in WordPress

    [attempt] = desk.taken_down(draft["id"])

    assert attempt["status"] == "succeeded", attempt
    assert desk.get(draft["id"])["status"] == "approved"


@pytest.mark.own_org
def test_a_failed_unpublish_keeps_the_draft_published_and_is_told(
    desk: Desk, wp: WordPressServer
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])
    wp.fail(Failure(401), method="POST")

    [attempt] = desk.taken_down(draft["id"])

    assert attempt["status"] == "failed"
    assert attempt["error"]["code"] == "auth_failed"
    assert only_post(wp)["status"] == "publish"
    assert desk.get(draft["id"])["status"] == "published"
    assert desk.connection(connection["id"])["status"] == "error"
    [failed] = desk.activity(action="publish_attempt.failed")
    assert failed["resource_type"] == "draft" and failed["resource_id"] == draft["id"]
    # It can be tried again.
    [again] = desk.taken_down(draft["id"])
    assert again["status"] == "succeeded"
    assert desk.get(draft["id"])["status"] == "approved"


@pytest.mark.own_org
def test_a_publish_that_fails_for_good_is_told_too(
    desk: Desk, wp: WordPressServer, settings: Settings
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    wp.fail(Failure(403), method="POST")

    attempt = desk.ok(
        "drafts.publish", {"id": draft["id"], "publisherConnectionId": connection["id"]}
    )["attempt"]
    assert desk.wait(draft["id"], attempt["id"])["status"] == "failed"

    [failed] = desk.activity(action="publish_attempt.failed", resourceId=draft["id"])
    assert failed["resource_type"] == "draft"
    [payload] = payloads(settings, desk.tenant_id, "publish_attempt.failed")
    assert payload["attempt_id"] == attempt["id"]
    assert payload["publisher_connection_id"] == connection["id"]
    assert payload["mode"] == "publish"
    assert payload["error"]["code"] == "auth_failed"


@pytest.mark.own_org
def test_the_trail_tells_of_each_copy_taken_down(
    desk: Desk, wp: WordPressServer, settings: Settings
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])

    [attempt] = desk.taken_down(draft["id"])

    [row] = desk.activity(action="draft.unpublished")
    assert row["resource_type"] == "draft" and row["resource_id"] == draft["id"]
    [payload] = payloads(settings, desk.tenant_id, "draft.unpublished")
    assert payload["draft_id"] == draft["id"] and payload["title"] == draft["title"]
    assert payload["publisher_connection_id"] == connection["id"]
    assert payload["attempt_id"] == attempt["id"]
    assert payload["external_id"] == attempt["external_id"]
    assert payload["external_url"] == draft["published_url"]  # where it was live
    moves = payloads(settings, desk.tenant_id, "draft.status_changed")
    assert {"from": "published", "to": "approved"}.items() <= moves[-1].items()


def test_nothing_live_nor_scheduled_is_a_conflict(desk: Desk, wp: WordPressServer) -> None:
    blog = desk.wordpress(wp)
    approved = desk.approved()
    problem(desk.try_unpublish(approved["id"]), 409, "CONFLICT")
    reviewing = desk.create("Still in review")
    problem(desk.try_unpublish(reviewing["id"]), 409, "CONFLICT")
    # Live on one connection, nothing on the one named.
    with webhook_to(desk) as (_, hook):
        live = desk.live_draft(blog["id"], title="Live on the blog")
        body = problem(
            desk.try_unpublish(live["id"], publisherConnectionId=hook["id"]), 409, "CONFLICT"
        )
        assert "Webhook" in body["detail"]
    assert only_post(wp)["status"] == "publish"


def test_an_unpublish_under_way_makes_another_request_a_conflict(
    desk: Desk, wp: WordPressServer
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])
    wp.fail(Failure(200, delay=1.0, after=True), method="POST")  # a slow target

    answer = desk.unpublish(draft["id"])

    problem(desk.try_unpublish(draft["id"]), 409, "CONFLICT")
    problem(
        desk.request(
            "drafts.publish", {"id": draft["id"], "publisherConnectionId": connection["id"]}
        ),
        409,
        "CONFLICT",
    )
    desk.wait(draft["id"], answer["attempts"][0]["id"])


def test_a_copy_on_a_disabled_connection_is_not_taken_down(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])
    desk.ok("publishers.update", {"id": connection["id"], "status": "disabled"}, role="admin")

    body = problem(desk.try_unpublish(draft["id"]), 409, "CONFLICT")

    assert "disabled" in body["detail"]
    assert desk.get(draft["id"])["status"] == "published"


# --- archive ----------------------------------------------------------------------------------


def test_archiving_takes_the_draft_off_the_feed_at_once_and_leaves_the_copy(
    desk: Desk, wp: WordPressServer
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])

    archived = desk.archive(draft["id"], reason="Out of season")

    assert archived["status"] == "archived"
    assert draft["slug"] not in desk.feed_slugs()
    assert only_post(wp)["status"] == "publish"  # remote copies stay
    assert [a["mode"] for a in desk.attempts(draft["id"])] == ["publish"]
    problem(desk.try_archive(draft["id"]), 409, "CONFLICT")  # already archived


@pytest.mark.own_org
def test_archiving_with_unpublish_remote_takes_every_copy_down(
    desk: Desk, wp: WordPressServer
) -> None:
    with webhook_to(desk) as (receiver, hook):
        blog = desk.wordpress(wp)
        draft = desk.live_draft(blog["id"])
        desk.published(draft["id"], hook["id"])

        archived = desk.archive(draft["id"], unpublishRemote=True)

        assert archived["status"] == "archived"
        assert draft["slug"] not in desk.feed_slugs()
        started = [a for a in desk.attempts(draft["id"]) if a["mode"] == "unpublish"]
        assert {a["publisher_connection_id"] for a in started} == {blog["id"], hook["id"]}
        for attempt in started:
            assert desk.wait(draft["id"], attempt["id"])["status"] == "succeeded"
        assert only_post(wp)["status"] == "draft"
        assert receiver.events[-1]["type"] == "article.unpublished"
        assert desk.get(draft["id"])["status"] == "archived"  # it stays archived
        assert len(desk.activity(action="draft.unpublished")) == 2


def test_archiving_cancels_a_scheduled_publish(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    desk.ok(
        "drafts.publish",
        {
            "id": draft["id"],
            "publisherConnectionId": connection["id"],
            "mode": "schedule",
            "scheduledAt": later,
        },
    )

    desk.archive(draft["id"])

    assert [a["status"] for a in desk.attempts(draft["id"])] == ["cancelled"]


def test_archive_checks_its_input(desk: Desk) -> None:
    draft = desk.create("Notes")
    body = problem(desk.try_archive(draft["id"], reason="x" * 501), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["reason"]
    problem(desk.try_archive(draft["id"], unpublishRemote="maybe"), 400, "BAD_REQUEST")
    assert desk.archive(draft["id"], reason="  ")["status"] == "archived"


# --- roles and tenancy ------------------------------------------------------------------------


def test_members_may_neither_unpublish_nor_archive(desk: Desk, wp: WordPressServer) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])

    problem(desk.try_unpublish(draft["id"], role="member"), 403, "FORBIDDEN")
    problem(desk.try_archive(draft["id"], role="member"), 403, "FORBIDDEN")

    assert desk.get(draft["id"])["status"] == "published"
    assert desk.unpublish(draft["id"])["attempts"]  # an editor may
    assert desk.archive(draft["id"])["status"] == "archived"


def test_another_organization_can_touch_neither_drafts_nor_connections(
    desk: Desk, other: Desk, wp: WordPressServer
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.live_draft(connection["id"])
    requests = len(wp.requests)

    problem(other.try_unpublish(draft["id"]), 404, "NOT_FOUND")
    problem(other.try_archive(draft["id"], unpublishRemote=True), 404, "NOT_FOUND")
    own = other.approved("Their own")
    problem(
        other.try_unpublish(own["id"], publisherConnectionId=connection["id"]), 404, "NOT_FOUND"
    )

    assert desk.get(draft["id"])["status"] == "published"
    assert len(wp.requests) == requests
    assert other.activity(action="draft.unpublished") == []
