"""The one guard every operation passes: token, organization, tenant, role, rate limit."""

from __future__ import annotations

from cachetools import TTLCache
from fastapi import Request

from contentplatform.auth.context import Access, Identity, Principal, TenantAccess
from contentplatform.auth.tokens import TokenVerifier
from contentplatform.core.procedures import ORG_HEADER
from contentplatform.core.runtime import Runtime
from contentplatform.kit import logs
from contentplatform.kit.errors import BadRequest, FieldError, Forbidden, Unauthorized
from contentplatform.kit.invalidation import EVERYTHING
from contentplatform.tenants import service as tenants


class Guard:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.settings = runtime.settings
        self.verifier = TokenVerifier(runtime.settings)
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
            return
        prefix, _, org_id = scope.partition(":")
        if prefix != "access" or not org_id:
            return
        self.generations[org_id] = self.generations.get(org_id, 0) + 1
        for key in [key for key in list(self.access_cache.keys()) if key[0] == org_id]:
            self.access_cache.pop(key, None)

    async def authorize(
        self, request: Request, access: Access, token: str | None, org_id: str | None
    ) -> Principal:
        client = request.client.host if request.client else "unknown"
        limiter = self.runtime.limiter
        if access is Access.public:
            await limiter.check(self.settings.rate_limit_public, f"client:{client}")
            return Principal(identity=None, tenant=None, client_address=client)

        if not token:
            raise Unauthorized("A bearer token is required (Authorization: Bearer <JWT>).")
        identity = await self.verifier.verify(token)
        logs.bind(user=identity.subject)

        needed = access.tenant_role
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
        logs.bind(tenant=str(tenant.tenant_id))
        if not tenant.role.includes(needed):
            raise Forbidden(
                f"This operation needs the {needed.value} role; you are {tenant.role.value}."
            )
        await limiter.check(
            self.settings.rate_limit, f"tenant:{tenant.tenant_id}:{identity.subject}"
        )
        return Principal(identity=identity, tenant=tenant, client_address=client)

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
    request: Request, access: Access, token: str | None, org_id: str | None
) -> Principal:
    guard: Guard = request.app.state.guard
    return await guard.authorize(request, access, token, org_id)
