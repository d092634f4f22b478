"""A Google stand-in on loopback, speaking the real protocol of what SEO calls:

    GET  /o/oauth2/v2/auth                 consents at once: 302 to redirect_uri?code&state
    POST /token                            authorization_code (PKCE S256 checked) | refresh_token
    POST /revoke                           token=...; 200, or 400 invalid_token
    GET  /webmasters/v3/sites              {siteEntry: [{siteUrl, permissionLevel}]}
    POST /webmasters/v3/sites/{site}/searchAnalytics/query
    GET  /webmasters/v3/sites/{site}/sitemaps            {sitemap: [WmxSitemap]}
    GET|PUT|DELETE /webmasters/v3/sites/{site}/sitemaps/{feedpath}
    POST /v1/urlInspection/index:inspect   {inspectionResult}

Shapes are Google's (OAuth errors `{error, error_description}`; API errors `{error: {code,
message, status, errors: [{message, domain, reason}]}}`). searchAnalytics/query follows
Google's rules: dimensions date, query, page, country, device; `type` web|image|video|news|
discover; `dataState` final (default: final days only) or all (fresh days too, and
`metadata.firstIncompleteDate`, only when grouped by date and the range holds a day not final);
`rowLimit` 1-25,000 (default 1,000) and `startRow` paging; rows sorted by clicks descending;
a day without impressions has no row (grouped by date over a window: a row `keys: ["YYYY-MM-DD"]`
per day with data); anonymized queries (seeded with query None) count in every total but never
come back as a query row; positions are impression-weighted.

The seeding API (the parts' tests use these names): `sites`, `set_day`, `fetched`,
`fetched_by`, `fail_next`, `revoke_grants`, `inspection_results`, `sitemaps`; `authorize(url)`
is what a browser's consent would give (the code). Runnable by hand beside `serve`:
`python -m tests.support.google`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlencode, urlsplit

from tests.support.servers import LoopbackServer, send

CLIENT_ID = "standin-client.apps.googleusercontent.com"
CLIENT_SECRET = "standin-client-secret-7f3a9c"
SCOPE = "https://www.googleapis.com/auth/webmasters"
READ_ONLY_SCOPE = "https://www.googleapis.com/auth/webmasters.readonly"
# GA4's (content analytics' ga4 sources; tests/analytics/content/standin.py serves its Data API).
ANALYTICS_SCOPE = "https://www.googleapis.com/auth/analytics.readonly"
DIMENSIONS = ("date", "query", "page", "country", "device", "searchAppearance")
SEARCH_TYPES = ("web", "image", "video", "news", "discover", "googleNews")
MAX_ROW_LIMIT = 25_000
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


@dataclass(frozen=True)
class SearchRow:
    """One seeded row of a day: `query` None is an anonymized query. `country` is ISO 3166-1
    alpha-3 lowercase and `device` DESKTOP|MOBILE|TABLET, as Google reports them."""

    query: str | None
    page: str
    country: str
    device: str
    clicks: int
    impressions: int
    position: float


@dataclass
class _Grant:
    scope: str
    refresh_token: str


def google_error(status: int, message: str, reason: str) -> dict[str, Any]:
    domain = "usageLimits" if reason in ("quotaExceeded", "rateLimitExceeded") else "global"
    return {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"message": message, "domain": domain, "reason": reason}],
            "status": _STATUS_NAMES.get(status, "UNKNOWN"),
        }
    }


def default_inspection(url: str) -> dict[str, Any]:
    """A PASS result, shaped as Google's UrlInspectionResult."""
    return {
        "inspectionResultLink": "https://search.google.com/search-console/inspect?id="
        + quote(url, safe=""),
        "indexStatusResult": {
            "verdict": "PASS",
            "coverageState": "Submitted and indexed",
            "robotsTxtState": "ALLOWED",
            "indexingState": "INDEXING_ALLOWED",
            "lastCrawlTime": "2026-01-02T03:04:05Z",
            "pageFetchState": "SUCCESSFUL",
            "googleCanonical": url,
            "userCanonical": url,
            "sitemap": [],
            "referringUrls": [],
            "crawledAs": "MOBILE",
        },
        "mobileUsabilityResult": {"verdict": "VERDICT_UNSPECIFIED"},
        "richResultsResult": {
            "verdict": "PASS",
            "detectedItems": [
                {"richResultType": "Breadcrumbs", "items": [{"name": "Unnamed item"}]}
            ],
        },
    }


class GoogleStandIn(LoopbackServer):
    def __init__(self, *, port: int = 0, expires_in: int = 3600) -> None:
        super().__init__()
        if port:
            handler = self.httpd.RequestHandlerClass
            self.httpd.server_close()
            self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
            self.url = f"http://127.0.0.1:{port}"
            self.thread = threading.Thread(
                target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
        self.lock = threading.Lock()
        self.client_id, self.client_secret = CLIENT_ID, CLIENT_SECRET
        # Seconds an access token lives (`expires_in`): a test sets it low to force refreshes.
        self.expires_in = expires_in
        self.sites: list[dict[str, str]] = []
        self.inspection_results: dict[str, dict[str, Any]] = {}
        # site_url -> feedpath -> WmxSitemap
        self.sitemaps: dict[str, dict[str, dict[str, Any]]] = {}
        # searchAnalytics requests (first pages) that covered a day: by dataState, and by
        # dimensions (whatever the dataState).
        self.fetched: Counter[tuple[str, str, date, str]] = Counter()
        self.fetched_by: Counter[tuple[str, str, date, tuple[str, ...]]] = Counter()
        self.requests: list[tuple[str, str]] = []
        self.token_requests: list[dict[str, str]] = []
        self._days: dict[tuple[str, str, date], tuple[list[SearchRow], bool]] = {}
        self._failures: list[list[Any]] = []
        self._codes: dict[str, dict[str, str]] = {}
        self._grants: dict[str, _Grant] = {}  # refresh token -> grant
        self._access: dict[str, tuple[_Grant, float]] = {}  # access token -> grant, expiry

    # --- the endpoints a client is configured with ---------------------------------------------

    @property
    def authorize_url(self) -> str:
        return f"{self.url}/o/oauth2/v2/auth"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def revoke_url(self) -> str:
        return f"{self.url}/revoke"

    @property
    def webmasters_base(self) -> str:
        return f"{self.url}/webmasters/v3"

    @property
    def inspection_base(self) -> str:
        return f"{self.url}/v1"

    def settings(self) -> dict[str, Any]:
        """The service's settings that point it here."""
        return {
            "google_client_id": self.client_id,
            "google_client_secret": self.client_secret,
            "google_oauth_authorize_url": self.authorize_url,
            "google_oauth_token_url": self.token_url,
            "google_oauth_revoke_url": self.revoke_url,
            "google_webmasters_api_base": self.webmasters_base,
            "google_url_inspection_api_base": self.inspection_base,
        }

    # --- seeding ---------------------------------------------------------------------------------

    def set_day(
        self, site_url: str, search_type: str, day: date, rows: list[SearchRow], *, final: bool
    ) -> None:
        with self.lock:
            self._days[(site_url, search_type, day)] = (list(rows), final)

    def fail_next(
        self,
        path_contains: str,
        status: int,
        reason: str,
        times: int = 1,
        *,
        dimensions: list[str] | None = None,
    ) -> None:
        """The next `times` requests whose path contains `path_contains` (and, given
        `dimensions`, whose JSON body asks for exactly these) answer `status` with Google's
        error JSON naming `reason` (429s carry Retry-After: 1)."""
        with self.lock:
            self._failures.append([path_contains, status, reason, times, dimensions])

    def revoke_grants(self) -> None:
        """Every refresh token is now invalid_grant, every access token 401."""
        with self.lock:
            self._grants.clear()
            self._access.clear()

    def authorize(self, authorization_url: str) -> str:
        """The code Google's consent page would redirect the browser with (after checking the
        request as Google does); ValueError for a request Google would refuse."""
        query = dict(parse_qsl(urlsplit(authorization_url).query))
        if query.get("client_id") != self.client_id:
            raise ValueError("invalid_client")
        if query.get("response_type") != "code":
            raise ValueError("unsupported_response_type")
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            raise ValueError("invalid_request: PKCE S256 required")
        scope = query.get("scope", "")
        if scope not in (SCOPE, READ_ONLY_SCOPE, ANALYTICS_SCOPE):
            raise ValueError("invalid_scope")
        code = "4/standin-" + secrets.token_urlsafe(24)
        with self.lock:
            self._codes[code] = {
                "challenge": query["code_challenge"],
                "redirect_uri": query.get("redirect_uri", ""),
                "scope": scope,
                "offline": str(query.get("access_type") == "offline"),
            }
        return code

    # --- serving ---------------------------------------------------------------------------------

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("content-length") or 0)
        body = request.rfile.read(length) if length else b""
        parts = urlsplit(request.path)
        path = parts.path
        with self.lock:
            self.requests.append((request.command, path))
        failure = self._failure(path, body)
        if failure is not None:
            status, reason = failure
            headers = {"retry-after": "1"} if status == 429 else {}
            send(request, status, headers, google_error(status, f"Stand-in: {reason}", reason))
            return
        try:
            status, headers, payload = self._route(request, path, parts.query, body)
        except _Refusal as refusal:
            status, headers, payload = refusal.status, {}, refusal.payload
        send(request, status, headers, payload)

    def _failure(self, path: str, body: bytes) -> tuple[int, str] | None:
        with self.lock:
            for failure in self._failures:
                if failure[4] is not None and _dimensions(body) != failure[4]:
                    continue
                if failure[0] in path and failure[3] > 0:
                    failure[3] -= 1
                    return failure[1], failure[2]
        return None

    def _route(
        self, request: BaseHTTPRequestHandler, path: str, query: str, body: bytes
    ) -> tuple[int, dict[str, str], Any]:
        method = request.command
        if path == "/o/oauth2/v2/auth" and method == "GET":
            url = f"{self.authorize_url}?{query}"
            try:
                code = self.authorize(url)
            except ValueError as error:
                return 400, {}, {"error": str(error)}
            given = dict(parse_qsl(query))
            target = given.get("redirect_uri", "")
            location = f"{target}?{urlencode({'code': code, 'state': given.get('state', '')})}"
            return 302, {"location": location}, b""
        if path == "/token" and method == "POST":
            return self._token(request, body)
        if path == "/revoke" and method == "POST":
            return self._revoke(query, body)
        grant = self._bearer(request)
        if path == "/webmasters/v3/sites" and method == "GET":
            return 200, {}, {"siteEntry": self.sites} if self.sites else {}
        if path == "/v1/urlInspection/index:inspect" and method == "POST":
            return self._inspect(json.loads(body or b"{}"))
        prefix = "/webmasters/v3/sites/"
        if path.startswith(prefix):
            site, _, rest = path[len(prefix) :].partition("/")
            site = unquote(site)
            level = self._level(site)
            if rest == "searchAnalytics/query" and method == "POST":
                return self._query(site, json.loads(body or b"{}"))
            if rest == "sitemaps" and method == "GET":
                found = list(self.sitemaps.get(site, {}).values())
                return 200, {}, {"sitemap": found} if found else {}
            if rest.startswith("sitemaps/"):
                return self._sitemap(method, site, unquote(rest[len("sitemaps/") :]), grant, level)
        raise _Refusal(404, google_error(404, "Not found.", "notFound"))

    # --- OAuth -----------------------------------------------------------------------------------

    def _token(
        self, request: BaseHTTPRequestHandler, body: bytes
    ) -> tuple[int, dict[str, str], Any]:
        form = dict(parse_qsl(body.decode()))
        with self.lock:
            self.token_requests.append(form)
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        auth = request.headers.get("authorization", "")
        if auth.startswith("Basic "):
            client_id, _, client_secret = base64.b64decode(auth[6:]).decode().partition(":")
        if client_id != self.client_id or client_secret != self.client_secret:
            return 401, {}, {"error": "invalid_client", "error_description": "Unauthorized"}
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            with self.lock:
                issued = self._codes.pop(form.get("code", ""), None)
            if issued is None:
                return 400, {}, _invalid_grant("Malformed auth code.")
            if form.get("redirect_uri") != issued["redirect_uri"]:
                return 400, {}, {"error": "redirect_uri_mismatch", "error_description": "Bad"}
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if not verifier or challenge != issued["challenge"]:
                return 400, {}, _invalid_grant("Invalid code verifier.")
            refresh = "1//standin-" + secrets.token_urlsafe(32)
            grant = _Grant(scope=issued["scope"], refresh_token=refresh)
            with self.lock:
                self._grants[refresh] = grant
            answer = self._issue(grant)
            if issued["offline"] == "True":
                answer["refresh_token"] = refresh
            return 200, {"cache-control": "no-store"}, answer
        if grant_type == "refresh_token":
            with self.lock:
                found = self._grants.get(form.get("refresh_token", ""))
            if found is None:
                return 400, {}, _invalid_grant("Token has been expired or revoked.")
            return 200, {"cache-control": "no-store"}, self._issue(found)
        return 400, {}, {"error": "unsupported_grant_type", "error_description": "Invalid"}

    def _issue(self, grant: _Grant) -> dict[str, Any]:
        access = "ya29.standin-" + secrets.token_urlsafe(32)
        with self.lock:
            self._access[access] = (grant, time.monotonic() + self.expires_in)
        return {
            "access_token": access,
            "expires_in": self.expires_in,
            "scope": grant.scope,
            "token_type": "Bearer",
        }

    def _revoke(self, query: str, body: bytes) -> tuple[int, dict[str, str], Any]:
        token = dict(parse_qsl(body.decode())).get("token") or dict(parse_qsl(query)).get("token")
        with self.lock:
            grant = self._grants.pop(token or "", None)
            if grant is None and token in self._access:
                grant = self._access[token][0]
                self._grants.pop(grant.refresh_token, None)
            if grant is None:
                return 400, {}, {"error": "invalid_token", "error_description": "Token expired"}
            for access in [a for a, (g, _) in self._access.items() if g is grant]:
                del self._access[access]
        return 200, {}, {}

    def valid_access_token(self, token: str) -> bool:
        """Whether `token` is an access token this stand-in issued that has not expired (the GA4
        Data API stand-in checks its bearer tokens here)."""
        with self.lock:
            found = self._access.get(token)
        return found is not None and found[1] >= time.monotonic()

    def _bearer(self, request: BaseHTTPRequestHandler) -> _Grant:
        auth = request.headers.get("authorization", "")
        with self.lock:
            found = self._access.get(auth.removeprefix("Bearer "))
        if found is None or found[1] < time.monotonic():
            raise _Refusal(
                401,
                google_error(
                    401,
                    "Request had invalid authentication credentials. Expected OAuth 2 access "
                    "token, login cookie or other valid authentication credential.",
                    "authError",
                ),
            )
        return found[0]

    def _level(self, site: str) -> str:
        level = next((s["permissionLevel"] for s in self.sites if s["siteUrl"] == site), None)
        if level is None or level == "siteUnverifiedUser":
            raise _Refusal(
                403,
                google_error(
                    403, f"User does not have sufficient permission for site '{site}'.", "forbidden"
                ),
            )
        return level

    # --- Search Console --------------------------------------------------------------------------

    def _query(self, site: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        try:
            start = date.fromisoformat(body["startDate"])
            end = date.fromisoformat(body["endDate"])
        except (KeyError, ValueError):
            raise _Refusal(400, google_error(400, "Invalid date range.", "invalid")) from None
        dimensions = list(body.get("dimensions") or [])
        search_type = body.get("type") or body.get("searchType") or "web"
        data_state = body.get("dataState") or "final"
        row_limit = int(body.get("rowLimit") or 1000)
        start_row = int(body.get("startRow") or 0)
        if (
            any(d not in DIMENSIONS for d in dimensions)
            or search_type not in SEARCH_TYPES
            or data_state not in ("final", "all")
            or not 1 <= row_limit <= MAX_ROW_LIMIT
            or start_row < 0
            or start > end
        ):
            raise _Refusal(400, google_error(400, "Invalid value in request.", "invalid"))
        groups: dict[tuple[str, ...], list[float]] = {}
        first_incomplete: date | None = None
        day = start
        while day <= end:
            if start_row == 0:
                with self.lock:
                    self.fetched[(site, search_type, day, data_state)] += 1
                    self.fetched_by[(site, search_type, day, tuple(dimensions))] += 1
            seeded = self._days.get((site, search_type, day))
            if seeded is not None:
                rows, final = seeded
                if not final and first_incomplete is None:
                    first_incomplete = day
                if final or data_state == "all":
                    for row in rows:
                        if "query" in dimensions and row.query is None:
                            continue
                        values = {"date": day.isoformat(), **row.__dict__}
                        key = tuple(str(values[d]) for d in dimensions)
                        sums = groups.setdefault(key, [0, 0, 0.0])
                        sums[0] += row.clicks
                        sums[1] += row.impressions
                        sums[2] += row.position * row.impressions
            day += timedelta(days=1)
        # Only what had impressions is a row (a day without them has none), before paging.
        shown = [item for item in groups.items() if item[1][1]]
        ordered = sorted(shown, key=lambda item: (-item[1][0], -item[1][1], item[0]))
        answer: dict[str, Any] = {
            "responseAggregationType": "byPage"
            if "page" in dimensions or body.get("aggregationType") == "byPage"
            else "byProperty"
        }
        rows_out = [
            {
                "keys": list(key),
                "clicks": clicks,
                "impressions": impressions,
                "ctr": clicks / impressions,
                "position": weighted / impressions,
            }
            for key, (clicks, impressions, weighted) in ordered[start_row : start_row + row_limit]
        ]
        if not dimensions and rows_out:
            rows_out = [{k: v for k, v in rows_out[0].items() if k != "keys"}]
        if rows_out:
            answer["rows"] = rows_out
        # Google names the first incomplete day only to dataState all grouped by date.
        if data_state == "all" and "date" in dimensions and first_incomplete is not None:
            answer["metadata"] = {"firstIncompleteDate": first_incomplete.isoformat()}
        return 200, {}, answer

    def _sitemap(
        self, method: str, site: str, feedpath: str, grant: _Grant, level: str
    ) -> tuple[int, dict[str, str], Any]:
        known = self.sitemaps.setdefault(site, {})
        if method == "GET":
            if feedpath not in known:
                raise _Refusal(404, google_error(404, "Sitemap not found.", "notFound"))
            return 200, {}, known[feedpath]
        if grant.scope != SCOPE:
            raise _Refusal(
                403,
                google_error(403, "Request had insufficient authentication scopes.", "forbidden"),
            )
        if level == "siteRestrictedUser":
            raise _Refusal(
                403,
                google_error(403, "User does not have sufficient permission.", "forbidden"),
            )
        if method == "PUT":
            with self.lock:
                known[feedpath] = {
                    "path": feedpath,
                    "lastSubmitted": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
                    "isPending": True,
                    "isSitemapsIndex": False,
                    "type": "sitemap",
                    "warnings": "0",
                    "errors": "0",
                    "contents": [{"type": "web", "submitted": "0", "indexed": "0"}],
                }
            return 204, {}, b""
        if method == "DELETE":
            with self.lock:
                if known.pop(feedpath, None) is None:
                    raise _Refusal(404, google_error(404, "Sitemap not found.", "notFound"))
            return 204, {}, b""
        raise _Refusal(404, google_error(404, "Not found.", "notFound"))

    def _inspect(self, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        site, url = str(body.get("siteUrl", "")), str(body.get("inspectionUrl", ""))
        self._level(site)
        # A domain property holds its host and every subdomain, as Google's does.
        host, domain = urlsplit(url).hostname or "", site.removeprefix("sc-domain:")
        inside = host == domain or host.endswith("." + domain)
        if not (url.startswith(site) or (site.startswith("sc-domain:") and inside)):
            raise _Refusal(
                403,
                google_error(
                    403,
                    "You do not own this site, or the inspected URL is not part of this property.",
                    "forbidden",
                ),
            )
        result = self.inspection_results.get(url) or default_inspection(url)
        return 200, {}, {"inspectionResult": result}


class _Refusal(Exception):
    def __init__(self, status: int, payload: Any) -> None:
        self.status, self.payload = status, payload


def _dimensions(body: bytes) -> list[str] | None:
    """A searchAnalytics request body's dimensions (None when it is no JSON object)."""
    try:
        found = json.loads(body or b"{}")
    except ValueError:
        return None
    return list(found.get("dimensions") or []) if isinstance(found, dict) else None


def _invalid_grant(description: str) -> dict[str, str]:
    return {"error": "invalid_grant", "error_description": description}


def query_of(url: str) -> dict[str, str]:
    """An authorization URL's parameters (each once)."""
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}
