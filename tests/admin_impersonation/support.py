"""Helpers for the impersonation tests: a superadmin of the test's own (one open session per
superadmin, so tests never share one) opening sessions in an organization."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.support.orgs import Org

REASON = "Customer reports drafts missing after the import (ticket follow-up)."


class Operator:
    """A superadmin calling admin.* through the test's transport."""

    def __init__(self, org: Org) -> None:
        self.org = org
        self.subject = f"root-{uuid.uuid4().hex[:10]}"
        self.token = org.token(None, self.subject, superadmin=True)

    def start(self, **body: Any) -> httpx.Response:
        data = {"tenantId": str(self.org.tenant_id), "reason": REASON, **body}
        response: httpx.Response = self.org.call("admin.startImpersonation", data, token=self.token)
        return response

    def started(self, **body: Any) -> dict[str, Any]:
        response = self.start(**body)
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    def end(self, session_id: str, *, token: str | None = None) -> httpx.Response:
        response: httpx.Response = self.org.call(
            "admin.endImpersonation", {"id": session_id}, token=token or self.token
        )
        return response

    def ticket(self) -> str:
        """A support ticket of the organization (what a read_write session is bound to)."""
        opened = self.org.ok(
            "support.createTicket",
            {"subject": "Drafts missing", "body": "Since the import.", "category": "bug"},
            role="member",
        )
        return str(opened["id"])

    def member_id(self, role: str) -> str:
        return str(self.org.whoami(role)["user"]["id"])


def acting(org: Org, token: str, operation: str, data: dict[str, Any] | None = None):
    """`operation` called with an impersonation token in the organization."""
    return org.call(operation, data, token=token, org=org.org)
