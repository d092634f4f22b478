"""A Clerk-shaped identity provider's Backend API, for tests (and by hand: `python -m
tests.support.clerk` serves one on a free port and prints its URL).

It speaks the endpoints the team uses, with Clerk's shapes (timestamps in milliseconds, roles
`org:<name>`, errors `{errors: [{message, long_message, code}]}`):

    GET    /v1/organizations/{org}/memberships            {data, total_count}, limit/offset
    PATCH  /v1/organizations/{org}/memberships/{user}     {role}
    DELETE /v1/organizations/{org}/memberships/{user}
    POST   /v1/organizations/{org}/invitations            {email_address, role, inviter_user_id}
    GET    /v1/organizations/{org}/invitations            {data, total_count}
    POST   /v1/organizations/{org}/invitations/{id}/revoke {requesting_user_id}

Every write is recorded in `writes` (method, path, JSON body), so a test asserts the provider
saw exactly the writes it expects and none on a refused request; `fail_with(status)` makes the
next request fail. `signed(...)` signs an event as Svix does, for the webhook receiver.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from standardwebhooks.webhooks import Webhook

from tests.support.servers import LoopbackServer, send

SECRET_KEY = "sk_test_standin"


def now_ms() -> int:
    return int(time.time() * 1000)


def new_webhook_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def membership(org_id: str, user_id: str, role: str, **user: Any) -> dict[str, Any]:
    """A Clerk OrganizationMembership object."""
    stamp = now_ms()
    return {
        "object": "organization_membership",
        "id": f"orgmem_{uuid.uuid4().hex[:16]}",
        "role": role if role.startswith("org:") else f"org:{role}",
        "organization": {"object": "organization", "id": org_id, "name": org_id},
        "public_user_data": {
            "user_id": user_id,
            "identifier": user.get("email", f"{user_id}@example.test"),
            "first_name": user.get("first_name", "Ada"),
            "last_name": user.get("last_name", user_id),
            "image_url": user.get("image_url", "https://img.example.test/a.png"),
        },
        "created_at": stamp,
        "updated_at": stamp,
    }


def invitation(org_id: str, email: str, role: str, status: str = "pending") -> dict[str, Any]:
    stamp = now_ms()
    return {
        "object": "organization_invitation",
        "id": f"orginv_{uuid.uuid4().hex[:16]}",
        "email_address": email,
        "role": role if role.startswith("org:") else f"org:{role}",
        "organization_id": org_id,
        "status": status,
        "created_at": stamp,
        "updated_at": stamp,
        "expires_at": stamp + 30 * 86_400_000,
    }


def signed(
    secret: str,
    type: str,
    data: dict[str, Any],
    *,
    event_id: str | None = None,
    timestamp: float | None = None,
    prefix: str = "svix",
) -> tuple[bytes, dict[str, str]]:
    """The body and headers Svix sends for event `type` carrying `data`."""
    body = json.dumps(
        {"type": type, "object": "event", "data": data, "timestamp": now_ms()}
    ).encode()
    sent_at = timestamp if timestamp is not None else time.time()
    msg_id = event_id or f"msg_{uuid.uuid4().hex}"
    signature = Webhook(secret).sign(msg_id, datetime.fromtimestamp(sent_at, UTC), body.decode())
    headers = {
        f"{prefix}-id": msg_id,
        f"{prefix}-timestamp": str(int(sent_at)),
        f"{prefix}-signature": signature,
        "content-type": "application/json",
    }
    return body, headers


_MEMBERSHIPS = re.compile(r"^/v1/organizations/([^/]+)/memberships(?:/([^/]+))?$")
_INVITATIONS = re.compile(r"^/v1/organizations/([^/]+)/invitations(?:/([^/]+)/revoke)?$")


class Clerk(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.memberships: dict[str, dict[str, dict[str, Any]]] = {}
        self.invitations: dict[str, dict[str, dict[str, Any]]] = {}
        self.writes: list[tuple[str, str, Any]] = []
        self.auth: list[str | None] = []
        self._fail: list[int] = []

    # --- what a test sets up and reads ----------------------------------------------------

    def add_member(self, org_id: str, user_id: str, role: str = "member", **user: Any) -> dict:
        found = membership(org_id, user_id, role, **user)
        with self.lock:
            self.memberships.setdefault(org_id, {})[user_id] = found
        return found

    def fail_with(self, status: int) -> None:
        self._fail.append(status)

    def writes_to(self, org_id: str) -> list[tuple[str, str, Any]]:
        return [w for w in self.writes if f"/organizations/{org_id}/" in w[1]]

    # --- serving ----------------------------------------------------------------------------

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("content-length") or 0)
        raw = request.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        url = urlsplit(request.path)
        method = request.command
        with self.lock:
            self.auth.append(request.headers.get("authorization"))
            if method != "GET":
                self.writes.append((method, url.path, body))
            if self._fail:
                status = self._fail.pop(0)
                return send(request, status, {}, _error("standin_failure", f"failed {status}"))
            status, payload = self._answer(method, url.path, parse_qs(url.query), body or {})
        send(request, status, {}, payload)

    def _answer(
        self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any]
    ) -> tuple[int, Any]:
        if found := _MEMBERSHIPS.match(path):
            org_id, user_id = found.groups()
            members = self.memberships.setdefault(org_id, {})
            if user_id is None and method == "GET":
                return 200, _page(list(members.values()), query)
            if user_id is None or user_id not in members:
                return 404, _error("resource_not_found", "not found")
            if method == "PATCH":
                members[user_id] = {
                    **members[user_id],
                    "role": body["role"],
                    "updated_at": now_ms(),
                }
                return 200, members[user_id]
            if method == "DELETE":
                gone = members.pop(user_id)
                return 200, {**gone, "updated_at": now_ms()}
        if found := _INVITATIONS.match(path):
            org_id, invitation_id = found.groups()
            invitations = self.invitations.setdefault(org_id, {})
            if invitation_id is None and method == "GET":
                return 200, _page(list(invitations.values()), query)
            if invitation_id is None and method == "POST":
                email = body["email_address"]
                if any(
                    i["email_address"] == email and i["status"] == "pending"
                    for i in invitations.values()
                ):
                    return 400, _error("duplicate_record", "already invited")
                made = invitation(org_id, email, body["role"])
                invitations[made["id"]] = made
                return 200, made
            if invitation_id is not None and method == "POST":
                if invitation_id not in invitations:
                    return 404, _error("resource_not_found", "not found")
                revoked = {
                    **invitations[invitation_id],
                    "status": "revoked",
                    "updated_at": now_ms(),
                }
                invitations[invitation_id] = revoked
                return 200, revoked
        return 404, _error("resource_not_found", "no such endpoint")


def _page(items: list[Any], query: dict[str, list[str]]) -> dict[str, Any]:
    limit = int(query.get("limit", ["10"])[0])
    offset = int(query.get("offset", ["0"])[0])
    return {"data": items[offset : offset + limit], "total_count": len(items)}


def _error(code: str, message: str) -> dict[str, Any]:
    return {"errors": [{"code": code, "message": message, "long_message": message}]}


if __name__ == "__main__":
    with Clerk() as clerk:
        print(f"CONTENTPLATFORM_IDP_API_URL={clerk.url}", flush=True)
        threading.Event().wait()
