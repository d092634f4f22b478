"""Helpers for the Publishers API tests: one organization's publisher connections through one
transport (`call`, REST or RPC), with a user and token per role, and the request bodies that
connect each stand-in target (tests/support/targets)."""

from __future__ import annotations

import builtins
import time
import uuid
from typing import Any

import httpx

from tests.support.targets.ghost import GhostServer
from tests.support.targets.shopify import ShopifyShop
from tests.support.targets.webflow import WebflowSite
from tests.support.targets.wordpress import WordPressServer

ROLES = ("member", "editor", "admin")
FINISHED = ("succeeded", "failed", "cancelled")


def new_org() -> str:
    return f"org_{uuid.uuid4().hex[:12]}"


# --- what connects each stand-in ----------------------------------------------------------------


def wordpress_body(wp: WordPressServer, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Company blog",
        "type": "wordpress",
        "config": {"siteUrl": wp.url},
        "credentials": {"username": wp.username, "applicationPassword": wp.application_password},
    }
    return body | changes


def ghost_body(ghost: GhostServer, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Ghost site",
        "type": "ghost",
        "config": {"adminUrl": ghost.url},
        "credentials": {"adminApiKey": ghost.admin_api_key},
    }
    return body | changes


def shopify_body(shop: ShopifyShop, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Shop blog",
        "type": "shopify",
        "config": {"storeUrl": shop.url, "blogId": shop.blog_id},
        "credentials": {"accessToken": shop.token},
    }
    return body | changes


def webflow_body(site: WebflowSite, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Webflow blog",
        "type": "webflow",
        "config": {
            "apiBaseUrl": site.url,
            "collectionId": site.collection_id,
            "siteId": site.site_id,
            "fieldMapping": {"content": "post-body", "excerpt": "post-summary"},
        },
        "credentials": {"apiToken": site.token},
    }
    return body | changes


def webhook_body(url: str, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "Webhook", "type": "webhook", "config": {"url": url}}
    return body | changes


# --- one organization's connections -------------------------------------------------------------


class Publishers:
    """One organization's publisher connections through one transport (`call`), with a user and
    token per role. Writes go as the admin unless told otherwise, reads as the member."""

    def __init__(self, call: Any, client: httpx.Client, token: Any, org: str) -> None:
        self.call = call
        self.client = client
        self.org = org
        self.users = {role: f"{role}-{org}" for role in ROLES}
        self.tokens = {role: token(org, self.users[role], role) for role in ROLES}
        self._tenant_id: str | None = None

    def request(
        self, operation: str, data: dict[str, Any] | None = None, *, role: str = "admin"
    ) -> httpx.Response:
        response: httpx.Response = self.call(operation, data, token=self.tokens[role], org=self.org)
        return response

    def ok(self, operation: str, data: dict[str, Any] | None = None, *, role: str = "admin") -> Any:
        response = self.request(operation, data, role=role)
        assert response.status_code == 200, (operation, response.text)
        return response.json()

    @property
    def tenant_id(self) -> str:
        """Also makes the member a user of the organization (just in time)."""
        if self._tenant_id is None:
            headers = {"Authorization": f"Bearer {self.tokens['member']}", "x-idp-org-id": self.org}
            response = self.client.get("/v1/system/whoami", headers=headers)
            assert response.status_code == 200, response.text
            self._tenant_id = str(response.json()["tenant_id"])
        return self._tenant_id

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
