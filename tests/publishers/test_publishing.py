"""Publishing drafts through the API (REST and RPC) to the stand-in targets on loopback:
drafts.publish and its attempts, retries, republishing, modes, conflicts, the default connection,
roles, tenants and the publish success rate of a job. Auto-publish is in test_auto_publish.py.

The service under test runs in this process (tests/conftest.py), so each attempt's workflow
talks to the stand-ins started here; the suite's settings allow http and loopback targets and
retry after 0.05 s, at most 5 tries.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from contentplatform.publishers.strategies.webhook import new_signing_secret
from tests.drafts.support import Drafts
from tests.publishers.support import connection_body
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.targets.ghost import GhostServer
from tests.support.targets.scripted import Failure
from tests.support.targets.shopify import ShopifyShop
from tests.support.targets.webflow import WebflowSite
from tests.support.targets.webhook import WebhookReceiver
from tests.support.targets.wordpress import WordPressServer
from tests.support.tls import PrivateCA, TLSStubServer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

FINISHED = ("succeeded", "failed", "cancelled")
WAIT_SECONDS = 15.0
MAX_TRIES = 5  # publish_max_tries, the default the suite keeps

TITLE = "Pruning roses in early spring"
CONTENT = "<p>Cut back dead wood before the buds swell.</p>"


class Desk(Drafts):
    """One organization publishing through one transport: Drafts' helpers, plus connections
    (made by its admin) and publish attempts."""

    def connect(
        self, type: str, config: dict[str, Any], credentials: dict[str, Any] | None = None, **extra
    ) -> dict[str, Any]:
        data = connection_body(f"My {type}", type, config, credentials) | extra
        return self.ok("publishers.create", data, role="admin")

    def wordpress(self, wp: WordPressServer, **extra: Any) -> dict[str, Any]:
        credentials = {"username": wp.username, "applicationPassword": wp.application_password}
        return self.connect("wordpress", {"siteUrl": wp.url}, credentials, **extra)

    def connection(self, connection_id: str) -> dict[str, Any]:
        return self.ok("publishers.getById", {"id": connection_id}, role="member")

    def approved(self, title: str = TITLE, content: str = CONTENT, **extra: Any) -> dict[str, Any]:
        draft = self.create(title, content, **extra)
        return self.approve(draft["id"])

    def publish(self, draft_id: str, role: str = "editor", **data: Any):
        return self.request("drafts.publish", {"id": draft_id, **data}, role=role)

    def started(self, draft_id: str, **data: Any) -> dict[str, Any]:
        """drafts.publish, which must be accepted: its answer {draft, attempt}."""
        return self.ok("drafts.publish", {"id": draft_id, **data})

    def attempts(self, draft_id: str, **query: Any) -> dict[str, Any]:
        return self.ok("drafts.listPublishAttempts", {"id": draft_id, **query}, role="member")

    def attempt(self, draft_id: str, attempt_id: str) -> dict[str, Any]:
        [found] = [a for a in self.attempts(draft_id, limit=100)["data"] if a["id"] == attempt_id]
        return found

    def wait(self, draft_id: str, attempt_id: str) -> dict[str, Any]:
        """Poll the draft's attempts until this one has finished (bounded): the attempt."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            attempt = self.attempt(draft_id, attempt_id)
            if attempt["status"] in FINISHED:
                return attempt
            assert time.monotonic() < deadline, f"still {attempt['status']}: {attempt}"
            time.sleep(0.05)

    def published(self, draft_id: str, **data: Any) -> dict[str, Any]:
        """Publish and wait for the attempt to finish: the finished attempt."""
        answer = self.started(draft_id, **data)
        return self.wait(draft_id, answer["attempt"]["id"])


desk = org_fixture(Desk)


@contextlib.contextmanager
def webhook_to(
    desk: Desk, answer: Callable[[dict[str, Any]], Any] | None = None
) -> Iterator[tuple[WebhookReceiver, dict[str, Any]]]:
    """A webhook receiver and a webhook connection to it. The receiver's address is needed to
    create the connection, and the connection's create answer is the one place its signing
    secret is shown: the receiver verifies with that secret from then on."""
    with WebhookReceiver(new_signing_secret(), answer=answer) as receiver:
        connection = desk.connect("webhook", {"url": receiver.hook_url})
        assert connection["signing_secret"].startswith("whsec_")
        receiver.verifier = Webhook(connection["signing_secret"])
        yield receiver, connection


def only_post(wp: WordPressServer) -> dict[str, Any]:
    with wp.lock:
        [post] = wp.posts.values()
        return dict(post)


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- the happy path ------------------------------------------------------------------------------


@pytest.mark.own_org
def test_publishing_an_approved_draft_to_wordpress_makes_it_live(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()

    answer = desk.started(draft["id"], publisherConnectionId=connection["id"])

    assert answer["draft"]["id"] == draft["id"]
    assert answer["draft"]["status"] == "approved"  # until the target has taken it
    pending = answer["attempt"]
    assert pending["status"] == "pending"
    assert pending["draft_id"] == draft["id"]
    assert pending["publisher_connection_id"] == connection["id"]
    assert pending["mode"] == "publish"
    assert pending["tries"] == 0
    assert pending["triggered_by"] == "user"
    assert pending["triggered_by_id"] == desk.users["editor"]

    attempt = desk.wait(draft["id"], pending["id"])

    assert attempt["status"] == "succeeded", attempt
    post = only_post(wp)
    assert post["status"] == "publish"
    assert post["title"] == TITLE
    assert post["content"].endswith(draft["content"])
    link = f"{wp.url}/{post['slug']}/"
    assert attempt["external_id"] == str(post["id"])
    assert attempt["external_url"] == link
    assert attempt["tries"] == 1
    assert attempt["error"] is None
    assert attempt["triggered_by"] == "user"
    assert attempt["triggered_by_id"] == desk.users["editor"]
    assert attempt["started_at"] is not None and attempt["finished_at"] is not None
    live = desk.get(draft["id"])
    assert live["status"] == "published"
    assert live["published_url"] == link
    assert live["published_at"] is not None
    assert live["slug"] == "pruning-roses-in-early-spring"
    assert live["approved_by"] == desk.users["editor"]


# --- retries -------------------------------------------------------------------------------------


def test_a_target_failing_twice_then_answering_ends_in_one_successful_attempt(
    desk: Desk, wp
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    wp.fail(Failure(500), times=2, method="POST", path=wp.POSTS)

    attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert attempt["status"] == "succeeded", attempt
    assert attempt["tries"] == 3
    assert attempt["error"] is None
    assert desk.attempts(draft["id"])["total"] == 1
    assert len(wp.seen("POST", wp.POSTS)) == 3
    assert only_post(wp)["title"] == TITLE
    assert desk.get(draft["id"])["status"] == "published"


def test_a_rate_limited_try_is_retried_after_the_targets_retry_after(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    wp.fail(Failure(429, headers={"retry-after": "1"}), method="POST", path=wp.POSTS)

    began = time.monotonic()
    attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert attempt["status"] == "succeeded", attempt
    assert attempt["tries"] == 2
    # The backoff alone would retry within a tenth of a second; the target asked for 1 s.
    assert time.monotonic() - began >= 1.0
    assert only_post(wp)["status"] == "publish"


def test_refused_credentials_fail_the_attempt_at_once_and_mark_the_connection(
    desk: Desk, wp
) -> None:
    wrong = {"username": wp.username, "applicationPassword": "zzzz ZZZZ 0000 zzzz ZZZZ 0000"}
    connection = desk.connect("wordpress", {"siteUrl": wp.url}, wrong)
    draft = desk.approved()

    attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert attempt["status"] == "failed"
    assert attempt["tries"] == 1
    error = attempt["error"]
    assert error["code"] == "auth_failed"
    assert error["retryable"] is False
    assert "did not accept the username and Application Password" in error["message"]
    assert "zzzz" not in error["message"].lower()
    assert attempt["external_id"] is None
    after = desk.get(draft["id"])
    assert after["status"] == "approved"
    assert after["published_url"] is None and after["published_at"] is None
    assert wp.posts == {}
    marked = desk.connection(connection["id"])
    assert marked["status"] == "error"
    assert marked["last_error"]

    # The site's owner issues the password we hold after all: the next publish succeeds, and
    # that clears the connection's error.
    wp.application_password = wrong["applicationPassword"]
    retried = desk.published(draft["id"], publisherConnectionId=connection["id"])
    assert retried["status"] == "succeeded", retried
    cleared = desk.connection(connection["id"])
    assert cleared["status"] == "active"
    assert cleared["last_error"] is None


def test_a_site_whose_certificate_fails_the_check_fails_the_attempt_at_once(
    desk: Desk, tmp_path: Path
) -> None:
    """Not "could not be reached", tried five times: the certificate, named, and no retry."""
    ca = PrivateCA(tmp_path)
    with TLSStubServer(ca.issue("127.0.0.1")) as site:
        credentials = {"username": "eda", "applicationPassword": "abcd EFGH 1234 ijkl MNOP 5678"}
        connection = desk.connect("wordpress", {"siteUrl": site.url}, credentials)
        draft = desk.approved()

        attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert (attempt["status"], attempt["tries"]) == ("failed", 1)
    error = attempt["error"]
    assert (error["code"], error["retryable"]) == ("refused", False)
    assert error["message"] == (
        "WordPress: 127.0.0.1's TLS certificate was not accepted (unable to get local issuer "
        "certificate). If the site's certificate is from a private CA, the operator can trust "
        "that CA with CONTENTPLATFORM_OUTBOUND_CA_FILE."
    )
    assert site.requests == []  # nothing was sent


@pytest.mark.parametrize("status", [400, 422])
def test_a_refused_article_fails_the_attempt_without_retrying(desk: Desk, wp, status) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    refusal = Failure(status, message="Invalid parameter(s): title", code="rest_invalid_param")
    wp.fail(refusal, method="POST", path=wp.POSTS)

    attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert attempt["status"] == "failed"
    assert attempt["tries"] == 1
    assert attempt["error"]["code"] == "invalid"
    assert attempt["error"]["retryable"] is False
    assert "Invalid parameter(s): title" in attempt["error"]["message"]
    after = desk.get(draft["id"])
    assert after["status"] == "approved"
    assert after["published_url"] is None
    assert wp.posts == {}
    assert desk.connection(connection["id"])["status"] == "active"  # not a credentials problem


def test_a_target_failing_every_time_fails_the_attempt_after_the_last_try(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    wp.fail(Failure(500), times=1000)

    attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert attempt["status"] == "failed"
    assert attempt["tries"] == MAX_TRIES
    assert attempt["error"]["code"] == "transient"
    assert attempt["error"]["retryable"] is True
    assert "500" in attempt["error"]["message"]
    assert len(wp.requests) == MAX_TRIES  # one request per try: the first one failed each time
    after = desk.get(draft["id"])
    assert after["status"] == "approved"
    assert after["published_url"] is None
    assert desk.connection(connection["id"])["status"] == "active"


def test_a_create_whose_answer_was_lost_is_not_made_twice(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    # The post is written, then the answer is a 500: the next try must find it, not add another.
    wp.fail(Failure(500, after=True), method="POST", path=wp.POSTS)

    attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert attempt["status"] == "succeeded", attempt
    assert attempt["tries"] == 2
    post = only_post(wp)
    assert post["status"] == "publish"
    assert attempt["external_id"] == str(post["id"])
    assert desk.get(draft["id"])["published_url"] == f"{wp.url}/{post['slug']}/"


# --- republishing --------------------------------------------------------------------------------


@pytest.mark.own_org
def test_republishing_an_edited_draft_updates_the_same_post(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    first = desk.published(draft["id"], publisherConnectionId=connection["id"])
    assert first["status"] == "succeeded", first
    before = desk.get(draft["id"])

    edited = desk.update(draft["id"], title="Pruning roses: a second look")
    assert edited["status"] == "published"  # an edit of a live draft keeps it live
    second = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert second["status"] == "succeeded", second
    assert second["external_id"] == first["external_id"]
    post = only_post(wp)
    assert post["title"] == "Pruning roses: a second look"
    assert str(post["id"]) == first["external_id"]
    assert len(wp.seen("POST", wp.POSTS)) == 1  # created once, then updated by id
    after = desk.get(draft["id"])
    assert after["status"] == "published"
    # Fixed at the first publication.
    assert after["published_url"] == before["published_url"]
    assert after["published_at"] == before["published_at"]
    assert after["slug"] == before["slug"] == "pruning-roses-in-early-spring"
    assert [a["id"] for a in desk.attempts(draft["id"])["data"]] == [second["id"], first["id"]]


def test_republishing_a_post_deleted_on_the_target_creates_it_afresh(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    first = desk.published(draft["id"], publisherConnectionId=connection["id"])
    assert first["status"] == "succeeded", first
    with wp.lock:
        wp.posts.clear()  # someone deleted it in WordPress

    # The draft did not change: we believe WordPress has it, until told to send it again.
    unchanged = desk.started(draft["id"], publisherConnectionId=connection["id"])
    assert unchanged["attempt"]["id"] == first["id"]
    assert wp.posts == {}
    second = desk.published(draft["id"], publisherConnectionId=connection["id"], force=True)

    assert second["status"] == "succeeded", second
    post = only_post(wp)
    assert post["title"] == TITLE
    assert post["status"] == "publish"
    assert second["external_id"] == str(post["id"]) != first["external_id"]

    # The new copy is the one a later republish updates.
    desk.update(draft["id"], title="Pruning roses, revised")
    third = desk.published(draft["id"], publisherConnectionId=connection["id"])
    assert third["external_id"] == second["external_id"]
    assert only_post(wp)["title"] == "Pruning roses, revised"


# --- every target, end to end --------------------------------------------------------------------


def test_publishing_to_ghost(desk: Desk) -> None:
    with GhostServer() as ghost:
        connection = desk.connect(
            "ghost", {"adminUrl": ghost.url}, {"adminApiKey": ghost.admin_api_key}
        )
        draft = desk.approved()

        attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

        assert attempt["status"] == "succeeded", attempt
        [post] = ghost.posts.values()
        assert post["title"] == TITLE
        assert post["status"] == "published"
        assert "Cut back dead wood" in post["html"]
        assert attempt["external_id"] == str(post["id"])
        live = desk.get(draft["id"])
        assert live["status"] == "published"
        assert live["published_url"] == f"{ghost.url}/{post['slug']}/"
        assert all(claims["aud"] == "/admin/" for claims in ghost.tokens)


def test_publishing_to_shopify(desk: Desk) -> None:
    with ShopifyShop() as shop:
        connection = desk.connect(
            "shopify", {"storeUrl": shop.url, "blogId": shop.blog_id}, {"accessToken": shop.token}
        )
        draft = desk.approved()

        attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

        assert attempt["status"] == "succeeded", attempt
        [article] = shop.articles.values()
        assert article["title"] == TITLE
        assert article["isPublished"] is True
        assert "Cut back dead wood" in article["body"]
        assert attempt["external_id"] == str(article["id"])
        live = desk.get(draft["id"])
        assert live["status"] == "published"
        assert live["published_url"] == (f"{shop.primary_domain}/blogs/news/{article['handle']}")


def test_publishing_to_webflow(desk: Desk) -> None:
    with WebflowSite() as webflow:
        config = {
            "apiBaseUrl": webflow.url,
            "collectionId": webflow.collection_id,
            "fieldMapping": {"content": "post-body"},
            "publicUrlPattern": "https://www.example.com/blog/{slug}",
        }
        connection = desk.connect("webflow", config, {"apiToken": webflow.token})
        draft = desk.approved()

        attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

        assert attempt["status"] == "succeeded", attempt
        [(item_id, live_fields)] = webflow.live.items()
        assert live_fields["name"] == TITLE
        assert "Cut back dead wood" in live_fields["post-body"]
        assert attempt["external_id"] == item_id
        live = desk.get(draft["id"])
        assert live["status"] == "published"
        assert live["published_url"] == f"https://www.example.com/blog/{live_fields['slug']}"


def test_publishing_to_a_webhook_signs_the_event_with_the_connections_secret(desk: Desk) -> None:
    answer = {"id": "post-77", "url": "https://blog.example/post-77"}
    with webhook_to(desk, answer=lambda event: answer) as (receiver, connection):
        draft = desk.approved()

        attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])

        assert attempt["status"] == "succeeded", attempt
        assert receiver.rejected == []
        [event] = receiver.events
        assert event["type"] == "article.published"
        assert event["data"]["title"] == TITLE
        assert attempt["external_id"] == "post-77"
        live = desk.get(draft["id"])
        assert live["status"] == "published"
        assert live["published_url"] == "https://blog.example/post-77"
        # The secret is shown once: the connection never answers it again.
        assert "signing_secret" not in desk.connection(connection["id"])


# --- modes ---------------------------------------------------------------------------------------


def test_mode_draft_puts_an_unpublished_copy_on_the_target_that_publish_then_makes_live(
    desk: Desk, wp
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()

    as_draft = desk.published(draft["id"], publisherConnectionId=connection["id"], mode="draft")

    assert as_draft["status"] == "succeeded", as_draft
    assert as_draft["mode"] == "draft"
    post = only_post(wp)
    assert post["status"] == "draft"
    assert post["title"] == TITLE
    kept = desk.get(draft["id"])
    assert kept["status"] == "approved"
    assert kept["published_url"] is None and kept["published_at"] is None

    live = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert live["status"] == "succeeded", live
    assert live["external_id"] == as_draft["external_id"]
    post = only_post(wp)
    assert post["status"] == "publish"
    assert desk.get(draft["id"])["published_url"] == f"{wp.url}/{post['slug']}/"


def test_mode_schedule_waits_for_scheduled_at_then_publishes(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    when = datetime.now(UTC) + timedelta(seconds=2)

    answer = desk.started(
        draft["id"],
        publisherConnectionId=connection["id"],
        mode="schedule",
        scheduledAt=when.isoformat(),
    )

    scheduled = answer["attempt"]
    assert scheduled["status"] == "scheduled"
    assert scheduled["mode"] == "schedule"
    assert instant(scheduled["scheduled_at"]) == when
    time.sleep(0.5)
    assert desk.attempt(draft["id"], scheduled["id"])["status"] == "scheduled"
    assert wp.requests == []  # nothing sent before its time
    assert desk.get(draft["id"])["status"] == "approved"

    attempt = desk.wait(draft["id"], scheduled["id"])

    assert attempt["status"] == "succeeded", attempt
    assert instant(attempt["started_at"]) >= when
    assert only_post(wp)["status"] == "publish"
    assert desk.get(draft["id"])["status"] == "published"


def test_a_new_publish_cancels_a_scheduled_one(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    scheduled = desk.started(
        draft["id"], publisherConnectionId=connection["id"], mode="schedule", scheduledAt=later
    )["attempt"]

    now = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert now["status"] == "succeeded", now
    assert desk.attempt(draft["id"], scheduled["id"])["status"] == "cancelled"
    assert len(wp.posts) == 1


def test_a_scheduled_draft_sent_back_to_review_is_not_published(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    when = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    scheduled = desk.started(
        draft["id"], publisherConnectionId=connection["id"], mode="schedule", scheduledAt=when
    )["attempt"]
    assert desk.update(draft["id"], content="<p>Rewritten.</p>")["status"] == "reviewing"

    attempt = desk.wait(draft["id"], scheduled["id"])

    assert attempt["status"] == "failed"
    assert attempt["error"]["retryable"] is False
    assert "reviewing" in attempt["error"]["message"]
    assert wp.requests == []
    assert desk.get(draft["id"])["status"] == "reviewing"


def test_scheduling_needs_a_future_scheduled_at_and_only_schedule_takes_one(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    target = {"publisherConnectionId": connection["id"]}
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()

    for data, field in [
        ({"mode": "schedule"}, "scheduledAt"),
        ({"mode": "schedule", "scheduledAt": past}, "scheduledAt"),
        ({"mode": "schedule", "scheduledAt": "2999-01-01T09:00:00"}, "scheduledAt"),  # no zone
        ({"mode": "publish", "scheduledAt": future}, "scheduledAt"),
        ({"scheduledAt": future}, "scheduledAt"),  # publish is the default mode
    ]:
        body = problem(desk.publish(draft["id"], **target, **data), 400, "BAD_REQUEST")
        assert [error["path"] for error in body["errors"]] == [field], data

    assert desk.attempts(draft["id"])["total"] == 0
    assert wp.requests == []


def test_a_published_draft_cannot_go_back_to_the_target_as_a_draft(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    assert desk.published(draft["id"], publisherConnectionId=connection["id"])["status"] == (
        "succeeded"
    )

    response = desk.publish(draft["id"], publisherConnectionId=connection["id"], mode="draft")

    problem(response, 409, "CONFLICT")
    assert only_post(wp)["status"] == "publish"


# --- conflicts -----------------------------------------------------------------------------------


def test_only_approved_or_published_drafts_publish(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    reviewing = desk.create("Still in review", CONTENT)
    rejected = desk.reject(desk.create("Turned down", CONTENT)["id"])

    for draft in (reviewing, rejected):
        response = desk.publish(draft["id"], publisherConnectionId=connection["id"])
        body = problem(response, 409, "CONFLICT")
        assert draft["status"] in body["detail"]
        assert desk.attempts(draft["id"])["total"] == 0
    assert wp.requests == []


def test_a_disabled_connection_publishes_nothing(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    desk.ok("publishers.update", {"id": connection["id"], "status": "disabled"}, role="admin")
    draft = desk.approved()

    response = desk.publish(draft["id"], publisherConnectionId=connection["id"])

    problem(response, 409, "CONFLICT")
    assert desk.attempts(draft["id"])["total"] == 0
    assert wp.requests == []


def test_another_publish_while_one_is_under_way_is_a_conflict(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    # The first try hangs for a while before failing, so the attempt is still under way.
    wp.fail(Failure(500, delay=1.5))
    first = desk.started(draft["id"], publisherConnectionId=connection["id"])["attempt"]

    # The same request again is answered with the attempt under way; another one is refused.
    again = desk.started(draft["id"], publisherConnectionId=connection["id"])
    assert again["attempt"]["id"] == first["id"]
    second = desk.publish(draft["id"], publisherConnectionId=connection["id"], mode="draft")

    body = problem(second, 409, "CONFLICT")
    assert first["id"] in body["detail"]
    finished = desk.wait(draft["id"], first["id"])
    assert finished["status"] == "succeeded", finished
    assert desk.attempts(draft["id"])["total"] == 1
    assert len(wp.posts) == 1


# --- a request the target needs nothing for ------------------------------------------------------

RACERS = 20


def writes(wp: WordPressServer) -> list[str]:
    """The paths of the requests that changed something in WordPress (creates and updates)."""
    with wp.lock:
        return [r.path for r in wp.requests if r.method in ("POST", "PUT", "PATCH")]


def racing(desk: Desk, draft_id: str, connection_id: str) -> set[str]:
    """RACERS publish requests at once: the attempts they answered with (each must be a 200)."""
    with ThreadPoolExecutor(RACERS) as pool:
        answers = list(
            pool.map(
                lambda _: desk.publish(draft_id, publisherConnectionId=connection_id),
                range(RACERS),
            )
        )
    assert [a.status_code for a in answers] == [200] * RACERS, [a.text for a in answers]
    return {a.json()["attempt"]["id"] for a in answers}


def test_racing_publishes_of_a_draft_send_it_once(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()

    # Twenty at once: one attempt, one create.
    (first,) = racing(desk, draft["id"], connection["id"])
    assert desk.wait(draft["id"], first)["status"] == "succeeded"
    assert writes(wp) == [wp.POSTS]

    # Twenty more of the unchanged draft: WordPress has it; nothing is sent, the answer is the
    # attempt that put it there.
    assert racing(desk, draft["id"], connection["id"]) == {first}
    assert writes(wp) == [wp.POSTS]

    # Edited, then twenty at once: one update.
    desk.update(draft["id"], title="Pruning roses: a second look")
    (second,) = racing(desk, draft["id"], connection["id"])
    assert second != first
    assert desk.wait(draft["id"], second)["status"] == "succeeded"
    post_id = desk.attempt(draft["id"], first)["external_id"]
    assert writes(wp) == [wp.POSTS, f"{wp.POSTS}/{post_id}"]
    assert only_post(wp)["title"] == "Pruning roses: a second look"
    assert desk.attempts(draft["id"])["total"] == 2


def test_a_copy_sent_as_a_draft_is_still_sent_live(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    as_draft = desk.published(draft["id"], publisherConnectionId=connection["id"], mode="draft")
    assert as_draft["status"] == "succeeded", as_draft

    # Same version, another outcome: sent.
    live = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert live["id"] != as_draft["id"]
    assert live["status"] == "succeeded", live
    assert only_post(wp)["status"] == "publish"
    # And again live: nothing to do.
    again = desk.started(draft["id"], publisherConnectionId=connection["id"])
    assert again["attempt"]["id"] == live["id"]
    assert again["draft"]["status"] == "published"


def test_a_failed_attempt_does_not_count_as_sent(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    wp.fail(Failure(400), method="POST", path=wp.POSTS)
    failed = desk.published(draft["id"], publisherConnectionId=connection["id"])
    assert failed["status"] == "failed", failed

    retried = desk.published(draft["id"], publisherConnectionId=connection["id"])

    assert retried["id"] != failed["id"]
    assert retried["status"] == "succeeded", retried
    assert len(wp.posts) == 1


# --- which connection ----------------------------------------------------------------------------


@pytest.mark.own_org
def test_without_a_connection_id_the_jobs_connection_then_the_default_one_is_used(
    desk: Desk,
) -> None:
    with WordPressServer() as first_site, WordPressServer() as job_site:
        default = desk.wordpress(first_site)  # the organization's first: its default
        for_job = desk.wordpress(job_site, name="The job's site")
        assert default["is_default"] is True and for_job["is_default"] is False
        job = desk.ok(
            "jobs.create",
            {
                "name": "Rose care",
                "topics": ["Pruning"],
                "status": "paused",
                "publisherConnectionId": for_job["id"],
            },
        )
        without_connection = desk.job("No connection")
        of_job = desk.approved("From the job", jobId=job["id"])
        of_plain_job = desk.approved("From a job without a connection", jobId=without_connection)
        loose = desk.approved("No job at all")

        by_job = desk.published(of_job["id"])
        by_plain_job = desk.published(of_plain_job["id"])
        by_default = desk.published(loose["id"])

        assert by_job["publisher_connection_id"] == for_job["id"]
        assert by_plain_job["publisher_connection_id"] == default["id"]
        assert by_default["publisher_connection_id"] == default["id"]
        assert [a["status"] for a in (by_job, by_plain_job, by_default)] == ["succeeded"] * 3
        assert [p["title"] for p in job_site.posts.values()] == ["From the job"]
        assert sorted(p["title"] for p in first_site.posts.values()) == [
            "From a job without a connection",
            "No job at all",
        ]

        # Another connection made default takes over for drafts without a job's connection.
        with WordPressServer() as new_site:
            newer = desk.wordpress(new_site, isDefault=True)
            later = desk.approved("After the switch")
            assert desk.published(later["id"])["publisher_connection_id"] == newer["id"]
            assert [p["title"] for p in new_site.posts.values()] == ["After the switch"]


@pytest.mark.own_org
def test_a_draft_whose_jobs_connection_was_deleted_goes_to_the_default_one(desk: Desk) -> None:
    with WordPressServer() as default_site, WordPressServer() as job_site:
        default = desk.wordpress(default_site)
        for_job = desk.wordpress(job_site, name="The job's site")
        job = desk.ok(
            "jobs.create",
            {
                "name": "Roses",
                "topics": ["Pruning"],
                "status": "paused",
                "publisherConnectionId": for_job["id"],
            },
        )
        desk.ok("publishers.delete", {"id": for_job["id"]}, role="admin")
        draft = desk.approved("Orphaned by its site", jobId=job["id"])

        attempt = desk.published(draft["id"])

        assert attempt["publisher_connection_id"] == default["id"]
        assert [p["title"] for p in default_site.posts.values()] == ["Orphaned by its site"]
        assert job_site.requests == []


@pytest.mark.own_org
def test_without_any_connection_publishing_is_a_bad_request(desk: Desk) -> None:
    draft = desk.approved()

    body = problem(desk.publish(draft["id"]), 400, "BAD_REQUEST")

    assert [error["path"] for error in body["errors"]] == ["publisherConnectionId"]
    assert desk.attempts(draft["id"])["total"] == 0


def test_an_unknown_or_deleted_connection_is_not_found(desk: Desk, wp) -> None:
    deleted = desk.wordpress(wp)
    desk.ok("publishers.delete", {"id": deleted["id"]}, role="admin")
    draft = desk.approved()

    for connection_id in ("00000000-0000-4000-8000-000000000000", deleted["id"]):
        response = desk.publish(draft["id"], publisherConnectionId=connection_id)
        problem(response, 404, "NOT_FOUND")
    assert desk.attempts(draft["id"])["total"] == 0
    assert wp.requests == []


# --- roles and tenants ---------------------------------------------------------------------------


def test_members_read_attempts_but_only_editors_publish(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()

    refused = desk.publish(draft["id"], role="member", publisherConnectionId=connection["id"])

    problem(refused, 403, "FORBIDDEN")
    assert desk.attempts(draft["id"]) == {"data": [], "total": 0}
    attempt = desk.published(draft["id"], publisherConnectionId=connection["id"])
    assert desk.attempts(draft["id"])["data"] == [attempt]  # read as the member
    assert len(wp.posts) == 1


def test_another_organization_sees_neither_drafts_nor_connections(
    desk: Desk, wp, other_tenant
) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    desk.published(draft["id"], publisherConnectionId=connection["id"])
    other = Desk.of(other_tenant)
    other_connection = other.wordpress(wp)
    own = other.approved("Theirs")

    problem(
        other.publish(draft["id"], publisherConnectionId=other_connection["id"]), 404, "NOT_FOUND"
    )
    problem(
        other.request("drafts.listPublishAttempts", {"id": draft["id"]}, role="member"),
        404,
        "NOT_FOUND",
    )
    problem(other.publish(own["id"], publisherConnectionId=connection["id"]), 404, "NOT_FOUND")

    assert other.attempts(own["id"])["total"] == 0
    assert desk.attempts(draft["id"])["total"] == 1
    assert [p["title"] for p in wp.posts.values()] == [TITLE]


# --- listing attempts ----------------------------------------------------------------------------


def test_attempts_are_listed_newest_first_a_page_at_a_time(desk: Desk, wp) -> None:
    connection = desk.wordpress(wp)
    draft = desk.approved()
    made = [desk.published(draft["id"], publisherConnectionId=connection["id"])]
    for title in ("Second", "Third"):
        desk.update(draft["id"], title=title)
        made.append(desk.published(draft["id"], publisherConnectionId=connection["id"]))

    newest = desk.attempts(draft["id"], page=1, limit=2)
    oldest = desk.attempts(draft["id"], page=2, limit=2)

    assert [a["id"] for a in newest["data"]] == [made[2]["id"], made[1]["id"]]
    assert [a["id"] for a in oldest["data"]] == [made[0]["id"]]
    assert newest["total"] == oldest["total"] == 3
    assert desk.attempts(draft["id"], page=3, limit=2) == {"data": [], "total": 3}
    assert only_post(wp)["title"] == "Third"
    versions = [a["draft_version"] for a in newest["data"] + oldest["data"]]
    assert versions == sorted(set(versions), reverse=True)  # each republish sent a later edit


def test_a_jobs_publish_success_rate_counts_its_finished_attempts(desk: Desk, wp) -> None:
    good = desk.wordpress(wp)
    wrong = {"username": wp.username, "applicationPassword": "wrong password"}
    bad = desk.connect("wordpress", {"siteUrl": wp.url}, wrong)
    job_id = desk.job()
    analytics = {"id": job_id}
    assert desk.ok("jobs.getAnalytics", analytics, role="member")["publishSuccessRate"] == 0.0
    one = desk.approved("Goes out", jobId=job_id)
    two = desk.approved("Does not", jobId=job_id)

    assert desk.published(one["id"], publisherConnectionId=good["id"])["status"] == "succeeded"
    assert desk.published(two["id"], publisherConnectionId=bad["id"])["status"] == "failed"

    assert desk.ok("jobs.getAnalytics", analytics, role="member")["publishSuccessRate"] == 0.5
