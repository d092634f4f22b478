"""One loopback stand-in for the three traffic providers content analytics syncs from, each
speaking its own protocol over the same visits (`Visit`: a day, a page, a referring source, a
country, a device, and its visitors, pageviews and sessions):

- Plausible Stats API v2: `POST /api/v2/query` with `Authorization: Bearer <key>`, body
  {site_id, metrics, date_range, dimensions, pagination}; answers {results: [{metrics,
  dimensions}], meta, query}; an unknown key 401, an unknown site 400 {error}; `throttle`
  makes it answer 429 (Retry-After: 0) for the requests whose date_range covers chosen days.
- GA4 Data API: `POST /v1beta/properties/{id}:runReport` with an access token the Google
  stand-in issued (tests/support/google); body {dateRanges, dimensions, metrics, limit, offset,
  returnPropertyQuota}; answers {dimensionHeaders, metricHeaders, rows: [{dimensionValues,
  metricValues}], rowCount, propertyQuota}.
- Umami: `POST /api/auth/login` {username, password} -> {token}; `GET
  /api/websites/{id}/metrics?type=url&startAt&endAt` (ms) with `Authorization: Bearer` -> [{x:
  path, y: pageviews}].

Plausible's and GA4's dates are the site's days; Umami's instants are read in UTC (the tests'
organizations are in UTC)."""

from __future__ import annotations

import json
import secrets
import threading
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from tests.support.google import GoogleStandIn
from tests.support.servers import LoopbackServer, send

PLAUSIBLE_KEY = "plausible-key-0123456789abcdef"
UMAMI_USER, UMAMI_PASSWORD = "umami-admin", "umami-password-0123"


@dataclass(frozen=True)
class Visit:
    day: date
    host: str
    path: str
    source: str
    country: str  # ISO 3166-1 alpha-2
    device: str  # desktop | mobile | tablet
    visitors: int
    views: int
    sessions: int


class ContentStandIn(LoopbackServer):
    def __init__(self, google: GoogleStandIn) -> None:
        super().__init__()
        self.google = google
        self.lock = threading.Lock()
        # Plausible site_id / GA4 property id / Umami website id -> its visits.
        self.sites: dict[str, list[Visit]] = defaultdict(list)
        self.throttled: dict[str, set[date]] = defaultdict(set)
        self.throttle_once: dict[str, int] = defaultdict(int)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.umami_tokens: set[str] = set()
        self.tokens_left = 20000
        self.revoked: set[str] = set()

    def settings(self) -> dict[str, Any]:
        return {
            "plausible_api_base": self.url,
            "google_analytics_data_api_base": f"{self.url}/v1beta",
        }

    def start(self) -> None:
        if not self.thread.is_alive():
            self.thread.start()

    def visits(self, site: str, visits: list[Visit]) -> None:
        with self.lock:
            self.sites[site] = list(visits)

    def throttle(self, site: str, *days: date) -> None:
        """Requests for `site` whose dates cover any of `days` answer 429, always."""
        with self.lock:
            self.throttled[site].update(days)

    def revoke(self, site: str) -> None:
        """The site's key no longer works: 401, as Plausible answers a revoked key."""
        with self.lock:
            self.revoked.add(site)

    def throttle_next(self, site: str, times: int) -> None:
        """The next `times` requests for `site` answer 429 (then it answers again)."""
        with self.lock:
            self.throttle_once[site] += times

    def asked(self, site: str) -> list[dict[str, Any]]:
        with self.lock:
            return [body for name, body in self.requests if name == site]

    # --- serving ---------------------------------------------------------------------------------

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("content-length") or 0)
        raw = request.rfile.read(length) if length else b""
        parts = urlsplit(request.path)
        path, query = parts.path, dict(parse_qsl(parts.query))
        auth = request.headers.get("authorization", "")
        if path == "/api/v2/query" and request.command == "POST":
            status, payload = self._plausible(auth, json.loads(raw or b"{}"))
        elif path.startswith("/v1beta/properties/") and path.endswith(":runReport"):
            prop = unquote(path[len("/v1beta/properties/") : -len(":runReport")])
            status, payload = self._ga4(auth, prop, json.loads(raw or b"{}"))
        elif path == "/api/auth/login" and request.command == "POST":
            status, payload = self._umami_login(json.loads(raw or b"{}"))
        elif path.startswith("/api/websites/") and path.endswith("/metrics"):
            website = unquote(path[len("/api/websites/") : -len("/metrics")])
            status, payload = self._umami_metrics(auth, website, query)
        else:
            status, payload = 404, {"error": "Not found"}
        headers = {"retry-after": "0"} if status == 429 else {}
        send(request, status, headers, payload)

    def _refused(self, site: str, first: date, last: date) -> bool:
        with self.lock:
            if self.throttle_once[site] > 0:
                self.throttle_once[site] -= 1
                return True
            return any(first <= day <= last for day in self.throttled[site])

    def _between(self, site: str, first: date, last: date) -> list[Visit]:
        with self.lock:
            return [v for v in self.sites.get(site, []) if first <= v.day <= last]

    # --- Plausible -------------------------------------------------------------------------------

    def _plausible(self, auth: str, body: dict[str, Any]) -> tuple[int, Any]:
        if auth != f"Bearer {PLAUSIBLE_KEY}":
            return 401, {
                "error": "Invalid API key or site ID. Please make sure you're using a valid "
                "API key with access to the site you've requested."
            }
        site = str(body.get("site_id", ""))
        with self.lock:
            self.requests.append((site, body))
            known = site in self.sites
            if site in self.revoked:
                return 401, {"error": "Invalid API key or site ID."}
        if not known:
            return 400, {"error": f"Site '{site}' not found"}
        first, last = (date.fromisoformat(d) for d in body["date_range"])
        if self._refused(site, first, last):
            return 429, {"error": "Too many API requests: the limit is 600 per hour."}
        dims = body.get("dimensions") or []
        grouped: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0])
        for visit in self._between(site, first, last):
            key = tuple(_plausible_value(visit, name) for name in dims)
            grouped[key][0] += visit.visitors
            grouped[key][1] += visit.views
        names = body.get("metrics") or []
        results = [
            {
                "dimensions": list(key),
                "metrics": [
                    dict(zip(("visitors", "pageviews"), sums, strict=True))[m] for m in names
                ],
            }
            for key, sums in sorted(grouped.items())
        ]
        page = body.get("pagination") or {}
        offset, limit = int(page.get("offset", 0)), int(page.get("limit", 10000))
        return 200, {"results": results[offset : offset + limit], "meta": {}, "query": body}

    # --- GA4 -------------------------------------------------------------------------------------

    def _ga4(self, auth: str, prop: str, body: dict[str, Any]) -> tuple[int, Any]:
        if not self.google.valid_access_token(auth.removeprefix("Bearer ")):
            return 401, _google_error(
                401, "Request had invalid authentication credentials.", "UNAUTHENTICATED"
            )
        with self.lock:
            self.requests.append((prop, body))
            known = prop in self.sites
        if not known:
            return 403, _google_error(
                403,
                "User does not have sufficient permissions for this property.",
                "PERMISSION_DENIED",
            )
        (span,) = body["dateRanges"]
        first, last = date.fromisoformat(span["startDate"]), date.fromisoformat(span["endDate"])
        if self._refused(prop, first, last):
            return 429, _google_error(
                429,
                "Exhausted property tokens per hour for a project per property.",
                "RESOURCE_EXHAUSTED",
            )
        dims = [d["name"] for d in body.get("dimensions") or []]
        metrics = [m["name"] for m in body.get("metrics") or []]
        grouped: dict[tuple[str, ...], list[int]] = defaultdict(lambda: [0, 0, 0])
        for visit in self._between(prop, first, last):
            key = tuple(_ga4_value(visit, name) for name in dims)
            sums = grouped[key]
            sums[0] += visit.views
            sums[1] += visit.visitors
            sums[2] += visit.sessions
        index = {"screenPageViews": 0, "totalUsers": 1, "sessions": 2}
        rows = [
            {
                "dimensionValues": [{"value": value} for value in key],
                "metricValues": [{"value": str(sums[index[m]])} for m in metrics],
            }
            for key, sums in sorted(grouped.items())
        ]
        offset, limit = int(body.get("offset", 0)), int(body.get("limit", 10000))
        answer: dict[str, Any] = {
            "dimensionHeaders": [{"name": name} for name in dims],
            "metricHeaders": [{"name": name, "type": "TYPE_INTEGER"} for name in metrics],
            "rows": rows[offset : offset + limit],
            "rowCount": len(rows),
            "kind": "analyticsData#runReport",
        }
        if body.get("returnPropertyQuota"):
            with self.lock:
                self.tokens_left -= 10
                left = self.tokens_left
            answer["propertyQuota"] = {
                "tokensPerDay": {"consumed": 10, "remaining": left * 10},
                "tokensPerHour": {"consumed": 10, "remaining": left},
                "concurrentRequests": {"consumed": 0, "remaining": 10},
            }
        return 200, answer

    # --- Umami -----------------------------------------------------------------------------------

    def _umami_login(self, body: dict[str, Any]) -> tuple[int, Any]:
        if (body.get("username"), body.get("password")) != (UMAMI_USER, UMAMI_PASSWORD):
            return 401, {
                "error": {
                    "message": "Incorrect username and/or password.",
                    "code": "incorrect-username-password",
                }
            }
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.umami_tokens.add(token)
        return 200, {"token": token, "user": {"id": "u1", "username": UMAMI_USER, "role": "admin"}}

    def _umami_metrics(self, auth: str, website: str, query: dict[str, str]) -> tuple[int, Any]:
        with self.lock:
            ok = auth.removeprefix("Bearer ") in self.umami_tokens
            self.requests.append((website, dict(query)))
        if not ok:
            return 401, {"error": {"message": "Unauthorized", "code": "unauthorized"}}
        start = datetime.fromtimestamp(int(query["startAt"]) / 1000, UTC)
        end = datetime.fromtimestamp(int(query["endAt"]) / 1000, UTC)
        first, last = start.date(), end.date()
        if self._refused(website, first, last):
            return 429, {"error": {"message": "Too many requests", "code": "too-many-requests"}}
        if query.get("type") != "url":
            return 400, {"error": {"message": "Invalid type"}}
        views: dict[str, int] = defaultdict(int)
        for visit in self._between(website, first, last):
            views[visit.path] += visit.views
        return 200, [
            {"x": path, "y": count} for path, count in sorted(views.items(), key=lambda kv: -kv[1])
        ]


def _plausible_value(visit: Visit, name: str) -> Any:
    return {
        "time:day": visit.day.isoformat(),
        "event:page": visit.path,
        "visit:source": visit.source or "Direct / None",
        "visit:country": visit.country,
        "visit:device": visit.device.title(),
    }[name]


def _ga4_value(visit: Visit, name: str) -> str:
    return {
        "date": visit.day.strftime("%Y%m%d"),
        "hostName": visit.host,
        "pagePath": visit.path,
        "sessionSource": visit.source or "(direct)",
        "countryId": visit.country,
        "deviceCategory": visit.device,
    }[name]


def _google_error(code: int, message: str, status: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def days(first: date, count: int) -> list[date]:
    return [first + timedelta(days=offset) for offset in range(count)]
