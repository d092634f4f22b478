"""The access other parts of SEO use to call Search Console: a client whose token is valid
(refreshed 5 minutes before it expires and sealed again), for the property selected on the
connection in use (Google's, or the offline one's made-up data in `local`); a grant Google
refuses turns the connection `needs_reauth`, the tenant's admins told."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.core import actors, runtime
from contentplatform.events import service as events
from contentplatform.kit.db import utcnow
from contentplatform.publishers.vault import vault
from contentplatform.seo.connections import google, offline
from contentplatform.seo.connections import repository as repo
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.models import SeoConnection

log = logging.getLogger(__name__)

GSC = "google_search_console"
OFFLINE = "offline"
PAGESPEED = "pagespeed_insights"
DATAFORSEO = "dataforseo"
REFRESH_MARGIN = timedelta(minutes=5)
NEEDS_REAUTH_EVENT = "seo.connection_needs_reauth"


@dataclass(frozen=True)
class SearchConsoleAccess:
    """What a part that calls Search Console needs: a client with a valid token, and the
    property it may act on."""

    client: google.SearchConsoleClient
    # google_search_console, or offline (made-up data): what a part records as the answer's
    # provider.
    provider: str
    property_id: uuid.UUID
    site_url: str
    permission_level: str
    read_only: bool


def _settings(settings: Settings | None) -> Settings:
    return settings if settings is not None else runtime.current().settings


async def google_client(
    session: AsyncSession, settings: Settings, row: SeoConnection
) -> google.SearchConsoleClient:
    """A client with a token valid for 5 more minutes at least: refreshed (and the new token
    sealed in `session`) when it would not be. GoogleGrantRevoked when Google refuses."""
    if not row.credentials_sealed:
        raise google.GoogleGrantRevoked(401, "No grant is stored.", reason="invalid_grant")
    keys = vault(settings)
    grant = keys.open(row.credentials_sealed)
    expires = row.access_expires_at
    if expires is None or expires - REFRESH_MARGIN <= utcnow():
        tokens = await google.GoogleOAuth(settings).refresh(str(grant["refresh_token"]))
        grant = {"access_token": tokens.access_token, "refresh_token": tokens.refresh_token}
        row.credentials_sealed = keys.seal(grant)
        row.access_expires_at = utcnow() + timedelta(seconds=tokens.expires_in)
    return google.SearchConsoleClient(settings, str(grant["access_token"]))


async def needs_reauth(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoConnection, reason: str
) -> None:
    """Mark the grant dead and tell the tenant's admins, once per loss."""
    if row.status == "needs_reauth":
        return
    row.status = "needs_reauth"
    row.last_error = {"code": "needs_reauth", "message": reason}
    events.emit(
        session,
        tenant_id,
        NEEDS_REAUTH_EVENT,
        resource_id=row.id,
        resource_type="seo_connection",
        payload={"provider": row.provider, "reason": reason},
        # The system found it: every admin hears, whoever's request it was.
        actor=actors.SYSTEM,
    )
    log.warning("seo connection needs reauthorization", extra={"provider": row.provider})


async def search_console(
    session: AsyncSession, tenant_id: uuid.UUID, settings: Settings | None = None
) -> SearchConsoleAccess:
    """Search Console (or offline.connection_in_use's made-up one) for the selected property, its
    token refreshed when needed; SearchConsoleNotConnected (409) when it is not connected,
    needs_reauth, or has no property. A refresh Google refuses marks the connection needs_reauth
    (and tells the admins) in a transaction of its own: call this before writing."""
    found = _settings(settings)
    row = await offline.connection_in_use(session, tenant_id, found)
    if row is None or row.status not in ("connected", "error"):
        state = "needs to be authorized again" if row and row.status == "needs_reauth" else None
        raise SearchConsoleNotConnected(
            f"Search Console (google_search_console) {state or 'is not connected'}."
        )
    if row.property_id is None:
        raise SearchConsoleNotConnected(
            "No Search Console property is selected (seo.updateConnection)."
        )
    chosen = await repo.property_by_id(session, tenant_id, row.property_id)
    if chosen is None:
        raise SearchConsoleNotConnected("No Search Console property is selected.")
    try:
        if row.provider == OFFLINE:
            client = await offline.client(session, tenant_id, chosen)
        else:
            client = await google_client(session, found, row)
    except google.GoogleGrantRevoked:
        async with runtime.current().db.unit_of_work() as own:
            await grant_revoked(own, tenant_id)
        raise SearchConsoleNotConnected(
            "Search Console (google_search_console) needs to be authorized again: Google no "
            "longer accepts the grant."
        ) from None
    return SearchConsoleAccess(
        client=client,
        provider=row.provider,
        property_id=chosen.id,
        site_url=chosen.site_url,
        permission_level=chosen.permission_level or "",
        read_only=row.provider == GSC and google.SCOPE not in (row.scopes or []),
    )


async def pagespeed_key(
    session: AsyncSession, tenant_id: uuid.UUID, settings: Settings | None = None
) -> str | None:
    """The tenant's PageSpeed Insights API key when `pagespeed_insights` is connected (its own
    quota), None otherwise (PageSpeed Insights then answers keyless, on the shared quota)."""
    row = await repo.connection(session, tenant_id, PAGESPEED)
    if row is None or row.status not in ("connected", "error") or not row.credentials_sealed:
        return None
    key = vault(_settings(settings)).open(row.credentials_sealed).get("api_key")
    return str(key) if key else None


async def serp_provider(
    session: AsyncSession, tenant_id: uuid.UUID, settings: Settings | None = None
) -> tuple[str, dict[str, Any] | None] | None:
    """The SERP provider rank checks go through: `dataforseo` with its credentials {login,
    password} when connected; else, in the local environment, a connected `offline` one
    (made-up SERPs, no credentials); else None."""
    row = await repo.connection(session, tenant_id, DATAFORSEO)
    if row is not None and row.status in ("connected", "error") and row.credentials_sealed:
        return DATAFORSEO, dict(vault(_settings(settings)).open(row.credentials_sealed))
    if _settings(settings).is_local:
        other = await repo.connection(session, tenant_id, OFFLINE)
        if other is not None and other.status == "connected":
            return OFFLINE, None
    return None


async def grant_revoked(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """An API call was answered 401 (or a refresh invalid_grant): the connection turns
    needs_reauth and the tenant's admins are told (in `session`'s transaction)."""
    row = await repo.connection(session, tenant_id, GSC, for_update=True)
    if row is not None and row.status in ("connected", "error"):
        await needs_reauth(session, tenant_id, row, "Google no longer accepts the grant.")
