"""What is published names none of the tenant's files, over REST and RPC: a generated article
sent to WordPress and to a signed webhook (the stand-ins on loopback) and read through the public
blog feed carries no filename, storage path or heading path of the knowledge it was written
from, while the draft's provenance, read through the API by the tenant's users, names them.

Drafts generated before citations moved to the provenance end with a Sources list naming the
files (`<h2 id="sources">`, `<li id="source-n">`), cited by `#source-n` links: they go out
without that list and those links, their prose untouched; a public source's link stays.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from contentplatform.publishers.strategies.webhook import new_signing_secret
from tests.generation.support import HANDBOOK, Writer
from tests.publishers.support import connection_body
from tests.support.orgs import org_fixture
from tests.support.targets.webhook import WebhookReceiver
from tests.support.targets.wordpress import WordPressServer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

WAIT_SECONDS = 15.0
FINISHED = ("succeeded", "failed", "cancelled")
TENANT = "x-tenant-id"

# What a draft generated before this change ends with (generation/article.py wrote it so).
OLD_PROSE = (
    "<p>Water at 94 degrees extracts the most flavour."
    '<sup class="citation"><a href="#source-1">[1]</a></sup> Grind just before brewing.'
    '<sup class="citation"><a href="#source-2">[2]</a></sup></p>'
)
OLD_SOURCES = (
    '<h2 id="sources">Sources</h2><ol>'
    '<li id="source-1">coffee-guide.pdf, Brewing &gt; Water temperature</li>'
    '<li id="source-2">coffee-guide.pdf, Brewing &gt; Grinding</li></ol>'
)


class Publisher(Writer):
    """One organization that generates articles and publishes them, through one transport."""

    def connect(self, type: str, config: dict[str, Any], credentials: Any = None) -> str:
        body = connection_body(f"My {type}", type, config, credentials)
        return str(self.ok("publishers.create", body, role="admin")["id"])

    def wordpress(self, wp: WordPressServer) -> str:
        credentials = {"username": wp.username, "applicationPassword": wp.application_password}
        return self.connect("wordpress", {"siteUrl": wp.url}, credentials)

    def publish(self, draft_id: str, connection_id: str) -> dict[str, Any]:
        """Publish and wait for the attempt to succeed: the draft as it then is."""
        data = {"id": draft_id, "publisherConnectionId": connection_id}
        attempt_id = self.ok("drafts.publish", data, role="editor")["attempt"]["id"]
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            attempts = self.ok("drafts.listPublishAttempts", {"id": draft_id, "limit": 100})
            [attempt] = [a for a in attempts["data"] if a["id"] == attempt_id]
            if attempt["status"] in FINISHED:
                assert attempt["status"] == "succeeded", attempt
                return self.draft(draft_id)
            assert time.monotonic() < deadline, attempt
            time.sleep(0.05)

    def public_post(self, slug: str) -> dict[str, Any]:
        """The post through the public feed, and the feed's page listing it, as one answer."""
        headers = {TENANT: str(self.tenant_id)}
        post = self.call("public.getBlog", {"slug": slug}, headers=headers)
        listed = self.call("public.listBlogs", {}, headers=headers)
        assert post.status_code == listed.status_code == 200, (post.text, listed.text)
        return {"post": post.json(), "list": listed.json()}


publisher = org_fixture(Publisher)


@pytest.fixture
def wp() -> Iterator[WordPressServer]:
    with WordPressServer() as server:
        yield server


@pytest.fixture
def hook(publisher: Publisher) -> Iterator[tuple[WebhookReceiver, str]]:
    """A webhook receiver and the organization's connection to it."""
    with WebhookReceiver(new_signing_secret()) as receiver:
        connection = publisher.ok(
            "publishers.create",
            connection_body("Hook", "webhook", {"url": receiver.hook_url}),
            role="admin",
        )
        receiver.verifier = Webhook(connection["signing_secret"])
        yield receiver, str(connection["id"])


def published_text(wp: WordPressServer, receiver: WebhookReceiver, feed: dict[str, Any]) -> str:
    """Everything that left: the WordPress post, the webhook events and the public feed's
    answers, as text with HTML entities decoded (so `A &gt; B` reads `A > B`)."""
    with wp.lock:
        posts = list(wp.posts.values())
    sent = json.dumps([posts, receiver.events, feed], ensure_ascii=False)
    return html.unescape(sent)


def leaked(text: str, secrets: list[str]) -> list[str]:
    folded = text.casefold()
    return [secret for secret in secrets if secret.casefold() in folded]


def test_a_generated_published_post_names_no_file_of_the_tenant(
    publisher: Publisher, wp: WordPressServer, hook: tuple[WebhookReceiver, str]
) -> None:
    receiver, hook_id = hook
    handbook = publisher.ingest("Fernleaf handbook.md", HANDBOOK)
    run, draft = publisher.generate(
        topic="Smart irrigation scheduling", keywords=["smart irrigation", "soil moisture"]
    )
    assert run["status"] == "succeeded", run

    # The tenant's users read what the article was written from in its provenance.
    provenance = draft["provenance"]
    sources = provenance["sources"]
    assert sources and provenance["citations"]
    assert {s["document_name"] for s in sources} == {"Fernleaf handbook.md"}
    assert {s["document_id"] for s in sources} == {handbook["id"]}
    heading_paths = sorted({s["heading"] for s in sources if " > " in (s["heading"] or "")})
    assert heading_paths, sources
    version = publisher.ok("drafts.getVersion", {"id": draft["id"], "version": 1})
    assert version["provenance"] == provenance

    publisher.ok("drafts.approve", {"id": draft["id"]}, role="editor")
    publisher.publish(draft["id"], publisher.wordpress(wp))
    live = publisher.publish(draft["id"], hook_id)
    feed = publisher.public_post(live["slug"])

    sent = published_text(wp, receiver, feed)
    assert draft["content"][:40] in json.dumps(receiver.events)  # the article did go out
    private = ["Fernleaf handbook", "handbook.md", handbook["storage_path"], *heading_paths]
    assert leaked(sent, private) == []
    assert "#source-" not in sent and '"sources"' not in sent
    # Still named where the tenant's users look.
    assert publisher.draft(draft["id"])["provenance"] == provenance


@pytest.mark.own_org
def test_a_draft_generated_before_goes_out_without_its_sources_list(
    publisher: Publisher, wp: WordPressServer, hook: tuple[WebhookReceiver, str]
) -> None:
    receiver, hook_id = hook
    content = f'<h2 id="brewing">Brewing</h2>{OLD_PROSE}{OLD_SOURCES}'
    draft = publisher.ok("drafts.createDraft", {"title": "Better coffee", "content": content})
    publisher.ok("drafts.approve", {"id": draft["id"]}, role="editor")

    publisher.publish(draft["id"], publisher.wordpress(wp))
    live = publisher.publish(draft["id"], hook_id)
    feed = publisher.public_post(live["slug"])

    sent = published_text(wp, receiver, feed)
    assert leaked(sent, ["coffee-guide", "Water temperature", "Brewing > "]) == []
    assert "#source-" not in sent and ">Sources<" not in sent
    (event,) = receiver.events
    (post,) = wp.posts.values()
    for published in (event["data"]["html"], post["content"], feed["post"]["content_html"]):
        assert "Water at 94 degrees extracts the most flavour." in published
        assert "Grind just before brewing." in published
        assert "[1]" not in published and "<sup" not in published
    assert feed["list"]["data"][0]["excerpt"] == (
        "Water at 94 degrees extracts the most flavour. Grind just before brewing."
    )
    # The draft itself is the tenant's, and keeps what it says.
    assert "coffee-guide.pdf" in publisher.draft(draft["id"])["content"]


def test_a_public_sources_link_is_published(
    publisher: Publisher, hook: tuple[WebhookReceiver, str]
) -> None:
    receiver, hook_id = hook
    content = (
        '<p>Beans keep for a month.<sup class="citation"><a href="#source-1">[1]</a></sup>'
        ' Water matters too.<sup class="citation"><a href="#source-2">[2]</a></sup></p>'
        '<h2 id="sources">Sources</h2><ol>'
        '<li id="source-1"><a href="https://beans.example/storage">beans.example/storage</a></li>'
        '<li id="source-2">coffee-guide.pdf, Brewing</li></ol>'
    )
    draft = publisher.ok("drafts.createDraft", {"title": "Fresh beans", "content": content})
    publisher.ok("drafts.approve", {"id": draft["id"]}, role="editor")

    publisher.publish(draft["id"], hook_id)

    (event,) = receiver.events
    sent = event["data"]["html"]
    assert "coffee-guide" not in sent and "#source-2" not in sent
    assert 'href="#source-1"' in sent
    assert 'href="https://beans.example/storage"' in sent
    assert ">Sources</h2>" in sent
