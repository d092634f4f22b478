"""Content analytics' sources: connected by an admin (a Plausible or Umami key checked with one
call before it is saved, GA4 through Google's OAuth with PKCE, Search Console reusing SEO's
connection and its stored facts), each synced daily at DAILY_AT of the organization's zone and
on demand (sync.py, durable.py), disconnected keeping its figures unless purged. Secrets are
sealed with the publishers' key ring, as SEO's connections seal theirs, and never shown.

GA4's OAuth takes two calls of connectSource: the first (no credentials) leaves the source
`pending_auth` and answers `authorize_url`; the second, with credentials {code, state} from
Google's redirect, exchanges the code (the state single-use, 10 minutes, bound to the admin) and
connects it. The catalog's `webhook` source is not offered: it has no contract."""

from __future__ import annotations

import hashlib
import uuid
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics.content import durable, providers, schemas, sync
from contentplatform.analytics.content import repository as repo
from contentplatform.analytics.content.errors import (
    ProviderNotConfigured,
    ProviderUnavailable,
    SourceExists,
    SourceNotConnected,
    SourceNotFound,
    SourceRefused,
    SyncRunning,
)
from contentplatform.analytics.models import AnalyticsSource
from contentplatform.auth.context import TenantAccess
from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.publishers.vault import vault
from contentplatform.seo.connections import google
from contentplatform.seo.search_console import service as search_console
from contentplatform.tenants import service as tenants

GA4_SCOPE = "https://www.googleapis.com/auth/analytics.readonly"
STATE_TTL = timedelta(minutes=10)
FIRST_SYNC_DAYS = 28


def _hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def view(row: AnalyticsSource) -> schemas.AnalyticsSource:
    return schemas.AnalyticsSource.model_validate(
        {
            "id": row.id,
            "provider": row.provider,
            "property": row.property,
            "status": row.status,
            "metrics": providers.METRICS.get(row.provider, []),
            "lag_days": row.lag_days,
            "last_synced_at": row.last_synced_at,
            "data_through": row.data_through,
            "sync_status": row.sync_status,
            "sync_from": row.sync_from,
            "sync_to": row.sync_to,
            "missing_days": row.missing_days or [],
            "error": row.error,
            "created_at": row.created_at,
        }
    )


async def list_sources(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.AnalyticsSourceList:
    rows = await repo.sources(session, tenant_id)
    return schemas.AnalyticsSourceList(data=[view(row) for row in rows], total=len(rows))


async def require(
    session: AsyncSession, tenant_id: uuid.UUID, source_id: uuid.UUID, *, for_update: bool = False
) -> AnalyticsSource:
    row = await repo.source(session, tenant_id, source_id, for_update=for_update)
    if row is None:
        raise SourceNotFound(f"No analytics source {source_id} in this organization.")
    return row


# --- connect ------------------------------------------------------------------------------------


async def connect(
    session: AsyncSession,
    db: Database,
    settings: Settings,
    access: TenantAccess,
    data: schemas.ContentConnectSourceInput,
) -> schemas.ContentConnectedSource:
    tenant_id = access.tenant_id
    credentials = data.credentials
    if data.provider == "ga4" and credentials is not None and credentials.code:
        return await _complete_ga4(session, db, settings, access, data)
    existing = await repo.live_source(session, tenant_id, data.provider, data.property)
    if existing is not None and not (data.provider == "ga4" and existing.status == "pending_auth"):
        raise SourceExists(
            f"{data.provider} property {data.property!r} is already connected (source "
            f"{existing.id}): disconnect it first."
        )
    if data.provider == "ga4":
        return await _start_ga4(session, settings, access, data, existing)
    sealed: str | None = None
    config: dict[str, Any] = {}
    if data.provider == "search_console":
        chosen = await search_console.selected_property(session, tenant_id)
        if chosen is None or chosen.site_url != data.property:
            raise SourceRefused(
                "property must be the Search Console property selected on the SEO connection "
                f"(now: {chosen.site_url if chosen else 'none; connect Search Console in SEO'})."
            )
    elif data.provider == "plausible":
        if credentials is None or not credentials.api_key:
            raise SourceRefused("A plausible source needs credentials {apiKey}.")
        await _checked(providers.plausible_check(settings, data.property, credentials.api_key))
        sealed = vault(settings).seal({"apiKey": credentials.api_key})
    else:  # umami
        secret = _umami_credentials(data)
        await _checked(providers.umami_headers(settings, secret["baseUrl"], secret))
        sealed = vault(settings).seal(secret)
        config = {"site_url": data.site_url}
    row = AnalyticsSource(
        tenant_id=tenant_id,
        provider=data.provider,
        property=data.property,
        status="connected",
        credentials_sealed=sealed,
        config=config,
        seo_connection_id=data.seo_connection_id,
        lag_days=providers.LAG_DAYS[data.provider],
        connected_by=str(access.user_id),
        missing_days=[],
    )
    await repo.add_source(session, tenant_id, row)
    await _first_sync(session, row)
    return schemas.ContentConnectedSource(source=view(row), authorize_url=None)


def _umami_credentials(data: schemas.ContentConnectSourceInput) -> dict[str, str]:
    given = data.credentials
    if given is None or not given.base_url or not data.site_url:
        raise SourceRefused("An umami source needs siteUrl and credentials {baseUrl, ...}.")
    if given.api_key:
        return {"baseUrl": given.base_url, "apiKey": given.api_key}
    if given.username and given.password:
        return {"baseUrl": given.base_url, "username": given.username, "password": given.password}
    raise SourceRefused("An umami source needs credentials {apiKey} or {username, password}.")


async def _checked(pending: Any) -> Any:
    try:
        return await pending
    except providers.Refused as error:
        raise SourceRefused(f"The provider refused: {error}") from None
    except providers.Throttled as error:
        raise ProviderUnavailable(
            f"The provider could not be reached: {error}", extensions={"retryable": True}
        ) from None


async def _first_sync(session: AsyncSession, row: AnalyticsSource) -> None:
    """The daily sync scheduled, and the first backfill started."""
    zone = await tenants.timezone_of(session, row.tenant_id)
    row.next_sync_at = sync.next_daily(utcnow(), zone)
    await begin_sync(session, row, FIRST_SYNC_DAYS, ZoneInfo(zone))


async def _start_ga4(
    session: AsyncSession,
    settings: Settings,
    access: TenantAccess,
    data: schemas.ContentConnectSourceInput,
    pending: AnalyticsSource | None,
) -> schemas.ContentConnectedSource:
    oauth = google.GoogleOAuth(settings)
    if not oauth.configured:
        raise ProviderNotConfigured(
            "GA4 is not configured on this deployment (no Google OAuth client: "
            "GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET)."
        )
    if data.redirect_uri is None or data.redirect_uri not in settings.seo_oauth_redirect_uris:
        raise ProviderNotConfigured(
            "redirectUri must be one of this deployment's allowed redirect URIs "
            "(SEO_OAUTH_REDIRECT_URIS)."
        )
    if not data.property.isdigit():
        raise SourceRefused("A GA4 property is its numeric id (e.g. 123456789).")
    state, verifier = google.new_state(), google.new_verifier()
    keys = vault(settings)
    oauth_state = {
        "state_hash": _hash(state),
        "verifier": keys.seal({"verifier": verifier}),
        "redirect_uri": data.redirect_uri,
        "user_id": str(access.user_id),
        "expires_at": (utcnow() + STATE_TTL).isoformat(),
    }
    row = pending
    if row is None:
        row = AnalyticsSource(
            tenant_id=access.tenant_id,
            provider="ga4",
            property=data.property,
            status="pending_auth",
            config={},
            lag_days=providers.LAG_DAYS["ga4"],
            connected_by=str(access.user_id),
            missing_days=[],
        )
        await repo.add_source(session, access.tenant_id, row)
    row.config = {**(row.config or {}), "oauth": oauth_state}
    await session.flush()
    url = oauth.authorization_url(
        redirect_uri=data.redirect_uri,
        state=state,
        verifier=verifier,
        read_only=True,
        scope=GA4_SCOPE,
    )
    return schemas.ContentConnectedSource(source=view(row), authorize_url=url)


async def _spend_state(db: Database, access: TenantAccess, prop: str, state: str) -> dict[str, Any]:
    """The pending GA4 authorization's state, spent in a transaction of its own (so a refused
    exchange cannot be tried again with it, and two completions racing cannot both pass), or
    the refusal."""
    async with db.unit_of_work() as own:
        row = await repo.live_source(own, access.tenant_id, "ga4", prop, for_update=True)
        oauth_state = (row.config or {}).get("oauth") if row is not None else None
        if row is None or row.status != "pending_auth" or not isinstance(oauth_state, dict):
            raise SourceRefused("No GA4 authorization is pending for this property: start again.")
        if oauth_state.get("state_hash") != _hash(state):
            raise SourceRefused("Unknown OAuth state: start again with connectSource.")
        if oauth_state.get("user_id") != str(access.user_id):
            raise SourceRefused("This OAuth state was issued to another admin.")
        if datetime.fromisoformat(str(oauth_state["expires_at"])) <= utcnow():
            raise SourceRefused("This OAuth state expired (10 minutes): start again.")
        row.config = {key: value for key, value in row.config.items() if key != "oauth"}
        return oauth_state


async def _complete_ga4(
    session: AsyncSession,
    db: Database,
    settings: Settings,
    access: TenantAccess,
    data: schemas.ContentConnectSourceInput,
) -> schemas.ContentConnectedSource:
    assert data.credentials is not None and data.credentials.code
    oauth_state = await _spend_state(db, access, data.property, data.credentials.state or "")
    keys = vault(settings)
    try:
        tokens = await google.GoogleOAuth(settings).exchange(
            code=data.credentials.code,
            verifier=str(keys.open(str(oauth_state["verifier"]))["verifier"]),
            redirect_uri=str(oauth_state["redirect_uri"]),
        )
    except google.GoogleGrantRevoked as error:
        raise SourceRefused(f"Google refused the authorization code ({error.message}).") from None
    except google.GoogleApiError as error:
        raise ProviderUnavailable(
            f"Google's token endpoint failed: {error.message}", extensions={"retryable": True}
        ) from None
    if tokens.refresh_token is None:
        raise SourceRefused("Google issued no refresh token (offline access was not granted).")
    row = await repo.live_source(session, access.tenant_id, "ga4", data.property, for_update=True)
    if row is None or row.status != "pending_auth":
        raise SourceRefused("The GA4 authorization was abandoned meanwhile: start again.")
    row.credentials_sealed = keys.seal(
        {"access_token": tokens.access_token, "refresh_token": tokens.refresh_token}
    )
    row.access_expires_at = utcnow() + timedelta(seconds=tokens.expires_in)
    row.status = "connected"
    row.error = None
    await _first_sync(session, row)
    return schemas.ContentConnectedSource(source=view(row), authorize_url=None)


# --- disconnect and sync ------------------------------------------------------------------------


async def disconnect(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.ContentDisconnectSourceInput,
) -> Success:
    """The source disconnected (its grant revoked at Google for GA4, best effort), its figures
    kept unless purge_data; a disconnected source stays listed with its history."""
    row = await require(session, tenant_id, data.id, for_update=True)
    if row.provider == "ga4" and row.credentials_sealed:
        grant = vault(settings).open(row.credentials_sealed)
        await google.GoogleOAuth(settings).revoke(str(grant.get("refresh_token") or ""))
    row.status = "disconnected"
    row.credentials_sealed = None
    row.next_sync_at = None
    row.config = {key: value for key, value in (row.config or {}).items() if key != "oauth"}
    row.disconnected_at = utcnow()
    if row.sync_status == "running":
        row.sync_status = "failed"
    if data.purge_data:
        await repo.purge(session, tenant_id, row.id)
        row.data_through = None
    return SUCCESS


async def begin_sync(
    session: AsyncSession, row: AnalyticsSource, days: int, zone: ZoneInfo
) -> tuple[date, date]:
    """The source marked syncing over the window, its workflow started once this commits."""
    first, last = sync.sync_window(utcnow().astimezone(zone).date(), days)
    sync.mark_running(row, first, last)
    await session.flush()
    durable.after_commit(session, row)
    return first, last


async def start_sync(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ContentSyncSourceInput
) -> schemas.ContentSyncStarted:
    row = await require(session, tenant_id, data.id, for_update=True)
    if row.sync_status == "running":
        raise SyncRunning("A sync of this source is already running.")
    if row.status in ("disconnected", "pending_auth"):
        raise SourceNotConnected(f"The source is {row.status}: it cannot sync.")
    zone = ZoneInfo(await tenants.timezone_of(session, tenant_id))
    first, last = await begin_sync(session, row, data.days, zone)
    return schemas.ContentSyncStarted(
        source_id=row.id, status="syncing", **{"from": first}, to=last
    )
