"""One organization publishing and taking down, through one transport (`call`, REST or RPC):
Drafts' helpers, plus its publisher connections (made by its admin), publish and unpublish
attempts followed to their end, the operations of issue 20 (listTargets, rotateSecret,
unpublish, archive) and its activity trail."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.drafts.support import Drafts
from tests.publishers.support import (
    connection_body,
    ghost_body,
    shopify_body,
    webflow_body,
    wordpress_body,
)
from tests.support.targets.ghost import GhostServer
from tests.support.targets.shopify import ShopifyShop
from tests.support.targets.webflow import WebflowSite
from tests.support.targets.wordpress import WordPressServer

FINISHED = ("succeeded", "failed", "cancelled")
# A bound, not a wait: attempts against the stand-ins finish in a fraction of it.
WAIT_SECONDS = 15.0
TITLE = "Pruning roses in early spring"
CONTENT = "<p>Cut back dead wood before the buds swell.</p>"


class Desk(Drafts):
    """Writes go as the editor unless told otherwise (connections as the admin), reads as the
    member."""

    # --- connections ----------------------------------------------------------------------------

    def connect(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.ok("publishers.create", body, role="admin")

    def wordpress(self, wp: WordPressServer, **changes: Any) -> dict[str, Any]:
        return self.connect(wordpress_body(wp, **changes))

    def ghost(self, ghost: GhostServer) -> dict[str, Any]:
        return self.connect(ghost_body(ghost))

    def shopify(self, shop: ShopifyShop) -> dict[str, Any]:
        return self.connect(shopify_body(shop))

    def webflow(self, site: WebflowSite) -> dict[str, Any]:
        return self.connect(webflow_body(site))

    def webhook(self, url: str) -> dict[str, Any]:
        """The created connection, with its `signing_secret` (shown this once)."""
        return self.connect(connection_body("Webhook", "webhook", {"url": url}))

    def connection(self, connection_id: str) -> dict[str, Any]:
        return self.ok("publishers.getById", {"id": connection_id}, role="member")

    # --- publishers.listTargets, publishers.rotateSecret -------------------------------------

    def try_targets(self, connection_id: str, role: str = "editor", **query: Any) -> httpx.Response:
        return self.request("publishers.listTargets", {"id": connection_id, **query}, role=role)

    def targets(self, connection_id: str, **query: Any) -> dict[str, Any]:
        response = self.try_targets(connection_id, **query)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def try_rotate(self, connection_id: str, role: str = "admin", **body: Any) -> httpx.Response:
        return self.request("publishers.rotateSecret", {"id": connection_id, **body}, role=role)

    def rotate(self, connection_id: str, **body: Any) -> dict[str, Any]:
        response = self.try_rotate(connection_id, **body)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    # --- drafts, published and taken down ----------------------------------------------------

    def approved(self, title: str = TITLE, content: str = CONTENT) -> dict[str, Any]:
        draft = self.create(title, content)
        return self.approve(draft["id"])

    def attempts(self, draft_id: str) -> list[dict[str, Any]]:
        page = self.ok("drafts.listPublishAttempts", {"id": draft_id, "limit": 100}, role="member")
        attempts: list[dict[str, Any]] = page["data"]
        return attempts

    def wait(self, draft_id: str, attempt_id: str) -> dict[str, Any]:
        """Poll the draft's attempts until this one has finished (bounded): the attempt."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            [attempt] = [a for a in self.attempts(draft_id) if a["id"] == attempt_id]
            if attempt["status"] in FINISHED:
                return attempt
            assert time.monotonic() < deadline, f"still {attempt['status']}: {attempt}"
            time.sleep(0.05)

    def published(self, draft_id: str, connection_id: str, **body: Any) -> dict[str, Any]:
        """drafts.publish to the connection, waited for: the attempt, which must succeed."""
        data = {"id": draft_id, "publisherConnectionId": connection_id, **body}
        attempt = self.ok("drafts.publish", data)["attempt"]
        finished = self.wait(draft_id, attempt["id"])
        assert finished["status"] == "succeeded", finished
        return finished

    def live_draft(self, connection_id: str, title: str = TITLE) -> dict[str, Any]:
        """An approved draft published to the connection: the draft (published)."""
        draft = self.approved(title)
        self.published(draft["id"], connection_id)
        published = self.get(draft["id"])
        assert published["status"] == "published", published
        return published

    def try_unpublish(self, draft_id: str, role: str = "editor", **body: Any) -> httpx.Response:
        return self.request("drafts.unpublish", {"id": draft_id, **body}, role=role)

    def unpublish(self, draft_id: str, **body: Any) -> dict[str, Any]:
        """drafts.unpublish as the editor, which must be accepted: {draft, attempts}."""
        response = self.try_unpublish(draft_id, **body)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def taken_down(self, draft_id: str, **body: Any) -> list[dict[str, Any]]:
        """drafts.unpublish, each attempt it started waited for: the finished attempts."""
        started = [
            a for a in self.unpublish(draft_id, **body)["attempts"] if a["mode"] == "unpublish"
        ]
        return [self.wait(draft_id, attempt["id"]) for attempt in started]

    def try_archive(self, draft_id: str, role: str = "editor", **body: Any) -> httpx.Response:
        return self.request("drafts.archive", {"id": draft_id, **body}, role=role)

    def archive(self, draft_id: str, **body: Any) -> dict[str, Any]:
        response = self.try_archive(draft_id, **body)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    # --- what others see -----------------------------------------------------------------------

    def activity(self, role: str = "member", **query: Any) -> list[dict[str, Any]]:
        """activity.list's rows (newest first, up to 100)."""
        rows: list[dict[str, Any]] = self.ok("activity.list", {"limit": 100, **query}, role=role)[
            "data"
        ]
        return rows

    def feed_slugs(self) -> list[str]:
        """The slugs of the public blog feed of the organization (no token)."""
        response = self.call("public.listBlogs", {}, headers={"x-tenant-id": str(self.tenant_id)})
        assert response.status_code == 200, response.text
        return [post["slug"] for post in response.json()["data"]]
