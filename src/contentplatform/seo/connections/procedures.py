"""The SEO connection operations: declarations only; the rules live in service.py."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import Empty
from contentplatform.seo.connections import schemas, service
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

router = ProcedureRouter("seo", tag="SEO")


@router.get("listConnections", "/v1/seo/connections", access=Access.member)
async def list_connections(ctx: Context, data: Empty) -> schemas.SeoConnectionList:
    """Status of every SEO data provider the tenant can connect.

    One entry per supported provider, not_connected ones included, in a fixed order:
    google_search_console (OAuth 2.0: search_console), dataforseo (login+password: serp,
    keyword_data, ai_answers), pagespeed_insights (API key: pagespeed), openai / perplexity /
    gemini (API key: ai_answers of that engine), offline (local environment only:
    deterministic, labelled made-up data for demos and tests). Credentials (OAuth tokens, API keys,
    passwords) are stored encrypted and never returned: `credential_hint` is all that shows."""
    return await service.list_connections(ctx.session, ctx.tenant.tenant_id)


@router.get("getConnection", "/v1/seo/connections/{provider}", access=Access.member)
async def get_connection(
    ctx: Context, data: schemas.SeoProviderInput
) -> schemas.SeoConnectionDetail:
    """One provider connection with its Search Console properties, quota use and recent runs.

    `available_properties` is Google's sites.list as of the last connect or test (no provider
    call on read); `property` is the one chosen; `quota` counts today's URL inspections (the
    day starts at midnight Pacific, as Google's quota does); `recent_runs` are its last 5 sync
    runs. A provider never connected answers status not_connected."""
    return await service.detail(ctx.session, ctx.tenant.tenant_id, data.provider)


@router.post(
    "connect",
    "/v1/seo/connections/{provider}",
    access=Access.admin,
    errors=[ProviderNotConfigured, RedirectUriRefused, CredentialsRefused, ProviderUnavailable],
)
async def connect(ctx: Context, data: schemas.SeoConnectInput) -> schemas.SeoConnectOutcome:
    """Connect a provider: start the OAuth flow (Search Console) or save and verify API
    credentials.

    **google_search_console**: answers `status` pending_authorization with `authorization_url`
    (Google's consent page: authorization code with PKCE S256, `access_type=offline` and
    `prompt=consent`, so a refresh token is issued; scope `webmasters`, or
    `webmasters.readonly` with `readOnly`), `state` and `expires_at`. Send the admin's browser
    there; Google redirects it to `redirectUri` (which must be one of the deployment's allowed
    redirect URIs exactly: 400 otherwise) with `code` and `state`, which the front end posts to
    seo.completeConnect. The state is single-use, bound to this organization and this admin,
    and expires in 10 minutes; only its hash is stored. A connection already working keeps
    working until the new grant replaces it. Not configured on the deployment (no OAuth client):
    400.

    **Key providers** (`credentials`): dataforseo `{login, password}` (checked with GET
    /v3/appendix/user_data), openai and gemini `{apiKey}` (GET /models), perplexity `{apiKey}`
    (a 1-token completion), pagespeed_insights `{apiKey}` (runPagespeed without a URL: Google
    checks the key first): checked with that one call before saving; refused: 400 with the
    provider's words; unreachable: 503 (`retryable`), nothing stored. Reconnecting replaces the
    credentials and keeps the data.

    **offline**: connected with no credentials, in the local environment only (400 elsewhere).
    Its data is made up, and labelled so: `account_label` and `config.label` say "Offline
    fixtures (made-up data)", its property's `permission_level` is `offline` and its sync runs'
    `provider` is `offline` (queryPerformance's answer carries no label of its own: the
    connection is where the data's origin shows). Its property is `sc-domain:` of the profile's
    `siteUrl` host (`sc-domain:offline.example` without one, or when the organization holds
    that property from Google), selected at once, and its backfill starts as Search Console's
    does (searchConsole.backfillMonths). While no Google connection is present (connected,
    error or needs_reauth), Search Console's operations (sync, queryPerformance, insights,
    sitemaps, URL inspections) use it: deterministic days (the same property and day always
    give the same rows) over 20 pages and 60 queries under the profile's site, an anonymized
    share, 2 devices, 3 countries, the last two days fresh. Submitting or deleting a sitemap
    succeeds and changes nothing. A Google connection, once present, is used instead; a
    property Google's connection chooses loses the made-up days stored under it.
    """
    return await service.connect(ctx.session, ctx.settings, ctx.tenant, data)


@router.post(
    "completeConnect",
    "/v1/seo/connections/{provider}/callback",
    access=Access.admin,
    errors=[StateRefused, StateOfAnotherTenant, ProviderUnavailable],
)
async def complete_connect(
    ctx: Context, data: schemas.CompleteSeoConnectInput
) -> schemas.SeoConnectionDetail:
    """Finish the OAuth flow: exchange the authorization code and list the account's Search
    Console properties.

    The front end receives Google's redirect and posts `code` and `state` with the admin's
    token, so no unauthenticated endpoint exists. The state is spent first, whatever follows:
    an unknown, expired (10 minutes), already used state, or one issued to another admin, is
    400; a state issued to another organization is 404. The code is exchanged with the state's
    PKCE verifier; Google refusing the code or the verifier (`invalid_grant`) is 400. The
    tokens are stored encrypted; sites.list is read into `available_properties`, and the
    property matching settings.site_url (its URL-prefix property, else its `sc-domain:`
    property) is selected unless its permission is siteUnverifiedUser; otherwise choose one
    with seo.updateConnection. Google failing is 503 (`retryable`)."""
    return await service.complete_connect(
        ctx.session, ctx.runtime.db, ctx.settings, ctx.tenant, data
    )


@router.patch(
    "updateConnection",
    "/v1/seo/connections/{provider}",
    access=Access.admin,
    errors=[NotConnected, PropertyRefused],
)
async def update_connection(
    ctx: Context, data: schemas.UpdateSeoConnectionInput
) -> schemas.SeoConnection:
    """Choose the Search Console property, pause syncing, or change provider options.

    `property` must be one of `available_properties` (400 otherwise, and for a
    siteUnverifiedUser permission). Search rows are stored per property: switching changes what
    queries read and deletes nothing. Choosing a property starts a sync, as at connect
    (its backfill of settings' searchConsole.backfillMonths while nothing of it is stored),
    unless syncing is paused. `config` is merged into the stored options. 409 when the
    provider is not connected."""
    return await service.update_connection(ctx.session, ctx.tenant.tenant_id, data)


@router.delete("disconnect", "/v1/seo/connections/{provider}", access=Access.admin)
async def disconnect(ctx: Context, data: schemas.SeoDisconnectInput) -> schemas.SeoDisconnected:
    """Disconnect a provider, revoking its grant; optionally purge the data synced from it.

    Search Console: the grant is revoked at Google's revocation endpoint, best effort (the
    outcome is in `revocation`, and a failure in the connection's `last_error`). The stored
    credentials are deleted and the provider's queued sync runs cancelled (`cancelled_runs`).
    Synced data stays for history unless `purgeData=true`: then every Search Console fact,
    sitemap it listed and URL inspection of the organization's properties is deleted, counted
    in `purged` (offline: only its own property's made-up data). Disconnecting a provider that
    is not connected succeeds with nothing to do.
    Operations that need the provider then answer 409 naming it."""
    return await service.disconnect(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)


@router.post(
    "testConnection",
    "/v1/seo/connections/{provider}/test",
    access=Access.admin,
    errors=[NotConnected],
)
async def test_connection(
    ctx: Context, data: schemas.SeoProviderInput
) -> schemas.SeoConnectionTest:
    """Check that stored credentials still work and refresh the property list and quotas.

    Search Console: refreshes the access token when it expires within 5 minutes and reads
    sites.list into `available_properties`; a grant Google no longer accepts turns the
    connection needs_reauth (the organization's admins are notified). Key providers: the same
    one call as on connect. Answers 200 either way, `ok` false with the reason in `warnings`.
    409 when the provider is not connected."""
    return await service.check(ctx.session, ctx.settings, ctx.tenant.tenant_id, data.provider)
