"""The rules of SEO connections: the OAuth 2.0 flow of Search Console (state single-use, bound to
the tenant and the admin, 10 minutes; PKCE S256; offline access), key providers checked before
saving, tokens sealed with the publishers' key ring and refreshed 5 minutes before they expire,
a revoked grant turned `needs_reauth` with the tenant's admins told. Never commits, but for the
two writes that must outlive a refusal (a state spent, a grant found revoked), each made in a
transaction of its own before anything else is written."""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.publishers.vault import vault
from contentplatform.seo.connections import access, google, offline, providers, schemas
from contentplatform.seo.connections import repository as repo
from contentplatform.seo.connections.errors import (
    CredentialsRefused,
    NotConnected,
    PropertyRefused,
    ProviderNotConfigured,
    ProviderUnavailable,
    RedirectUriRefused,
    StateOfAnotherTenant,
    StateRefused,
)
from contentplatform.seo.models import SeoConnection, SeoOAuthState
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)

GSC = "google_search_console"
OFFLINE = "offline"
STATE_TTL = timedelta(minutes=10)
UNVERIFIED = "siteUnverifiedUser"
URL_INSPECTIONS_PER_DAY = 2000
URL_INSPECTIONS_PER_MINUTE = 600
SEARCH_ANALYTICS_QPM = 1200


def _hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


# --- reads ------------------------------------------------------------------------------------


_SHOWN = (
    "status",
    "account_label",
    "scopes",
    "config",
    "credential_hint",
    "sync_enabled",
    "last_sync_at",
    "last_error",
    "connected_at",
    "connected_by",
)
_NEVER_CONNECTED = {"status": "not_connected", "scopes": [], "config": {}, "sync_enabled": True}


def view(provider: str, row: SeoConnection | None) -> schemas.SeoConnection:
    """A provider's connection as the API shows it; no row is not_connected."""
    shown = {name: getattr(row, name) for name in _SHOWN} if row is not None else _NEVER_CONNECTED
    return schemas.SeoConnection.model_validate(
        {name: None for name in _SHOWN}
        | shown
        | {"provider": provider, "capabilities": providers.CAPABILITIES[provider]}
    )


async def list_connections(
    session: AsyncSession, tenant_id: uuid.UUID
) -> schemas.SeoConnectionList:
    rows = {row.provider: row for row in await repo.connections(session, tenant_id)}
    data = [view(provider, rows.get(provider)) for provider in schemas.PROVIDERS]
    return schemas.SeoConnectionList(data=data, total=len(data))


def _properties(row: SeoConnection | None) -> list[schemas.SeoAvailableProperty]:
    if row is None:
        return []
    return [
        schemas.SeoAvailableProperty(
            site_url=str(p.get("siteUrl")), permission_level=str(p.get("permissionLevel"))
        )
        for p in row.available_properties or []
    ]


def _midnight_pacific(now: datetime) -> datetime:
    """When today's URL Inspection quota began: midnight in Google's zone (Pacific)."""
    local = now.astimezone(ZoneInfo("America/Los_Angeles"))
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


async def _quota(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoConnection | None
) -> schemas.SeoQuota | None:
    if row is None or row.provider != GSC:
        return None
    used = 0
    if row.property_id is not None:
        since = _midnight_pacific(utcnow())
        used = await repo.inspections_since(session, tenant_id, row.property_id, since)
    return schemas.SeoQuota(
        url_inspection_used_today=used,
        url_inspection_limit_per_day=URL_INSPECTIONS_PER_DAY,
        url_inspection_limit_per_minute=URL_INSPECTIONS_PER_MINUTE,
        search_analytics_queries_per_minute=SEARCH_ANALYTICS_QPM,
    )


async def detail(
    session: AsyncSession, tenant_id: uuid.UUID, provider: str
) -> schemas.SeoConnectionDetail:
    """One provider with its cached properties, the chosen one, quota use and recent runs: no
    provider call."""
    row = await repo.connection(session, tenant_id, provider)
    selected = None
    if row is not None and row.property_id is not None:
        chosen = await repo.property_by_id(session, tenant_id, row.property_id)
        if chosen is not None:
            selected = schemas.SeoSelectedProperty(
                id=chosen.id,
                site_url=chosen.site_url,
                permission_level=chosen.permission_level,
                final_through=chosen.final_through.isoformat() if chosen.final_through else None,
                fresh_through=chosen.fresh_through.isoformat() if chosen.fresh_through else None,
                last_synced_at=chosen.last_synced_at,
            )
    runs = await repo.recent_runs(session, tenant_id, provider)
    return schemas.SeoConnectionDetail(
        **view(provider, row).model_dump(),
        available_properties=_properties(row),
        property=selected,
        quota=await _quota(session, tenant_id, row),
        recent_runs=[
            schemas.SeoRecentRun(
                id=run.id,
                kind=run.kind,
                status=run.status,
                trigger=run.trigger,
                rows_written=run.rows_written,
                created_at=run.created_at,
                finished_at=run.finished_at,
            )
            for run in runs
        ],
    )


# --- connect ----------------------------------------------------------------------------------


async def _row(session: AsyncSession, tenant_id: uuid.UUID, provider: str) -> SeoConnection:
    """The provider's row, made (not connected) when it has none."""
    row = await repo.connection(session, tenant_id, provider, for_update=True)
    if row is None:
        row = SeoConnection(
            tenant_id=tenant_id,
            provider=provider,
            status="not_connected",
            scopes=[],
            config={},
            available_properties=[],
            sync_enabled=True,
        )
        session.add(row)
    return row


async def connect(
    session: AsyncSession,
    settings: Settings,
    access: TenantAccess,
    data: schemas.SeoConnectInput,
) -> schemas.SeoConnectOutcome:
    if data.provider == GSC:
        return await _start_oauth(session, settings, access, data)
    if data.provider == "offline":
        if not settings.is_local:
            raise ProviderNotConfigured(
                "The offline provider (made-up, labelled data) exists only in the local "
                "environment."
            )
        row = await _row(session, access.tenant_id, OFFLINE)
        _connected(row, access, account_label=offline.LABEL, hint=None, sealed=None)
        row.config = {**(row.config or {}), **(data.config or {}), "label": offline.LABEL}
        await offline.attach(session, access.tenant_id, row)
        await on_connected(session, access.tenant_id, row)  # its backfill, as Google's
    elif data.provider in providers.KEY_PROVIDERS:
        credentials = _credentials(data)
        try:
            verified = await providers.verify(
                settings, data.provider, credentials, data.config or {}
            )
        except providers.Refused as error:
            raise CredentialsRefused(f"{data.provider} refused the credentials: {error}") from None
        except providers.Unavailable as error:
            raise ProviderUnavailable(
                f"{data.provider} could not check the credentials: {error}",
                extensions={"retryable": True},
            ) from None
        row = await _row(session, access.tenant_id, data.provider)
        _connected(
            row,
            access,
            account_label=verified.account_label,
            hint=verified.credential_hint,
            sealed=vault(settings).seal(credentials),
        )
        row.config = {**(row.config or {}), **(data.config or {})}
    else:
        raise ProviderNotConfigured(
            f"Connecting {data.provider} is not available yet: its verification call is not "
            "built. Nothing was stored."
        )
    await session.flush()
    found = await detail(session, access.tenant_id, data.provider)
    return schemas.SeoConnectOutcome(**found.model_dump())


def _credentials(data: schemas.SeoConnectInput) -> dict[str, str]:
    given = data.credentials
    if data.provider == "dataforseo":
        if given is None or not given.login or not given.password or given.api_key:
            raise CredentialsRefused("dataforseo takes credentials {login, password}.")
        return {"login": given.login, "password": given.password}
    if given is None or not given.api_key or given.login or given.password:
        raise CredentialsRefused(f"{data.provider} takes credentials {{apiKey}}.")
    return {"api_key": given.api_key}


def _connected(
    row: SeoConnection,
    access: TenantAccess,
    *,
    account_label: str | None,
    hint: str | None,
    sealed: str | None,
) -> None:
    row.status = "connected"
    row.account_label = account_label
    row.credential_hint = hint
    row.credentials_sealed = sealed
    row.last_error = None
    row.connected_at = utcnow()
    row.connected_by = str(access.user_id)


async def _start_oauth(
    session: AsyncSession,
    settings: Settings,
    access: TenantAccess,
    data: schemas.SeoConnectInput,
) -> schemas.SeoConnectOutcome:
    oauth = google.GoogleOAuth(settings)
    if not oauth.configured:
        raise ProviderNotConfigured(
            "Search Console is not configured on this deployment (no OAuth client: "
            "GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET)."
        )
    if data.redirect_uri is None or data.redirect_uri not in settings.seo_oauth_redirect_uris:
        raise RedirectUriRefused(
            "redirectUri must be one of this deployment's allowed redirect URIs "
            "(SEO_OAUTH_REDIRECT_URIS)."
        )
    now = utcnow()
    state, verifier = google.new_state(), google.new_verifier()
    await repo.delete_expired_states(session, access.tenant_id, now)
    await repo.add_state(
        session,
        access.tenant_id,
        SeoOAuthState(
            tenant_id=access.tenant_id,
            provider=GSC,
            state_hash=_hash(state),
            user_id=str(access.user_id),
            verifier_sealed=vault(settings).seal(verifier),
            redirect_uri=data.redirect_uri,
            read_only=data.read_only,
            expires_at=now + STATE_TTL,
        ),
    )
    row = await _row(session, access.tenant_id, GSC)
    # A working connection keeps working until the new grant replaces it.
    if row.status not in ("connected", "needs_reauth"):
        row.status = "pending_authorization"
    await session.flush()
    found = await detail(session, access.tenant_id, GSC)
    outcome = found.model_dump()
    outcome["status"] = "pending_authorization"
    return schemas.SeoConnectOutcome(
        **outcome,
        authorization_url=oauth.authorization_url(
            redirect_uri=data.redirect_uri,
            state=state,
            verifier=verifier,
            read_only=data.read_only,
        ),
        state=state,
        expires_at=now + STATE_TTL,
    )


async def _spend_state(db: Database, access: TenantAccess, state: str) -> SeoOAuthState:
    """The state, spent in a transaction of its own (so a refused exchange cannot be tried
    again with it, and two completions racing cannot both pass), or the refusal."""
    async with db.unit_of_work() as own:
        found = await repo.state_by_hash(own, _hash(state))
        if found is None:
            raise StateRefused("Unknown OAuth state: start again with seo.connect.")
        if found.tenant_id != access.tenant_id:
            raise StateOfAnotherTenant("No such OAuth state in this organization.")
        if found.used_at is not None:
            raise StateRefused("This OAuth state was already used: start again with seo.connect.")
        now = utcnow()
        if found.expires_at <= now:
            raise StateRefused("This OAuth state expired (10 minutes): start again.")
        if found.user_id != str(access.user_id):
            raise StateRefused("This OAuth state was issued to another admin.")
        spent = await own.execute(
            update(SeoOAuthState)
            .where(SeoOAuthState.id == found.id, SeoOAuthState.used_at.is_(None))
            .values(used_at=now)
        )
        if not getattr(spent, "rowcount", 0):
            raise StateRefused("This OAuth state was already used: start again with seo.connect.")
        own.expunge(found)
        return found


async def complete_connect(
    session: AsyncSession,
    db: Database,
    settings: Settings,
    access: TenantAccess,
    data: schemas.CompleteSeoConnectInput,
) -> schemas.SeoConnectionDetail:
    state = await _spend_state(db, access, data.state)
    oauth = google.GoogleOAuth(settings)
    keys = vault(settings)
    try:
        tokens = await oauth.exchange(
            code=data.code,
            verifier=keys.open(state.verifier_sealed),
            redirect_uri=state.redirect_uri,
        )
    except google.GoogleGrantRevoked as error:
        raise StateRefused(
            f"Google refused the authorization code or its PKCE verifier ({error.message}): "
            "start again with seo.connect."
        ) from None
    except google.GoogleApiError as error:
        raise ProviderUnavailable(
            f"Google's token endpoint failed: {error.message}", extensions={"retryable": True}
        ) from None
    if tokens.refresh_token is None:
        raise StateRefused(
            "Google issued no refresh token (offline access was not granted): start again."
        )
    client = google.SearchConsoleClient(settings, tokens.access_token)
    try:
        sites = await client.list_sites()
    except google.GoogleApiError as error:
        raise ProviderUnavailable(
            f"Google did not list the Search Console properties: {error.message}",
            extensions={"retryable": True},
        ) from None
    row = await _row(session, access.tenant_id, GSC)
    scopes = tokens.scope.split() or [google.READ_ONLY_SCOPE if state.read_only else google.SCOPE]
    _connected(
        row,
        access,
        account_label=None,
        hint="Google OAuth grant",
        sealed=keys.seal(
            {"access_token": tokens.access_token, "refresh_token": tokens.refresh_token}
        ),
    )
    row.scopes = scopes
    row.access_expires_at = utcnow() + timedelta(seconds=tokens.expires_in)
    row.available_properties = sites
    row.config = {**(row.config or {}), "read_only": google.SCOPE not in scopes}
    chosen = google.matching_property(sites, await repo.site_url(session, access.tenant_id))
    if chosen is not None:
        await _select(session, access.tenant_id, row, chosen)
    row.account_label = _label(sites, chosen)
    await session.flush()
    await on_connected(session, access.tenant_id, row)
    return await detail(session, access.tenant_id, GSC)


def _label(sites: list[dict[str, Any]], chosen: dict[str, Any] | None) -> str:
    if chosen is not None:
        return str(chosen["siteUrl"])
    return f"Google account with {len(sites)} Search Console properties"


async def _select(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoConnection, site: dict[str, Any]
) -> None:
    """Make `site` the connection's property (its row made once: data is kept per property)."""
    site_url, level = str(site["siteUrl"]), str(site.get("permissionLevel") or "")
    found = await repo.property_by_url(session, tenant_id, site_url)
    if found is None:
        found = await repo.add_property(session, tenant_id, site_url, level)
    else:
        if found.permission_level == offline.OFFLINE_PERMISSION:
            await offline.hand_over(session, tenant_id, found)
        found.permission_level = level
    row.property_id = found.id


# What runs once Search Console is connected: the Search Console sync registers its first
# backfill and daily schedule here (seo/search_console/sync.py), since connections may not
# import the part that uses it.
ConnectedHook = Callable[[AsyncSession, uuid.UUID, SeoConnection], Awaitable[object]]
_connected_hooks: list[ConnectedHook] = []


def when_connected(hook: ConnectedHook) -> ConnectedHook:
    """Register `hook` to run in completeConnect's transaction (see on_connected)."""
    _connected_hooks.append(hook)
    return hook


async def on_connected(session: AsyncSession, tenant_id: uuid.UUID, row: SeoConnection) -> None:
    """The hook the sync part hangs the first backfill on (settings.search_console
    .backfill_months, trigger `connect`): called in completeConnect's transaction once the
    grant is stored and the property chosen (`row.property_id`, None when none matched), and
    in updateConnection's when it chooses another property.
    Runs what registered with `when_connected`."""
    for hook in _connected_hooks:
        await hook(session, tenant_id, row)


# --- update, disconnect, test -----------------------------------------------------------------


async def update_connection(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateSeoConnectionInput
) -> schemas.SeoConnection:
    row = await repo.connection(session, tenant_id, data.provider, for_update=True)
    if row is None or row.status not in ("connected", "needs_reauth"):
        raise NotConnected(f"{data.provider} is not connected.")
    chosen_before = row.property_id
    if data.property is not None:
        if data.provider != GSC:
            raise PropertyRefused("Only a Search Console connection has properties.")
        site = next(
            (s for s in row.available_properties or [] if s.get("siteUrl") == data.property),
            None,
        )
        if site is None:
            raise PropertyRefused(
                "The property is not among the connection's available properties "
                "(seo.testConnection refreshes them)."
            )
        if site.get("permissionLevel") == UNVERIFIED:
            raise PropertyRefused("The property is not verified for this Google account.")
        await _select(session, tenant_id, row, site)
        row.account_label = str(site["siteUrl"])
    if data.sync_enabled is not None:
        row.sync_enabled = data.sync_enabled
    if data.config is not None:
        row.config = {**(row.config or {}), **data.config}
    await session.flush()
    if chosen_before != row.property_id and row.status == "connected":
        # A property chosen now is synced now (its backfill), as one chosen at connect is.
        await on_connected(session, tenant_id, row)
    return view(data.provider, row)


async def disconnect(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.SeoDisconnectInput,
) -> schemas.SeoDisconnected:
    row = await repo.connection(session, tenant_id, data.provider, for_update=True)
    revocation = schemas.SeoRevocation(attempted=False, ok=None, message=None)
    if row is not None and row.provider == GSC and row.credentials_sealed:
        grant = vault(settings).open(row.credentials_sealed)
        token = grant.get("refresh_token") or grant.get("access_token")
        ok, message = await google.GoogleOAuth(settings).revoke(str(token))
        revocation = schemas.SeoRevocation(attempted=True, ok=ok, message=message[:300])
    if row is not None:
        row.status = "not_connected"
        row.credentials_sealed = None
        row.credential_hint = None
        row.access_expires_at = None
        row.scopes = []
        row.account_label = None
        row.connected_at = None
        row.connected_by = None
        row.last_error = (
            {"code": "revocation_failed", "message": revocation.message}
            if revocation.ok is False
            else None
        )
    cancelled = await sync_runs.cancel_queued(session, tenant_id, data.provider)
    purged = {"search_rows": 0, "inspections": 0, "sitemaps": 0}
    if data.purge_data and data.provider == GSC:
        purged = await repo.purge_search_console(
            session, tenant_id, await repo.property_ids(session, tenant_id)
        )
        if row is not None:
            row.property_id = None
            row.available_properties = []
    elif data.purge_data and data.provider == OFFLINE and row and row.property_id:
        purged = await repo.purge_search_console(session, tenant_id, [row.property_id])
    await session.flush()
    return schemas.SeoDisconnected(
        success=True,
        purged=schemas.SeoPurged(**purged, serp_snapshots=0, ai_answers=0),
        cancelled_runs=cancelled,
        revocation=revocation,
    )


async def check(
    session: AsyncSession, settings: Settings, tenant_id: uuid.UUID, provider: str
) -> schemas.SeoConnectionTest:
    """Refresh the token and make one cheap read. Answers either way (`ok`)."""
    row = await repo.connection(session, tenant_id, provider, for_update=True)
    if row is None or row.status == "not_connected" or row.status == "pending_authorization":
        raise NotConnected(f"{provider} is not connected.")
    warnings: list[str] = []
    ok = True
    if provider == GSC:
        try:
            client = await access.google_client(session, settings, row)
            sites = await client.list_sites()
        except google.GoogleGrantRevoked:
            await access.needs_reauth(
                session, tenant_id, row, "Google no longer accepts the grant."
            )
            ok = False
            warnings.append("Google no longer accepts the grant: connect again.")
        except google.GoogleApiError as error:
            ok = False
            warnings.append(f"Google: {error.message}")
            row.status = "error"
            row.last_error = {"code": error.reason or str(error.status), "message": error.message}
        else:
            row.available_properties = sites
            row.status, row.last_error = "connected", None
            selected = None
            if row.property_id is not None:
                chosen = await repo.property_by_id(session, tenant_id, row.property_id)
                selected = chosen.site_url if chosen else None
            if selected and selected not in {s["siteUrl"] for s in sites}:
                warnings.append(f"The selected property {selected} is no longer visible.")
    elif provider in providers.KEY_PROVIDERS and row.credentials_sealed:
        try:
            await providers.verify(
                settings, provider, vault(settings).open(row.credentials_sealed), row.config
            )
            row.status, row.last_error = "connected", None
        except (providers.Refused, providers.Unavailable) as error:
            ok = False
            warnings.append(f"{provider}: {error}")
            row.status = "error"
            row.last_error = {"code": "verification_failed", "message": str(error)[:300]}
    await session.flush()
    return schemas.SeoConnectionTest(
        ok=ok,
        status=row.status,
        account_label=row.account_label,
        capabilities=providers.CAPABILITIES[provider],
        available_properties=_properties(row),
        quota=await _quota(session, tenant_id, row),
        warnings=warnings,
    )
