"""Bearer token verification: the identity provider's JWKS (always), the dev key (local only),
and this service's own impersonation tokens (auth/impersonation_tokens.py).

An actor claim (`act`) is honoured only in a token this service minted for an impersonation
session: the identity provider's own actor tokens (Clerk's impersonation) would act inside a
tenant outside every guardrail (no reason, no session to end, no read-only mode), so a token of
the provider, or a development token, that carries `act` is refused (401)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
import jwt
from cachetools import TLRUCache

from contentplatform.auth import devkeys, impersonation_tokens
from contentplatform.auth.context import Identity, Role
from contentplatform.config import Settings
from contentplatform.kit import health
from contentplatform.kit.errors import InternalError, Unauthorized
from contentplatform.kit.outbound import USER_AGENT

log = logging.getLogger(__name__)

# A development token whose `kid` is not this service's development key: minted by `dev-token`
# on another data directory, most likely (which key this service has is not said).
UNKNOWN_DEV_KEY = (
    "The token is signed by a key this service does not know: was it minted for another data "
    "directory?"
)


class JwksCache:
    """The provider's signing keys, cached; refetched once when a token names an unknown `kid`."""

    def __init__(self, url: str, *, cache_seconds: int, min_refetch_seconds: int) -> None:
        self.url = url
        self.cache_seconds = cache_seconds
        self.min_refetch_seconds = min_refetch_seconds
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = float("-inf")
        self._attempted_at = float("-inf")
        self._lock = asyncio.Lock()

    async def key(self, kid: str) -> jwt.PyJWK | None:
        if kid in self._keys and not self._stale():
            return self._keys[kid]
        async with self._lock:
            # A rotated key shows up as an unknown kid, so refetch; but never more often than
            # min_refetch_seconds, so neither forged kids nor an outage at the provider turn into
            # a fetch per request. Through an outage the last keys we had keep working.
            wanted = self._stale() or kid not in self._keys
            if wanted and time.monotonic() - self._attempted_at >= self.min_refetch_seconds:
                await self._fetch()
        return self._keys.get(kid)

    def _stale(self) -> bool:
        return time.monotonic() - self._fetched_at >= self.cache_seconds

    async def _fetch(self) -> None:
        self._attempted_at = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=5.0, headers={"user-agent": USER_AGENT}) as client:
                response = await client.get(self.url)
                response.raise_for_status()
                document = response.json()
            entries = document.get("keys") if isinstance(document, dict) else None
            if not isinstance(entries, list):
                raise ValueError("the JWKS document has no list of keys")
        except (httpx.HTTPError, ValueError) as error:
            health.record("identity_provider", False)  # for system.status (kit/health.py)
            log.error("could not fetch the identity provider's JWKS: %s", error)
            if not self._keys:
                raise InternalError(
                    "The identity provider's signing keys are unavailable."
                ) from None
            return
        health.record("identity_provider", True)
        self._keys = dict(filter(None, map(_signing_key, entries)))
        self._fetched_at = time.monotonic()


def _signing_key(entry: object) -> tuple[str, jwt.PyJWK] | None:
    """A usable signing key of a JWKS, or None (logged) for anything else in it."""
    if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
        return None
    kid = entry.get("kid")
    if not isinstance(kid, str):
        return None
    try:
        return kid, jwt.PyJWK(entry)
    except (jwt.PyJWTError, ValueError, TypeError, KeyError):
        log.warning("skipping an unusable JWKS key (kid %s)", kid)
        return None


class TokenVerifier:
    """Verifies bearer tokens, and remembers the ones it verified.

    A client sends the same token with every request until it expires, and checking its signature
    and claims is most of what an authenticated request costs; so a verified token is kept (by its
    exact text: any other byte is another token) until it expires, as verification with the same
    leeway would say, and never longer than the signing keys are cached, so a key the provider
    withdraws stops counting as soon as it would uncached. The cache is bounded, least recently
    used first out."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.verified: TLRUCache[str, tuple[Identity, float]] | None = (
            TLRUCache(
                maxsize=settings.token_cache_size,
                ttu=lambda _token, entry, _now: entry[1],
                timer=time.time,
            )
            if settings.token_cache_size
            else None
        )
        self.allowed_algorithms = set(settings.jwt_algorithms)
        self.jwks = (
            JwksCache(
                settings.jwks_url,
                cache_seconds=settings.jwks_cache_seconds,
                min_refetch_seconds=settings.jwks_min_refetch_seconds,
            )
            if settings.jwks_url
            else None
        )
        self.impersonation = impersonation_tokens.ImpersonationTokens.from_settings(settings)
        self.dev_key: jwt.PyJWK | None = None
        if settings.is_local:
            self.dev_key = jwt.PyJWK(
                devkeys.public_jwk(devkeys.load_or_create_key(settings.data_dir))
            )

    async def verify(self, token: str) -> Identity:
        if self.verified is not None and (known := self.verified.get(token)) is not None:
            return known[0]
        claims = await self._verified_claims(token)
        # Only our own key verifies a token of our issuer (`_verified_claims`).
        if claims.get("iss") == impersonation_tokens.ISSUER:
            identity = impersonated_identity(claims)
        else:
            identity = identity_from_claims(claims)
        if self.verified is not None:
            # `exp` is required and numeric once verified; the key cache bounds it too.
            good_until = min(
                float(claims["exp"]) + self.settings.jwt_leeway_seconds,
                time.time() + self.settings.jwks_cache_seconds,
            )
            self.verified[token] = (identity, good_until)
        return identity

    async def _verified_claims(self, token: str) -> dict[str, Any]:
        try:
            # Header and payload, read once to choose the key; nothing in them is trusted yet.
            parts = jwt.decode_complete(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise Unauthorized("The bearer token is malformed.") from None
        header, unverified = parts["header"], parts["payload"]
        if unverified.get("iss") == impersonation_tokens.ISSUER:
            return self.impersonation.verify(token, leeway=self.settings.jwt_leeway_seconds)
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.allowed_algorithms:
            raise Unauthorized(f"Tokens signed with {algorithm!r} are not accepted.")

        issuer: str | None
        audience: str | None
        if self.dev_key is not None and unverified.get("iss") == devkeys.DEV_ISSUER:
            if header.get("kid", self.dev_key.key_id) != self.dev_key.key_id:
                raise Unauthorized(UNKNOWN_DEV_KEY)
            key, issuer, audience = self.dev_key, devkeys.DEV_ISSUER, devkeys.DEV_AUDIENCE
        elif self.jwks is not None:
            kid = header.get("kid")
            found = await self.jwks.key(kid) if isinstance(kid, str) else None
            if found is None:
                raise Unauthorized("The token's signing key is not known to the identity provider.")
            key, issuer, audience = found, self.settings.jwt_issuer, self.settings.jwt_audience
        else:
            raise Unauthorized("The token was not issued by a trusted identity provider.")

        if key.algorithm_name != algorithm:
            raise Unauthorized("The token's algorithm does not match its signing key.")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[algorithm],
                issuer=issuer,
                audience=audience,
                leeway=self.settings.jwt_leeway_seconds,
                options={"require": ["exp", "sub"], "verify_aud": audience is not None},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthorized("The token has expired.") from None
        except jwt.ImmatureSignatureError:
            raise Unauthorized("The token is not valid yet.") from None
        except jwt.InvalidIssuerError:
            raise Unauthorized("The token was issued by an untrusted issuer.") from None
        except jwt.InvalidAudienceError:
            raise Unauthorized("The token is meant for another audience.") from None
        except jwt.PyJWTError:
            raise Unauthorized("The token could not be verified.") from None
        if "act" in claims:
            raise Unauthorized(
                "Actor tokens of the identity provider are not accepted: a superadmin acts in a "
                "tenant through admin.startImpersonation."
            )
        return claims


def impersonated_identity(claims: dict[str, Any]) -> Identity:
    """The member an impersonation token acts as (checked by ImpersonationTokens.verify): never
    a superadmin, vouching for no organization (the guard reads the session's)."""
    return Identity(
        subject=str(claims["sub"]),
        email=None,
        name=None,
        superadmin=False,
        organizations={},
        organization_names={},
        auth="impersonation",
        claims=claims,
    )


def identity_from_claims(claims: dict[str, Any]) -> Identity:
    """Read the organization claims in the shapes identity providers use (Clerk v1 and v2)."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise Unauthorized("The token names no subject.")
    organizations: dict[str, Role] = {}
    names: dict[str, str] = {}

    def add(org: object, role: object, name: object = None) -> None:
        parsed = Role.from_claim(role)
        if isinstance(org, str) and org and parsed is not None:
            organizations[org] = parsed
            if isinstance(name, str) and name:
                names[org] = name

    orgs_map = claims.get("orgs")
    if isinstance(orgs_map, dict):
        for org, role in orgs_map.items():
            add(org, role)
    compact = claims.get("o")
    if isinstance(compact, dict):
        add(compact.get("id"), compact.get("rol"), compact.get("slg"))
    add(
        claims.get("org_id"),
        claims.get("org_role"),
        claims.get("org_name") or claims.get("org_slug"),
    )

    email = claims.get("email")
    name = claims.get("name")
    return Identity(
        subject=subject,
        email=email if isinstance(email, str) else None,
        name=name if isinstance(name, str) else None,
        superadmin=claims.get("superadmin") is True,
        organizations=organizations,
        organization_names=names,
        claims=claims,
    )
