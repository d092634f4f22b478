"""The identity provider's Backend API (Clerk-shaped): organization memberships and invitations.

The base URL (CONTENTPLATFORM_IDP_API_URL) is configured by the operator, so it is reached with
plain httpx and timeouts, not the SSRF-guarded client for URLs users give. A failure is a clear
problem: unreachable, 5xx or our credentials refused -> 503 (ProviderUnavailable, `retryable`);
the provider's 429 -> 429; its 404 -> 404; its 409 -> 409; its 400/422 -> 400.

Clerk's objects are read here too for the events (team.service), which carry the same shapes:
timestamps are milliseconds since the epoch, roles `org:<name>`.
"""

from __future__ import annotations

import functools
import logging
import ssl
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import certifi
import httpx

from contentplatform.auth.context import Role
from contentplatform.config import Settings
from contentplatform.kit import health
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import Conflict, NotFound, TooManyRequests
from contentplatform.kit.outbound import USER_AGENT
from contentplatform.team.errors import ProviderRefused, ProviderUnavailable
from contentplatform.tenants.service import Profile

log = logging.getLogger(__name__)

PAGE = 100  # Clerk lists at most 500 per page; 100 keeps each answer small
# How long an invitation made without a provider stays pending (Clerk's default is 30 days).
STANDALONE_INVITATION_DAYS = timedelta(days=30)


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every call: httpx makes one per client otherwise, reading and parsing
    the CA bundle each time (tens of milliseconds of CPU per team operation)."""
    return ssl.create_default_context(cafile=certifi.where())


def role_claim(role: Role) -> str:
    return f"org:{role.value}"


def instant(value: object) -> datetime | None:
    """A Clerk timestamp (milliseconds since the epoch) as an instant."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        try:
            return datetime.fromtimestamp(value / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class RemoteMembership:
    org_id: str | None
    idp_user_id: str
    role: Role
    membership_id: str | None
    created_at: datetime | None
    updated_at: datetime | None
    profile: Profile


@dataclass(frozen=True)
class RemoteInvitation:
    id: str
    org_id: str | None
    email: str
    role: Role
    status: str
    created_at: datetime | None
    updated_at: datetime | None
    expires_at: datetime | None


def membership_of(data: dict[str, Any]) -> RemoteMembership | None:
    """A Clerk OrganizationMembership object, or None when it lacks what we need."""
    user = data.get("public_user_data")
    org = data.get("organization")
    user_id = _text(user.get("user_id")) if isinstance(user, dict) else None
    role = Role.from_claim(data.get("role"))
    if user_id is None or role is None or not isinstance(user, dict):
        return None
    names = [_text(user.get("first_name")), _text(user.get("last_name"))]
    return RemoteMembership(
        org_id=_text(org.get("id")) if isinstance(org, dict) else None,
        idp_user_id=user_id,
        role=role,
        membership_id=_text(data.get("id")),
        created_at=instant(data.get("created_at")),
        updated_at=instant(data.get("updated_at")),
        profile=Profile(
            email=_text(user.get("identifier")),
            name=" ".join(name for name in names if name) or None,
            avatar_url=_text(user.get("image_url")),
        ),
    )


def invitation_of(data: dict[str, Any]) -> RemoteInvitation | None:
    """A Clerk OrganizationInvitation object, or None when it lacks what we need."""
    invitation_id, email = _text(data.get("id")), _text(data.get("email_address"))
    role = Role.from_claim(data.get("role"))
    status = data.get("status")
    if invitation_id is None or email is None or role is None:
        return None
    return RemoteInvitation(
        id=invitation_id,
        org_id=_text(data.get("organization_id")),
        email=email,
        role=role,
        status=status if status in {"pending", "accepted", "revoked", "expired"} else "pending",
        created_at=instant(data.get("created_at")),
        updated_at=instant(data.get("updated_at")),
        expires_at=instant(data.get("expires_at")),
    )


def user_profile(data: dict[str, Any]) -> Profile:
    """A Clerk User object's email (the primary one), name and image."""
    primary = data.get("primary_email_address_id")
    emails = [e for e in data.get("email_addresses") or [] if isinstance(e, dict)]
    chosen = next((e for e in emails if e.get("id") == primary), emails[0] if emails else {})
    names = [_text(data.get("first_name")), _text(data.get("last_name"))]
    return Profile(
        email=_text(chosen.get("email_address")),
        name=" ".join(name for name in names if name) or None,
        avatar_url=_text(data.get("image_url")),
    )


class Directory:
    """The provider's Backend API for one request or task.

    With no API configured in the local environment it stands in for one (`standalone`): each
    write is accepted as asked (invitation ids `orginv_local_...`) and there is nothing to pull,
    so a fresh `serve` can try the team's operations; outside local it answers 503."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def standalone(self) -> bool:
        return self.settings.idp_api_url is None and self.settings.is_local

    async def memberships(self, org_id: str) -> list[RemoteMembership]:
        found = await self._all(f"/v1/organizations/{org_id}/memberships", {})
        return [m for m in map(membership_of, found) if m is not None]

    async def invitations(self, org_id: str) -> list[RemoteInvitation]:
        found = await self._all(f"/v1/organizations/{org_id}/invitations", {})
        return [i for i in map(invitation_of, found) if i is not None]

    async def update_role(self, org_id: str, user_id: str, role: Role) -> datetime | None:
        """Change the role; the provider's time of it."""
        if self.standalone:
            return utcnow()
        data = await self._send(
            "PATCH",
            f"/v1/organizations/{org_id}/memberships/{user_id}",
            json={"role": role_claim(role)},
        )
        return self._membership(data).updated_at

    async def remove(self, org_id: str, user_id: str) -> datetime | None:
        """Delete the membership; gone already counts as done. The provider's time of it."""
        if self.standalone:
            return utcnow()
        try:
            data = await self._send("DELETE", f"/v1/organizations/{org_id}/memberships/{user_id}")
        except NotFound:
            return None
        return instant(data.get("updated_at"))

    async def invite(
        self, org_id: str, email: str, role: Role, inviter: str, redirect_url: str | None
    ) -> RemoteInvitation:
        if self.standalone:
            now = utcnow()
            return RemoteInvitation(
                id=f"orginv_local_{uuid.uuid4().hex}",
                org_id=org_id,
                email=email,
                role=role,
                status="pending",
                created_at=now,
                updated_at=now,
                expires_at=now + STANDALONE_INVITATION_DAYS,
            )
        body: dict[str, Any] = {
            "email_address": email,
            "role": role_claim(role),
            "inviter_user_id": inviter,
        }
        if redirect_url:
            body["redirect_url"] = redirect_url
        data = await self._send("POST", f"/v1/organizations/{org_id}/invitations", json=body)
        return self._invitation(data)

    async def revoke(self, org_id: str, invitation_id: str, requester: str) -> datetime | None:
        """Revoke the invitation; the provider's time of it."""
        if self.standalone:
            return utcnow()
        data = await self._send(
            "POST",
            f"/v1/organizations/{org_id}/invitations/{invitation_id}/revoke",
            json={"requesting_user_id": requester},
        )
        return self._invitation(data).updated_at

    # --- the exchange -----------------------------------------------------------------------

    def _membership(self, data: dict[str, Any]) -> RemoteMembership:
        found = membership_of(data)
        if found is None:
            raise ProviderUnavailable(
                "The identity provider answered with a membership we cannot read.",
                extensions={"retryable": False},
            )
        return found

    def _invitation(self, data: dict[str, Any]) -> RemoteInvitation:
        found = invitation_of(data)
        if found is None:
            raise ProviderUnavailable(
                "The identity provider answered with an invitation we cannot read.",
                extensions={"retryable": False},
            )
        return found

    async def _all(self, path: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Every item of a paginated list ({data, total_count})."""
        items: list[dict[str, Any]] = []
        while True:
            page = await self._send(
                "GET", path, params={**params, "limit": PAGE, "offset": len(items)}
            )
            data = page.get("data")
            if not isinstance(data, list):
                raise ProviderUnavailable(
                    "The identity provider answered with a list we cannot read.",
                    extensions={"retryable": False},
                )
            items.extend(item for item in data if isinstance(item, dict))
            total = page.get("total_count")
            if not data or not isinstance(total, int) or len(items) >= total:
                return items

    async def _send(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        if self.settings.idp_api_url is None:
            raise ProviderUnavailable(
                "The identity provider's Backend API is not configured "
                "(CONTENTPLATFORM_IDP_API_URL); team changes cannot be made.",
                extensions={"retryable": False},
            )
        secret = self.settings.idp_secret_key
        headers = {"user-agent": USER_AGENT}
        if secret is not None:
            headers["authorization"] = f"Bearer {secret.get_secret_value()}"
        try:
            async with httpx.AsyncClient(
                base_url=self.settings.idp_api_url.rstrip("/"),
                timeout=self.settings.idp_timeout_seconds,
                headers=headers,
                follow_redirects=False,
                trust_env=False,
                verify=_tls(),
            ) as client:
                response = await client.request(method, path, json=json, params=params)
        except httpx.HTTPError as error:
            health.record("identity_provider", False)
            log.warning("identity provider unreachable: %s %s: %r", method, path, error)
            raise ProviderUnavailable(
                "The identity provider could not be reached; nothing was changed. Try again.",
                extensions={"retryable": True},
            ) from None
        # For system.status (kit/health.py): a 5xx is the provider failing, a 4xx is an answer.
        health.record("identity_provider", response.status_code < 500)
        return _answer(response)


def _answer(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success:
        if not isinstance(body, dict):
            raise ProviderUnavailable(
                "The identity provider answered with something that is not a JSON object.",
                extensions={"retryable": True},
            )
        return body
    said = _message(body)
    status = response.status_code
    if status == 429:
        retry = response.headers.get("retry-after", "")
        raise TooManyRequests(
            f"The identity provider is rate limiting us: {said}",
            retry_after=int(retry) if retry.isdigit() else 10,
        )
    if status == 404:
        raise NotFound(f"The identity provider does not know it: {said}")
    if status == 409:
        raise Conflict(f"The identity provider refused: {said}")
    if status in (400, 422):
        raise ProviderRefused(f"The identity provider refused: {said}")
    log.error("identity provider answered %s: %s", status, said)
    raise ProviderUnavailable(
        f"The identity provider failed ({status}); nothing was changed.",
        extensions={"retryable": status >= 500},
    )


def _message(body: object) -> str:
    """Clerk's `{errors: [{message, long_message, code}]}`, in one line."""
    if isinstance(body, dict) and isinstance(body.get("errors"), list):
        parts = [
            str(e.get("long_message") or e.get("message") or e.get("code"))
            for e in body["errors"]
            if isinstance(e, dict)
        ]
        if parts:
            return "; ".join(parts)[:500]
    return "no reason given"
