"""Helpers for the website scan configuration tests: one organization's crawl configs through
one transport (`call`). Start URLs name a loopback port nothing listens on: creating a config
resolves its host and sends nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from tests.support.orgs import Org

# Port 9 (discard): nothing of the suite listens there, and a config never connects anyway.
SITE = "http://127.0.0.1:9"


def site_url(path: str = "") -> str:
    """A start URL of its own (a fresh path), so configs never collide unless a test means to."""
    return f"{SITE}/{uuid.uuid4().hex[:8]}/{path}"


def at(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert moment.tzinfo is not None, text
    return moment.astimezone(UTC)


class Scanner(Org):
    """One organization's crawl configs; writes go as the editor unless told otherwise."""

    default_role = "editor"

    def config(self, role: str = "editor", **fields: Any) -> dict[str, Any]:
        """websiteScan.createConfig, which must succeed."""
        data: dict[str, Any] = {"name": "Garden shop", "startUrl": site_url()}
        data.update(fields)
        return self.ok("websiteScan.createConfig", data, role=role)

    def get(self, config_id: str, role: str = "member") -> dict[str, Any]:
        return self.ok("websiteScan.getConfig", {"id": config_id}, role=role)

    def listed(self, role: str = "member", **query: Any) -> dict[str, Any]:
        return self.ok("websiteScan.listConfigs", query, role=role)

    def schedule(self, config_id: str, role: str = "editor", **fields: Any):
        """websiteScan.setSchedule's response (daily at 02:30 unless told otherwise)."""
        data: dict[str, Any] = {"id": config_id, "cronExpression": "30 2 * * *"}
        data.update(fields)
        return self.request("websiteScan.setSchedule", data, role=role)
