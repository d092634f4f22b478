"""The webhook strategy against a local receiver that verifies Standard Webhooks signatures."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import httpx
import pytest
from bs4 import BeautifulSoup
from pydantic import ValidationError
from standardwebhooks.webhooks import Webhook as StandardWebhook

from contentplatform.kit.outbound import GuardedClient
from contentplatform.publishers.strategies.base import (
    Ambiguous,
    Article,
    Invalid,
    Remote,
    RemoteNotFound,
    Transient,
)
from contentplatform.publishers.strategies.webhook import (
    WebhookTarget,
    WebhookTargetConfig,
    new_signing_secret,
)
from tests.publishers.strategies.support import (
    DRAFT_ID,
    LOOPBACK,
    UNSPLASH_CREDIT,
    our_picture,
    run_strategy,
    stock_picture,
)
from tests.support.targets.scripted import Failure
from tests.support.targets.webhook import WebhookReceiver

SECRET = new_signing_secret()
T = TypeVar("T")


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver(SECRET) as server:
        yield server


def article(**changes: Any) -> Article:
    values: dict[str, Any] = {
        "draft_id": DRAFT_ID,
        "version": 1,
        "title": "Acme pricing explained",
        "html": "<p>Three plans, billed monthly.</p>",
        "excerpt": "How the three plans differ.",
        "slug": "acme-pricing",
        "seo_title": "Acme pricing",
        "meta_description": "What each plan costs.",
        "tags": ["pricing"],
        "canonical_url": "https://acme.example/pricing",
    }
    return Article(**(values | changes))


def act(
    receiver: WebhookReceiver,
    action: Callable[[WebhookTarget], Awaitable[T]],
    *,
    secret: str = SECRET,
) -> T:
    config = {"url": receiver.hook_url}
    return run_strategy(WebhookTarget, config, None, action, signing_secret=secret)


def test_publish_delivers_a_signed_article_event(receiver: WebhookReceiver) -> None:
    result = act(receiver, lambda s: s.publish(article(), "publish"))

    [event] = receiver.events
    assert event["type"] == "article.published"
    assert event["data"] == {
        "draft_id": str(DRAFT_ID),
        "version": 1,
        "title": "Acme pricing explained",
        "slug": "acme-pricing",
        "html": "<p>Three plans, billed monthly.</p>",
        "excerpt": "How the three plans differ.",
        "seo_title": "Acme pricing",
        "meta_description": "What each plan costs.",
        "tags": ["pricing"],
        "canonical_url": "https://acme.example/pricing",
        "featured_image": None,
        "inline_images": [],
        "external_id": str(DRAFT_ID),
    }
    [delivery] = receiver.deliveries
    assert delivery.headers["webhook-signature"].startswith("v1,")
    assert result.external_id == str(DRAFT_ID)
    assert result.external_url is None
    assert result.status == "published"
    assert result.remote_version == delivery.headers["webhook-id"]
    assert result.published_at is not None


def test_the_receivers_id_and_url_name_the_copy() -> None:
    answer = {"id": "post-77", "url": "https://blog.acme.example/acme-pricing"}
    with WebhookReceiver(SECRET, answer=lambda event: answer) as receiver:
        result = act(receiver, lambda s: s.publish(article(), "publish"))

    assert result.external_id == "post-77"
    assert result.external_url == "https://blog.acme.example/acme-pricing"


def test_draft_mode_sends_a_drafted_event(receiver: WebhookReceiver) -> None:
    result = act(receiver, lambda s: s.publish(article(), "draft"))

    assert [event["type"] for event in receiver.events] == ["article.drafted"]
    assert result.status == "draft"
    assert result.published_at is None


def test_update_and_unpublish_send_their_own_events(receiver: WebhookReceiver) -> None:
    first = act(receiver, lambda s: s.publish(article(), "publish"))
    remote = Remote(first.external_id, first.remote_version, first.external_url)

    updated = act(receiver, lambda s: s.update(remote, article(version=2, title="New"), "publish"))
    remote = Remote(updated.external_id, updated.remote_version, updated.external_url)
    taken_down = act(receiver, lambda s: s.unpublish(remote))

    assert [event["type"] for event in receiver.events] == [
        "article.published",
        "article.updated",
        "article.unpublished",
    ]
    assert receiver.events[1]["data"]["title"] == "New"
    assert receiver.events[2]["data"] == {"external_id": str(DRAFT_ID)}
    assert updated.external_id == first.external_id
    assert taken_down.status == "unpublished"


def test_a_retried_delivery_keeps_its_id_so_the_receiver_keeps_one(
    receiver: WebhookReceiver,
) -> None:
    receiver.fail(Failure(500, after=True))  # kept, but the answer says it failed

    with pytest.raises(Ambiguous):
        act(receiver, lambda s: s.publish(article(), "publish"))
    act(receiver, lambda s: s.publish(article(), "publish"))

    assert len(receiver.deliveries) == 2
    assert receiver.event_ids[0] == receiver.event_ids[1]
    assert len(receiver.events) == 1


def test_republishing_after_an_unpublish_is_a_new_delivery(receiver: WebhookReceiver) -> None:
    first = act(receiver, lambda s: s.publish(article(), "publish"))
    down = act(receiver, lambda s: s.unpublish(Remote(first.external_id, first.remote_version)))
    act(
        receiver,
        lambda s: s.update(Remote(down.external_id, down.remote_version), article(), "publish"),
    )
    # The same version published, unpublished and published again: each one counts.
    assert len(set(receiver.event_ids)) == 3
    assert [event["type"] for event in receiver.events] == [
        "article.published",
        "article.unpublished",
        "article.updated",
    ]


def test_a_delivery_signed_with_another_secret_is_refused(receiver: WebhookReceiver) -> None:
    with pytest.raises(Invalid, match="400"):
        act(receiver, lambda s: s.publish(article(), "publish"), secret=new_signing_secret())

    assert len(receiver.rejected) == 1
    assert receiver.events == []


def test_the_signature_covers_the_body(receiver: WebhookReceiver) -> None:
    act(receiver, lambda s: s.publish(article(), "publish"))
    [delivery] = receiver.deliveries
    headers = {
        k: delivery.headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")
    }
    tampered = delivery.body.replace(b"Acme pricing explained", b"Acme pricing, all free")

    with httpx.Client(trust_env=False) as client:  # straight to the loopback receiver
        refused = client.post(receiver.hook_url, content=tampered, headers=headers)
        replayed = client.post(receiver.hook_url, content=delivery.body, headers=headers)

    assert refused.status_code == 400
    assert replayed.status_code == 200
    assert len(receiver.events) == 1  # the replay was a duplicate


def test_a_receiver_that_says_gone_is_not_found(receiver: WebhookReceiver) -> None:
    receiver.fail(Failure(410))

    with pytest.raises(RemoteNotFound):
        act(receiver, lambda s: s.update(Remote(str(DRAFT_ID), "msg_x"), article(), "publish"))


def test_a_receiver_that_is_down_is_transient(receiver: WebhookReceiver) -> None:
    receiver.fail(Failure(503))

    with pytest.raises(Transient) as raised:
        act(receiver, lambda s: s.update(Remote(str(DRAFT_ID), "msg_x"), article(), "publish"))

    assert raised.value.retryable
    assert receiver.events == []


def test_connection_test_sends_a_signed_test_event(receiver: WebhookReceiver) -> None:
    result = act(receiver, lambda s: s.test_connection())

    assert result.ok is True
    assert result.account_label == "127.0.0.1"
    assert [event["type"] for event in receiver.events] == ["webhook.test"]


def test_connection_test_fails_when_the_receiver_refuses(receiver: WebhookReceiver) -> None:
    with pytest.raises(Invalid):
        act(receiver, lambda s: s.test_connection(), secret=new_signing_secret())
    receiver.fail(Failure(500))
    with pytest.raises(Transient):
        act(receiver, lambda s: s.test_connection())


def test_new_signing_secrets_are_random_whsec_keys() -> None:
    first, second = new_signing_secret(), new_signing_secret()

    assert first.startswith("whsec_") and first != second
    assert len(base64.b64decode(first.removeprefix("whsec_"))) == 32
    StandardWebhook(first)  # a key the reference library takes


def test_a_webhook_has_no_credentials_but_needs_its_secret() -> None:
    assert WebhookTarget.Credentials is None
    assert WebhookTarget.credentials_hint(None) is None
    config = WebhookTargetConfig(url="https://hooks.acme.example/content")
    assert WebhookTarget.urls(config) == ["https://hooks.acme.example/content"]

    async def build() -> None:
        async with GuardedClient(LOOPBACK) as client:
            WebhookTarget(config, None, client, signing_secret=None)

    with pytest.raises(ValueError, match="signing secret"):
        asyncio.run(build())


@pytest.mark.parametrize(
    "raw",
    [
        {"url": "hooks.acme.example/content"},
        {"url": "ftp://hooks.acme.example/content"},
        {"url": "https://user:pw@hooks.acme.example/content"},
        {},
        {"url": "https://hooks.acme.example/content", "secret": "whsec_x"},
    ],
)
def test_config_refuses_bad_urls_missing_and_unknown_fields(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        WebhookTargetConfig.model_validate(raw)


def test_the_featured_image_goes_with_its_credit_and_whether_it_may_be_copied(
    receiver: WebhookReceiver,
) -> None:
    act(receiver, lambda s: s.publish(article(featured_image=stock_picture()), "publish"))
    act(receiver, lambda s: s.publish(article(featured_image=our_picture(), version=2), "publish"))

    stock, ours = (event["data"]["featured_image"] for event in receiver.events)
    assert stock == {
        "url": "https://images.unsplash.com/photo-1?ixid=abc&w=1080",
        "alt": "A lighthouse",
        "caption": "Photo by Ana Lens on Unsplash",
        "mime_type": "image/jpeg",
        "sha256": None,  # hotlinked: there is no file of ours to copy
        "hotlink_required": True,
        "credit": {
            "text": "Photo by Ana Lens on Unsplash",
            "author_name": "Ana Lens",
            "author_url": UNSPLASH_CREDIT.author_url,
            "source_name": "Unsplash",
            "source_url": UNSPLASH_CREDIT.source_url,
        },
    }
    assert ours["url"] == "https://files.example/signed/harbour.png"
    assert ours["hotlink_required"] is False
    assert ours["sha256"] == our_picture().content_hash
    assert ours["caption"] == "The harbour <at> dawn"
    assert ours["credit"] is None


def test_inline_images_go_as_figures_and_as_a_list_to_copy(receiver: WebhookReceiver) -> None:
    pictures = [our_picture(), stock_picture()]
    act(receiver, lambda s: s.publish(article(inline_images=pictures), "publish"))

    [event] = receiver.events
    listed = event["data"]["inline_images"]
    assert [(i["url"], i["hotlink_required"]) for i in listed] == [
        ("https://files.example/signed/harbour.png", False),
        ("https://images.unsplash.com/photo-1?ixid=abc&w=1080", True),
    ]
    assert [i["sha256"] for i in listed] == [pictures[0].content_hash, None]
    assert listed[1]["credit"]["author_name"] == "Ana Lens"
    page = BeautifulSoup(event["data"]["html"], "html.parser")
    assert [img["src"] for img in page.find_all("img")] == [i["url"] for i in listed]
