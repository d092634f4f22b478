"""Google, spoken to through the guarded client (kit/outbound.py, decision 0010): the OAuth 2.0
authorization code flow with PKCE (authlib's httpx client, whose requests go out through a
transport that hands each one to the guarded client), and the Search Console API
(`webmasters/v3`: sites, searchAnalytics, sitemaps; `v1`: urlInspection) with a bearer token.

Every base URL comes from the settings, so the tests and local runs point them at the stand-in
(tests/support/google). Nothing here logs a token, a code or the client secret, and no error
message carries one: a message is Google's own `error_description`/`message`, or ours.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
from authlib.integrations.httpx_client import AsyncOAuth2Client
from authlib.integrations.httpx_client import OAuthError as AuthlibOAuthError

from contentplatform.config import Settings
from contentplatform.kit import outbound

SCOPE = "https://www.googleapis.com/auth/webmasters"
READ_ONLY_SCOPE = "https://www.googleapis.com/auth/webmasters.readonly"
# Headers the guarded client sets itself (or that describe a body it re-encodes).
_OWN_HEADERS = frozenset({"host", "content-length", "accept-encoding", "connection"})
_DECODED = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class GoogleApiError(Exception):
    """Google refused or failed a call: `status` (0 when it could not be reached), Google's error
    `reason` (quotaExceeded, rateLimitExceeded, forbidden, notFound, invalid, invalid_grant, ...),
    a `message` safe to show, and the `retry_after` seconds Google asked for, if any."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        reason: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status in (0, 429, 500, 502, 503, 504) or self.reason in (
            "quotaExceeded",
            "rateLimitExceeded",
            "userRateLimitExceeded",
            "backendError",
        )


class GoogleGrantRevoked(GoogleApiError):
    """The grant no longer works: the token endpoint answered `invalid_grant`, or the API 401."""


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends each request through the guarded client, so authlib's
    client (an httpx client) obeys the same rules as every other outbound call."""

    def __init__(self, policy: outbound.Policy) -> None:
        self.policy = policy

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _OWN_HEADERS}
        content = await request.aread()
        try:
            async with outbound.GuardedClient(self.policy) as client:
                answer = await client.request(
                    request.method, str(request.url), headers=headers, content=content or None
                )
        except outbound.OutboundError as error:
            raise GoogleApiError(0, f"Google could not be reached: {error}") from None
        kept = [(k, v) for k, v in answer.headers.multi_items() if k.lower() not in _DECODED]
        return httpx.Response(answer.status, headers=kept, content=answer.body, request=request)


@dataclass(frozen=True)
class Tokens:
    access_token: str
    refresh_token: str | None
    expires_in: float
    scope: str


def new_state() -> str:
    return secrets.token_urlsafe(32)


def new_verifier() -> str:
    # RFC 7636: 43-128 characters of the unreserved set; token_urlsafe(64) gives 86.
    return secrets.token_urlsafe(64)


class GoogleOAuth:
    """The OAuth 2.0 endpoints of one deployment's client (settings: id, secret, URLs)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.policy = outbound.policy_of(settings)

    @property
    def configured(self) -> bool:
        return bool(self.settings.google_client_id and self.settings.google_client_secret)

    def _client(self, **kwargs: Any) -> AsyncOAuth2Client:
        secret = self.settings.google_client_secret
        return AsyncOAuth2Client(
            client_id=self.settings.google_client_id,
            client_secret=secret.get_secret_value() if secret else None,
            # Google takes the client's credentials in the form body.
            token_endpoint_auth_method="client_secret_post",
            revocation_endpoint_auth_method="client_secret_post",
            code_challenge_method="S256",
            transport=GuardedTransport(self.policy),
            trust_env=False,
            **kwargs,
        )

    def authorization_url(
        self,
        *,
        redirect_uri: str,
        state: str,
        verifier: str,
        read_only: bool,
        scope: str | None = None,
    ) -> str:
        """Where the admin's browser goes to consent: offline access and prompt=consent, so
        Google issues a refresh token even on a second connect. `scope` replaces Search
        Console's (content analytics asks for GA4's analytics.readonly)."""
        client = self._client(
            scope=scope or (READ_ONLY_SCOPE if read_only else SCOPE), redirect_uri=redirect_uri
        )
        url, _ = client.create_authorization_url(
            self.settings.google_oauth_authorize_url,
            state=state,
            code_verifier=verifier,
            access_type="offline",
            prompt="consent",
            include_granted_scopes="true",
        )
        return str(url)

    async def exchange(self, *, code: str, verifier: str, redirect_uri: str) -> Tokens:
        """The code for tokens; a code or verifier Google refuses is GoogleGrantRevoked
        (`invalid_grant`), anything else it refuses GoogleApiError."""
        async with self._client(redirect_uri=redirect_uri) as client:
            token = await self._call(
                client.fetch_token(
                    self.settings.google_oauth_token_url,
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=verifier,
                )
            )
        return _tokens(token)

    async def refresh(self, refresh_token: str) -> Tokens:
        async with self._client() as client:
            token = await self._call(
                client.refresh_token(
                    self.settings.google_oauth_token_url, refresh_token=refresh_token
                )
            )
        found = _tokens(token)
        # Google keeps the refresh token unless it sends a new one.
        return Tokens(
            found.access_token, found.refresh_token or refresh_token, found.expires_in, found.scope
        )

    async def revoke(self, token: str) -> tuple[bool, str]:
        """Revoke a grant (the refresh token revokes every access token of it): whether Google
        took it, and what it said."""
        try:
            async with self._client() as client:
                response = await client.revoke_token(
                    self.settings.google_oauth_revoke_url, token=token
                )
        except GoogleApiError as error:
            return False, error.message
        if response.status_code == 200:
            return True, "revoked"
        # An already revoked or expired token is `invalid_token`: nothing is left to revoke.
        return response.status_code == 400, _oauth_message(response)

    async def _call(self, pending: Any) -> dict[str, Any]:
        try:
            token = await pending
        except AuthlibOAuthError as error:
            description = error.description or error.error or "refused"
            if error.error == "invalid_grant":
                raise GoogleGrantRevoked(
                    400, f"Google refused the grant: {description}", reason="invalid_grant"
                ) from None
            raise GoogleApiError(
                400, f"Google refused: {description}", reason=str(error.error)
            ) from None
        except (httpx.HTTPError, ValueError):
            raise GoogleApiError(502, "Google's token endpoint answered unreadably.") from None
        return dict(token)


def _tokens(token: dict[str, Any]) -> Tokens:
    access = token.get("access_token")
    if not isinstance(access, str) or not access:
        raise GoogleApiError(502, "Google's token endpoint answered without an access token.")
    refresh = token.get("refresh_token")
    expires = token.get("expires_in")
    return Tokens(
        access_token=access,
        refresh_token=refresh if isinstance(refresh, str) and refresh else None,
        expires_in=float(expires) if isinstance(expires, int | float) else 3600.0,
        scope=str(token.get("scope") or ""),
    )


def _oauth_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    if isinstance(body, dict):
        return str(body.get("error_description") or body.get("error") or response.status_code)
    return f"HTTP {response.status_code}"


def api_error(response: outbound.Response) -> GoogleApiError:
    """Google's error JSON (`{error: {code, message, status, errors: [{reason, ...}]}}`) as
    GoogleApiError; 401 as GoogleGrantRevoked."""
    message, reason = f"Google answered HTTP {response.status}.", None
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or message)[:500]
        details = error.get("errors")
        if isinstance(details, list) and details and isinstance(details[0], dict):
            reason = details[0].get("reason")
        reason = reason or error.get("status")
    retry_after = outbound.retry_after_seconds(response.headers.get("retry-after"))
    kind = GoogleGrantRevoked if response.status == 401 else GoogleApiError
    return kind(
        response.status,
        message,
        reason=str(reason) if reason else None,
        retry_after=retry_after,
    )


def _site(site_url: str) -> str:
    # A property is one path segment: `https://example.com/` and `sc-domain:example.com` alike.
    return quote(site_url, safe="")


class SearchConsoleClient:
    """The Search Console API with one valid access token, through the guarded client. Each
    call is its own exchange (the guarded client keeps no connection alive anyway), so a client
    may be kept as long as its token lives."""

    def __init__(self, settings: Settings, access_token: str) -> None:
        self._policy = outbound.policy_of(settings)
        self._base = settings.google_webmasters_api_base.rstrip("/")
        self._inspection_base = settings.google_url_inspection_api_base.rstrip("/")
        self._headers = {"authorization": f"Bearer {access_token}", "accept": "application/json"}

    def __repr__(self) -> str:  # never the token
        return f"SearchConsoleClient({self._base!r})"

    async def _request(self, method: str, url: str, *, json: Any = None) -> outbound.Response:
        try:
            async with outbound.GuardedClient(self._policy) as client:
                response = await client.request(method, url, headers=self._headers, json=json)
        except outbound.OutboundError as error:
            raise GoogleApiError(0, f"Google could not be reached: {error}") from None
        if response.status >= 400:
            raise api_error(response)
        return response

    async def _json(self, method: str, url: str, *, json: Any = None) -> dict[str, Any]:
        response = await self._request(method, url, json=json)
        try:
            body = response.json() if response.body else {}
        except ValueError:
            raise GoogleApiError(502, "Google answered with something other than JSON.") from None
        if not isinstance(body, dict):
            raise GoogleApiError(502, "Google answered with something other than an object.")
        return body

    async def list_sites(self) -> list[dict[str, Any]]:
        """`[{siteUrl, permissionLevel}]` of every property the grant sees."""
        body = await self._json("GET", f"{self._base}/sites")
        entries = body.get("siteEntry") or []
        return [
            {"siteUrl": str(e["siteUrl"]), "permissionLevel": str(e.get("permissionLevel", ""))}
            for e in entries
            if isinstance(e, dict) and isinstance(e.get("siteUrl"), str)
        ]

    async def query(self, site_url: str, body: dict[str, Any]) -> dict[str, Any]:
        """searchAnalytics/query, raw: `{rows, responseAggregationType, metadata?}`."""
        return await self._json(
            "POST", f"{self._base}/sites/{_site(site_url)}/searchAnalytics/query", json=body
        )

    async def list_sitemaps(self, site_url: str) -> list[dict[str, Any]]:
        """The property's WmxSitemap resources, raw."""
        body = await self._json("GET", f"{self._base}/sites/{_site(site_url)}/sitemaps")
        return [s for s in body.get("sitemap") or [] if isinstance(s, dict)]

    async def submit_sitemap(self, site_url: str, feedpath: str) -> None:
        await self._request(
            "PUT", f"{self._base}/sites/{_site(site_url)}/sitemaps/{quote(feedpath, safe='')}"
        )

    async def delete_sitemap(self, site_url: str, feedpath: str) -> None:
        await self._request(
            "DELETE", f"{self._base}/sites/{_site(site_url)}/sitemaps/{quote(feedpath, safe='')}"
        )

    async def inspect(self, site_url: str, url: str, language_code: str | None) -> dict[str, Any]:
        """urlInspection/index:inspect's `inspectionResult`."""
        body: dict[str, Any] = {"inspectionUrl": url, "siteUrl": site_url}
        if language_code:
            body["languageCode"] = language_code
        answer = await self._json(
            "POST", f"{self._inspection_base}/urlInspection/index:inspect", json=body
        )
        result = answer.get("inspectionResult")
        if not isinstance(result, dict):
            raise GoogleApiError(502, "Google's inspection answer has no inspectionResult.")
        return result


def matching_property(sites: list[dict[str, Any]], site_url: str | None) -> dict[str, Any] | None:
    """The property settings.site_url falls in: the longest URL-prefix property it starts with
    (`https://example.com/` holds `https://example.com/blog`), else its domain property
    (`sc-domain:` of the host, www. aside); never one whose permission is siteUnverifiedUser."""
    if not site_url:
        return None
    parts = urlsplit(site_url)
    host = (parts.hostname or "").lower()
    url = f"{parts.scheme.lower()}://{host}{parts.path or '/'}"
    url = url if url.endswith("/") else url + "/"
    usable = [s for s in sites if s.get("permissionLevel") != "siteUnverifiedUser"]
    prefixes = [
        s
        for s in usable
        if not str(s["siteUrl"]).startswith("sc-domain:")
        and url.startswith(str(s["siteUrl"]).lower())
    ]
    if prefixes:
        return max(prefixes, key=lambda s: len(str(s["siteUrl"])))
    bare = host.removeprefix("www.")
    for site in usable:
        if str(site["siteUrl"]).lower() in (f"sc-domain:{host}", f"sc-domain:{bare}"):
            return site
    return None
