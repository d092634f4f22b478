"""Helpers for the Publishers API tests: one organization's publisher connections through one
transport (`call`, REST or RPC), with a user and token per role, and the request bodies that
connect each stand-in target (tests/support/targets)."""

from __future__ import annotations

import builtins
import time
from typing import Any

import httpx

from tests.support.orgs import Org
from tests.support.targets.ghost import GhostServer
from tests.support.targets.shopify import ShopifyShop
from tests.support.targets.webflow import WebflowSite
from tests.support.targets.wordpress import WordPressServer

FINISHED = ("succeeded", "failed", "cancelled")


# --- what connects each stand-in ----------------------------------------------------------------


def connection_body(
    name: str, type: str, config: dict[str, Any], credentials: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A publishers.create body; without credentials when there are none (a webhook has none)."""
    body: dict[str, Any] = {"name": name, "type": type, "config": config}
    if credentials is not None:
        body["credentials"] = credentials
    return body


def wordpress_body(wp: WordPressServer, **changes: Any) -> dict[str, Any]:
    credentials = {"username": wp.username, "applicationPassword": wp.application_password}
    return connection_body("Company blog", "wordpress", {"siteUrl": wp.url}, credentials) | changes


def ghost_body(ghost: GhostServer, **changes: Any) -> dict[str, Any]:
    credentials = {"adminApiKey": ghost.admin_api_key}
    return connection_body("Ghost site", "ghost", {"adminUrl": ghost.url}, credentials) | changes


def shopify_body(shop: ShopifyShop, **changes: Any) -> dict[str, Any]:
    config = {"storeUrl": shop.url, "blogId": shop.blog_id}
    credentials = {"accessToken": shop.token}
    return connection_body("Shop blog", "shopify", config, credentials) | changes


def webflow_body(site: WebflowSite, **changes: Any) -> dict[str, Any]:
    config = {
        "apiBaseUrl": site.url,
        "collectionId": site.collection_id,
        "siteId": site.site_id,
        "fieldMapping": {"content": "post-body", "excerpt": "post-summary"},
    }
    credentials = {"apiToken": site.token}
    return connection_body("Webflow blog", "webflow", config, credentials) | changes


def webhook_body(url: str, **changes: Any) -> dict[str, Any]:
    return connection_body("Webhook", "webhook", {"url": url}) | changes


# --- one organization's connections -------------------------------------------------------------


class Publishers(Org):
    """One organization's publisher connections through one transport (`call`), with a user and
    token per role. Writes go as the admin unless told otherwise, reads as the member."""

    # --- publishers.*, answering 200 ------------------------------------------------------------

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("publishers.create", body)
        return result

    def create_wordpress(self, wp: WordPressServer, **changes: Any) -> dict[str, Any]:
        return self.create(wordpress_body(wp, **changes))

    def create_ghost(self, ghost: GhostServer, **changes: Any) -> dict[str, Any]:
        return self.create(ghost_body(ghost, **changes))

    def create_shopify(self, shop: ShopifyShop, **changes: Any) -> dict[str, Any]:
        return self.create(shopify_body(shop, **changes))

    def create_webflow(self, site: WebflowSite, **changes: Any) -> dict[str, Any]:
        return self.create(webflow_body(site, **changes))

    def create_webhook(self, url: str, **changes: Any) -> dict[str, Any]:
        """The created connection, with its `signing_secret` (shown this once)."""
        return self.create(webhook_body(url, **changes))

    def get(self, connection_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("publishers.getById", {"id": connection_id}, role="member")
        return result

    def list(self, **query: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("publishers.list", query, role="member")
        return result

    def ids(self, **query: Any) -> builtins.list[str]:
        return [connection["id"] for connection in self.list(**query)["data"]]

    def update(self, connection_id: str, **changes: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("publishers.update", {"id": connection_id, **changes})
        return result

    def delete(self, connection_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("publishers.delete", {"id": connection_id})
        return result

    def test(self, connection_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("publishers.test", {"id": connection_id})
        return result

    def attempts(self, connection_id: str, **query: Any) -> dict[str, Any]:
        data = {"id": connection_id, **query}
        result: dict[str, Any] = self.ok("publishers.listAttempts", data, role="member")
        return result

    # --- publishing a draft ---------------------------------------------------------------------

    def publish(self, draft_id: str, **body: Any) -> dict[str, Any]:
        """drafts.publish as the editor: `{draft, attempt}`."""
        result: dict[str, Any] = self.ok("drafts.publish", {"id": draft_id, **body}, role="editor")
        return result

    def try_publish(self, draft_id: str, **body: Any) -> httpx.Response:
        """drafts.publish as the editor, whatever it answers."""
        return self.request("drafts.publish", {"id": draft_id, **body}, role="editor")

    def draft_attempts(self, draft_id: str) -> builtins.list[dict[str, Any]]:
        page = self.ok("drafts.listPublishAttempts", {"id": draft_id}, role="member")
        attempts: builtins.list[dict[str, Any]] = page["data"]
        return attempts

    def wait_for_attempt(
        self, draft_id: str, attempt_id: str, timeout: float = 15.0
    ) -> dict[str, Any]:
        """The attempt once it has finished (polled through drafts.listPublishAttempts)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [a for a in self.draft_attempts(draft_id) if a["id"] == attempt_id]
            assert found, f"attempt {attempt_id} is not listed for draft {draft_id}"
            attempt: dict[str, Any] = found[0]
            if attempt["status"] in FINISHED:
                return attempt
            assert time.monotonic() < deadline, f"attempt still {attempt['status']}: {attempt}"
            time.sleep(0.05)

    def publish_and_wait(self, draft_id: str, **body: Any) -> dict[str, Any]:
        """Publish and wait for the attempt to finish: the finished attempt."""
        attempt = self.publish(draft_id, **body)["attempt"]
        return self.wait_for_attempt(draft_id, str(attempt["id"]))
