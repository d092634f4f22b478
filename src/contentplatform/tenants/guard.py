"""The one guard every operation passes: credential (a JWT, an API key, or a stream token where
the operation takes one), organization, tenant, role, feature flag, rate limit."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable

from cachetools import TTLCache
from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.api_keys import MAX_LENGTH as MAX_KEY_LENGTH
from contentplatform.auth.api_keys import digest, is_api_key
from contentplatform.auth.context import Access, Identity, KeyAccess, Principal, Role, TenantAccess
from contentplatform.auth.stream_tokens import is_stream_token
from contentplatform.auth.tokens import TokenVerifier
from contentplatform.core.procedures import ORG_HEADER
from contentplatform.core.runtime import Runtime
from contentplatform.features import service as features
from contentplatform.kit import logs
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import (
    BadRequest,
    FieldError,
    Forbidden,
    PlatformError,
    Unauthorized,
)
from contentplatform.kit.invalidation import EVERYTHING
from contentplatform.tenants import service as tenants

# What an API key may do, given its secret (settings/keys.py `resolve`, handed over by the app:
# the keys are the settings domain's, which sits above this one).
KeyResolver = Callable[[AsyncSession, str], Awaitable[KeyAccess]]
# The longest a process keeps a resolved (or refused) API key: a revocation is enforced within
# it on every process even where no Redis carries the invalidation (the promise is 5 s; a second
# is left for a request already under way).
KEY_CACHE_SECONDS = 4.0


class Guard:
    def __init__(self, runtime: Runtime, resolve_key: KeyResolver | None = None) -> None:
        self.runtime = runtime
        self.settings = runtime.settings
        self.verifier = TokenVerifier(runtime.settings)
        self.resolve_key = resolve_key
        # Resolved keys by the SHA-256 of their secret (never the secret itself), and the answer
        # to keys refused (unknown, revoked, turned off), so a flood of bad keys reads the
        # database once per key every few seconds.
        ttl = min(KEY_CACHE_SECONDS, runtime.settings.access_cache_seconds)
        self.keys: TTLCache[str, KeyAccess] = TTLCache(maxsize=10_000, ttl=ttl)
        self.refused_keys: TTLCache[str, PlatformError] = TTLCache(maxsize=10_000, ttl=ttl)
        self.key_generation = 0
        self.resolving: dict[str, asyncio.Future[KeyAccess]] = {}
        # Resolved tenant access per (organization, caller as the token describes them): saves the
        # membership queries on every request. Role, profile and issue time are part of the key,
        # so a new token resolves afresh; a stored change (a role, a removal) retires the
        # organization's entries in every process at once (`tenants.access_scope`, published
        # through runtime.invalidations); anything else (suspension) shows within the TTL.
        self.access_cache: TTLCache[tuple[object, ...], TenantAccess] = TTLCache(
            maxsize=10_000, ttl=runtime.settings.access_cache_seconds
        )
        # Bumped by each invalidation of an organization (and all of them, EVERYTHING): an access
        # resolved while one arrived is not cached, as it may have read the old membership.
        self.generations: dict[str, int] = {}
        self.generation = 0
        runtime.invalidations.subscribe(self.invalidate)

    def invalidate(self, scope: str) -> None:
        if scope == EVERYTHING:
            self.generation += 1
            self.access_cache.clear()
            self._forget_keys()
            return
        prefix, _, org_id = scope.partition(":")
        if prefix != "access" or not org_id:
            return
        self.generations[org_id] = self.generations.get(org_id, 0) + 1
        for key in [key for key in list(self.access_cache.keys()) if key[0] == org_id]:
            self.access_cache.pop(key, None)
        self._forget_keys(org_id)

    def _forget_keys(self, org_id: str | None = None) -> None:
        """Drop the resolved keys (of one organization), and every refusal: a key turned on
        again must work at once."""
        self.key_generation += 1
        self.refused_keys.clear()
        for hashed, found in list(self.keys.items()):
            if org_id is None or found.tenant.org_id == org_id:
                self.keys.pop(hashed, None)

    async def authorize(
        self,
        request: Request,
        access: Access,
        token: str | None,
        org_id: str | None,
        *,
        api_keys: bool = True,
        feature: str | None = None,
        stream_token: str | None = None,
    ) -> Principal:
        """The caller of an operation needing `access`. `stream_token`, given only for an event
        stream declared to take one, stands for the bearer token and the organization: the
        principal then names the one stream it may read."""
        client = request.client.host if request.client else "unknown"
        limiter = self.runtime.limiter
        if access is Access.public:
            await limiter.check(self.settings.rate_limit_public, f"client:{client}")
            return Principal(identity=None, tenant=None, client_address=client)

        needed = access.tenant_role
        stream: str | None = None
        if stream_token is not None and needed is not None:
            identity, tenant, stream = await self._stream_access(stream_token)
            is_key = False
        elif not token:
            raise Unauthorized("A bearer token is required (Authorization: Bearer <JWT>).")
        elif is_stream_token(token):
            raise Unauthorized(
                "A stream token is no bearer token: it opens only the stream URL it came with "
                "(?streamToken=)."
            )
        elif is_key := is_api_key(token):
            identity, tenant = await self._key_access(token, needed, org_id, allowed=api_keys)
        else:
            identity = await self.verifier.verify(token)
            logs.bind(user=identity.subject)
            if needed is None:
                if access is Access.superadmin and not identity.superadmin:
                    raise Forbidden("Only platform superadmins may use this operation.")
                await limiter.check(self.settings.rate_limit, f"user:{identity.subject}")
                return Principal(identity=identity, tenant=None, client_address=client)
            if not org_id:
                raise BadRequest(
                    f"The {ORG_HEADER} header is required: it names the organization to act in.",
                    errors=[FieldError(path=ORG_HEADER, message="Field required")],
                )
            tenant = await self._tenant_access(identity, org_id)
        assert needed is not None
        logs.bind(tenant=str(tenant.tenant_id))
        if not tenant.role.includes(needed):
            who = "this API key acts as" if is_key else "you are"
            raise Forbidden(
                f"This operation needs the {needed.value} role; {who} {tenant.role.value}."
            )
        if feature is not None:
            await features.require(self.runtime, tenant.tenant_id, feature)
        await limiter.check(
            self.settings.rate_limit, f"tenant:{tenant.tenant_id}:{identity.subject}"
        )
        return Principal(identity=identity, tenant=tenant, client_address=client, stream=stream)

    async def _stream_access(self, token: str) -> tuple[Identity, TenantAccess, str]:
        """The caller a stream token was made for, their tenant access as stored now (a member
        removed since cannot use it) and the stream it opens; 401 when it is forged, expired or
        of a tenant that is no longer the organization's."""
        grant = self.runtime.stream_tokens.verify(token)
        identity = Identity(
            subject=grant.subject,
            email=None,
            name=None,
            superadmin=False,
            organizations={},
            organization_names={},
            auth="stream_token",
        )
        logs.bind(user=identity.subject)
        tenant = await self._tenant_access(identity, grant.org_id)
        if tenant.tenant_id != grant.tenant_id:
            raise Unauthorized("This stream token is not valid; ask for a new stream URL.")
        return identity, tenant, grant.stream

    async def _key_access(
        self, secret: str, needed: Role | None, org_id: str | None, *, allowed: bool
    ) -> tuple[Identity, TenantAccess]:
        """The identity and tenant access of an API key, for an operation needing `needed`
        (None: no organization) that keys may call or not (`allowed`)."""
        found = await self._resolved_key(secret)
        logs.bind(user=found.identity.subject)
        if needed is None or not allowed:
            raise Forbidden(
                "API keys cannot use this operation (team, settings and administration need a "
                "member's own token)."
            )
        if org_id is not None and org_id != found.tenant.org_id:
            raise Forbidden(
                f"This API key acts in its own organization only, not {org_id!r}: leave out "
                f"the {ORG_HEADER} header."
            )
        return found.identity, found.tenant

    async def _resolved_key(self, secret: str) -> KeyAccess:
        if len(secret) > MAX_KEY_LENGTH or self.resolve_key is None:
            raise Unauthorized("This API key is not valid.")
        hashed = digest(secret)
        found = self.keys.get(hashed)
        if found is None:
            refused = self.refused_keys.get(hashed)
            if refused is not None:
                raise copy.copy(refused)
            # One lookup for every request that finds the key missing at once: under load an
            # expired entry otherwise sent each request in flight to the database together.
            lookup = self.resolving.get(hashed)
            if lookup is None:
                lookup = asyncio.ensure_future(self._resolve_key(hashed, secret))
                self.resolving[hashed] = lookup
                lookup.add_done_callback(self._resolved)
            try:
                found = await asyncio.shield(lookup)
            except PlatformError as error:
                raise copy.copy(error) from None
        if found.expires_at is not None and found.expires_at <= utcnow():
            self.keys.pop(hashed, None)
            raise Unauthorized(f"This API key expired at {found.expires_at.isoformat()}.")
        return found

    def _resolved(self, lookup: asyncio.Future[KeyAccess]) -> None:
        for hashed, pending in list(self.resolving.items()):
            if pending is lookup:
                del self.resolving[hashed]
        if not lookup.cancelled():
            lookup.exception()  # retrieved here too: every request that waited may be gone

    async def _resolve_key(self, hashed: str, secret: str) -> KeyAccess:
        """The key from the database, remembered (or its refusal) unless an invalidation came
        while it was read."""
        assert self.resolve_key is not None
        seen = self.key_generation
        try:
            async with self.runtime.db.unit_of_work() as session:
                found = await self.resolve_key(session, secret)
        except PlatformError as error:
            if seen == self.key_generation:
                self.refused_keys[hashed] = error
            raise
        if seen == self.key_generation:
            self.keys[hashed] = found
        return found

    async def _tenant_access(self, identity: Identity, org_id: str) -> TenantAccess:
        key = (
            org_id,
            identity.subject,
            identity.organizations.get(org_id),
            identity.email,
            identity.name,
            identity.organization_names.get(org_id),
            identity.claims.get("iat"),
        )
        cached = self.access_cache.get(key)
        if cached is None:
            seen = (self.generation, self.generations.get(org_id, 0))
            async with self.runtime.db.unit_of_work() as session:
                cached = await tenants.resolve_access(session, identity, org_id)
            if seen == (self.generation, self.generations.get(org_id, 0)):
                self.access_cache[key] = cached
        return cached


async def authorize(
    request: Request,
    access: Access,
    token: str | None,
    org_id: str | None,
    *,
    api_keys: bool = True,
    feature: str | None = None,
    stream_token: str | None = None,
) -> Principal:
    guard: Guard = request.app.state.guard
    return await guard.authorize(
        request,
        access,
        token,
        org_id,
        api_keys=api_keys,
        feature=feature,
        stream_token=stream_token,
    )
