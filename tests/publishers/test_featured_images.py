"""A draft's featured image goes out with it (media.attach, then drafts.publish), over REST and
RPC: the stand-in WordPress site receives the stored file in its media library and the post
names it; a licence that expired since the image was attached, or one that rules out
commercial use, refuses the publish with the reason and sends nothing."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from bs4 import BeautifulSoup

from tests.media.support import Media, jpeg
from tests.publishers.desk import Desk
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.targets.wordpress import WordPressServer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

desk = org_fixture(Desk)


def featured(desk: Desk, **license: object) -> tuple[dict[str, object], dict[str, object]]:
    """An approved draft with a new JPEG as its featured image: (draft, asset)."""
    media = Media.of(desk)
    asset = media.add(
        jpeg(640, 480), altText="Roses pruned back to an outward bud", license=license
    )
    draft = desk.approved()
    response = media.attach(asset["id"], draft["id"], role="featured")
    assert response.status_code == 200, response.text
    return draft, asset


def test_wordpress_receives_the_stored_image_and_the_post_names_it(
    desk: Desk, wp: WordPressServer
) -> None:
    draft, asset = featured(desk, type="owned")
    connection = desk.wordpress(wp)

    desk.published(draft["id"], connection["id"])

    [uploaded] = wp.media.values()
    assert hashlib.sha256(uploaded["data"]).hexdigest() == asset["content_hash"]
    assert uploaded["mime_type"] == "image/jpeg"
    assert uploaded["alt_text"] == "Roses pruned back to an outward bud"
    [post] = wp.posts.values()
    assert post["featured_media"] == uploaded["id"]


def test_a_licence_expired_since_attaching_refuses_the_publish(
    desk: Desk, wp: WordPressServer
) -> None:
    soon = datetime.now(UTC) + timedelta(days=3)
    draft, asset = featured(desk, type="royalty_free", expiresAt=soon.isoformat())
    connection = desk.wordpress(wp)
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    changed = Media.of(desk).update(asset["id"], license={"expiresAt": past})
    assert changed.status_code == 200, changed.text

    refused = desk.request(
        "drafts.publish", {"id": draft["id"], "publisherConnectionId": connection["id"]}
    )

    body = problem(refused, 409, "CONFLICT")
    assert "featured image's licence expired" in body["detail"]
    assert desk.attempts(draft["id"]) == []
    assert wp.requests == []


def test_a_licence_without_commercial_use_refuses_the_publish(
    desk: Desk, wp: WordPressServer
) -> None:
    draft, asset = featured(desk, type="owned")
    connection = desk.wordpress(wp)
    Media.of(desk).update(asset["id"], license={"usageRights": {"commercial": False}})

    refused = desk.request(
        "drafts.publish", {"id": draft["id"], "publisherConnectionId": connection["id"]}
    )

    body = problem(refused, 409, "CONFLICT")
    assert "does not allow commercial use" in body["detail"]
    assert wp.requests == []


def test_an_inline_image_goes_into_the_wordpress_post_from_its_media_library(
    desk: Desk, wp: WordPressServer
) -> None:
    media = Media.of(desk)
    asset = media.add(jpeg(640, 480), altText="Secateurs on a bench", license={"type": "owned"})
    draft = desk.approved()
    attached = media.attach(asset["id"], draft["id"], role="inline")
    assert attached.status_code == 200, attached.text
    connection = desk.wordpress(wp)

    desk.published(draft["id"], connection["id"])

    [uploaded] = wp.media.values()
    assert hashlib.sha256(uploaded["data"]).hexdigest() == asset["content_hash"]
    [post] = wp.posts.values()
    assert post["featured_media"] == 0
    images = BeautifulSoup(post["content"], "html.parser").find_all("img")
    assert [(img["src"], img["alt"]) for img in images] == [
        (uploaded["source_url"], "Secateurs on a bench")
    ]


def test_an_inline_images_expired_licence_refuses_the_publish(
    desk: Desk, wp: WordPressServer
) -> None:
    media = Media.of(desk)
    soon = datetime.now(UTC) + timedelta(days=3)
    asset = media.add(
        jpeg(640, 480), license={"type": "royalty_free", "expiresAt": soon.isoformat()}
    )
    draft = desk.approved()
    assert media.attach(asset["id"], draft["id"], role="inline").status_code == 200
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    assert media.update(asset["id"], license={"expiresAt": past}).status_code == 200
    connection = desk.wordpress(wp)

    refused = desk.request(
        "drafts.publish", {"id": draft["id"], "publisherConnectionId": connection["id"]}
    )

    assert "inline image's licence expired" in problem(refused, 409, "CONFLICT")["detail"]
    assert wp.requests == []
