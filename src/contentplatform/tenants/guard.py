"""The one guard every operation passes: credential (a JWT, an API key, or a stream token where
the operation takes one), organization, tenant, role, feature flag, rate limit.

An impersonation token (auth/impersonation_tokens.py) passes only while its session is open in
the database (asked through `resolve_impersonation`, handed over by the app: the sessions are
the admin domain's, which sits above this one), and only for what the session allows
(`impersonation_refusal`): never billing, credits, team, API keys, webhook secrets or admin,
and in read-only mode nothing but operations declared GET, over REST and RPC alike."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Awaitable, Callable

from cachetools import TTLCache
from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth import impersonation_tokens
from contentplatform.auth.api_keys import MAX_LENGTH as MAX_KEY_LENGTH
from contentplatform.auth.api_keys import digest, is_api_key
from contentplatform.auth.context import (
    Access,
    Identity,
    ImpersonationAccess,
    ImpersonationMode,
    KeyAccess,
    Principal,
    Role,
    TenantAccess,
)
from contentplatform.auth.stream_tokens import is_stream_token
from contentplatform.auth.tokens import TokenVerifier
from contentplatform.core.procedures import ORG_HEADER
from contentplatform.core.routing import RPC_PREFIX
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
# The open impersonation session a token names (admin/impersonations: 401 when it is ended,
# expired or unknown), and recording that a subject is a superadmin (seen on an admin.* call),
# so that no session ever acts as one.
ImpersonationResolver = Callable[[AsyncSession, uuid.UUID], Awaitable[ImpersonationAccess]]
SuperadminRecorder = Callable[[AsyncSession, str], Awaitable[None]]

# What no impersonation session may touch, in any mode: money, the team, administration (by
# group), API keys and the operations that show or rotate a webhook endpoint's secret.
NEVER_GROUPS = frozenset({"billing", "credits", "team", "admin"})
NEVER_OPERATIONS = frozenset(
    {
        "settings.listApiKeys",
        "settings.createApiKey",
        "settings.revokeApiKey",
        "webhooks.createEndpoint",
        "webhooks.rotateEndpointSecret",
    }
)


def impersonation_refusal(
    operation_id: str | None, method: str | None, mode: ImpersonationMode
) -> str | None:
    """Why an impersonation session in `mode` may not call the operation (its id and declared
    method; None for either: not a declared operation), or None when it may."""
    if operation_id is None or method is None:
        return "An impersonation session may call declared operations only."
    group, _, name = operation_id.partition(".")
    if group in NEVER_GROUPS or operation_id in NEVER_OPERATIONS or "ApiKey" in name:
        return f"{operation_id} is never available to an impersonation session."
    if group == "webhooks" and "Secret" in name:
        return f"{operation_id} is never available to an impersonation session."
    if mode == "read_only" and method != "GET":
        return f"This impersonation session is read-only: {operation_id} changes things."
    return None


class Guard:
    def __init__(
        self,
        runtime: Runtime,
        resolve_key: KeyResolver | None = None,
        *,
        resolve_impersonation: ImpersonationResolver | None = None,
        record_superadmin: SuperadminRecorder | None = None,
    ) -> None:
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
        # Open impersonation sessions by id, briefly (ended: retired at once in every process
        # by `impersonation:<id>`), and the sessions refused (ended or unknown: that never
        # changes). Without a resolver every impersonation token is refused.
        self.resolve_impersonation = resolve_impersonation
        self.sessions: TTLCache[uuid.UUID, ImpersonationAccess] = TTLCache(maxsize=1_000, ttl=ttl)
        self.refused_sessions: TTLCache[uuid.UUID, PlatformError] = TTLCache(maxsize=10_000, ttl=60)
        self.session_generation = 0
        self.record_superadmin = record_superadmin
        self.superadmins_seen: set[str] = set()
        # operationId -> declared method, read from the app's routes on first need.
        self.methods: dict[str, str] | None = None
        runtime.invalidations.subscribe(self.invalidate)

    def invalidate(self, scope: str) -> None:
        if scope == EVERYTHING:
            self.generation += 1
            self.access_cache.clear()
            self._forget_keys()
            self._forget_sessions(None)
            return
        prefix, _, org_id = scope.partition(":")
        if prefix == impersonation_tokens.SCOPE_PREFIX:
            self._forget_sessions(lambda found: str(found.session_id) == org_id)
            return
        if prefix != "access" or not org_id:
            return
        # A role change or removal of the member a session acts as applies to it too.
        self._forget_sessions(lambda found: found.tenant.org_id == org_id)
        self.generations[org_id] = self.generations.get(org_id, 0) + 1
        for key in [key for key in list(self.access_cache.keys()) if key[0] == org_id]:
            self.access_cache.pop(key, None)
        self._forget_keys(org_id)

    def _forget_sessions(self, which: Callable[[ImpersonationAccess], bool] | None) -> None:
        self.session_generation += 1
        for session_id, found in list(self.sessions.items()):
            if which is None or which(found):
                self.sessions.pop(session_id, None)

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
            session = None
            if identity.auth == "impersonation":
                session = await self._impersonation(request, identity, org_id)
            if needed is None:
                if access is Access.superadmin and not identity.superadmin:
                    raise Forbidden("Only platform superadmins may use this operation.")
                if access is Access.superadmin:
                    await self._saw_superadmin(identity.subject)
                await limiter.check(self.settings.rate_limit, f"user:{identity.subject}")
                return Principal(identity=identity, tenant=None, client_address=client)
            if not org_id:
                raise BadRequest(
                    f"The {ORG_HEADER} header is required: it names the organization to act in.",
                    errors=[FieldError(path=ORG_HEADER, message="Field required")],
                )
            if session is not None:
                tenant = session.tenant
            else:
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

    async def _impersonation(
        self, request: Request, identity: Identity, org_id: str | None
    ) -> ImpersonationAccess:
        """The open session an impersonation token names, if this operation is one it may call
        in this organization: 401 once the session is ended or expired, 403 for an operation
        its mode or the guardrails refuse, or another organization."""
        found = await self._open_session(identity)
        operation_id, method = self._operation(request)
        refusal = impersonation_refusal(operation_id, method, found.mode)
        if refusal is not None:
            raise Forbidden(refusal)
        if org_id is not None and org_id != found.tenant.org_id:
            raise Forbidden(
                f"This impersonation session acts in organization {found.tenant.org_id!r} only."
            )
        logs.bind(impersonated_by=found.actor)
        return found

    async def _open_session(self, identity: Identity) -> ImpersonationAccess:
        session_id = impersonation_tokens.session_id(identity.claims)
        refused = self.refused_sessions.get(session_id)
        if refused is not None:
            raise copy.copy(refused)
        found = self.sessions.get(session_id)
        if found is None:
            if self.resolve_impersonation is None:
                raise Unauthorized("Impersonation tokens are not accepted by this service.")
            seen = self.session_generation
            try:
                async with self.runtime.db.unit_of_work() as session:
                    found = await self.resolve_impersonation(session, session_id)
            except Unauthorized as error:
                # Ended or unknown: final, so remembered (an expiry is read from the row).
                self.refused_sessions[session_id] = error
                raise
            if seen == self.session_generation:
                self.sessions[session_id] = found
        act = identity.claims.get("act")
        if not isinstance(act, dict) or act.get("sub") != found.actor:
            raise Unauthorized("The impersonation token does not match its session.")
        if identity.claims.get("org_id") != found.tenant.org_id:
            raise Unauthorized("The impersonation token does not match its session.")
        if found.expires_at <= utcnow():
            self.sessions.pop(session_id, None)
            raise Unauthorized(
                f"The impersonation session expired at {found.expires_at.isoformat()}."
            )
        return found

    def _operation(self, request: Request) -> tuple[str | None, str | None]:
        """The operation a request calls (REST or RPC) and the method it is declared with: an
        RPC call is a POST whatever the operation does."""
        if self.methods is None:
            self.methods = {
                operation_id: next(iter(methods))
                for route in request.app.router.routes
                if (operation_id := getattr(route, "operation_id", None))
                and (methods := getattr(route, "methods", None))
            }
        route = request.scope.get("route")
        operation_id = getattr(route, "operation_id", None)
        path = getattr(route, "path", "")
        if operation_id is None and isinstance(path, str) and path.startswith(RPC_PREFIX + "/"):
            operation_id = path.removeprefix(RPC_PREFIX + "/")
        if not isinstance(operation_id, str):
            return None, None
        return operation_id, self.methods.get(operation_id)

    async def _saw_superadmin(self, subject: str) -> None:
        """Record a superadmin once per process, for the guardrail that no impersonation
        session acts as one."""
        if self.record_superadmin is None or subject in self.superadmins_seen:
            return
        async with self.runtime.db.unit_of_work() as session:
            await self.record_superadmin(session, subject)
        self.superadmins_seen.add(subject)

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
