"""A stand-in of Google's PageSpeed Insights API v5 on loopback:
`GET /pagespeedonline/v5/runPagespeed?url=&strategy=&category=...[&key=]`.

It answers with a real PageSpeed Insights envelope around a real Lighthouse 12.8.2 result
(fixtures/, made as fixtures/README.md says), the asked URL written in as Google does. Each
call for one URL and strategy moves the figures deterministically (VARIATION), so a median and
a spread are there to see. A test can tell it, per URL: which field data to give (`field`:
url, origin, origin_fallback or none), to fail (`failures`: a Lighthouse error code, 429 or
500, for the next `times` calls or for good), to make the page slower (`slow`: lab and field
times multiplied), and which API keys exist (`keys`).
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.servers import LoopbackServer, send

FIXTURES = Path(__file__).parent / "fixtures"
PATH = "/pagespeedonline/v5/runPagespeed"
# Call n of a URL and strategy gets variation VARIATION[n % 5]: its lab times are multiplied by
# 1 + v/10, its CLS raised by v/100 and its performance score lowered by 2v points.
VARIATION = (2, 0, 4, 1, 3)
TIMED = ("largest-contentful-paint", "first-contentful-paint", "speed-index", "total-blocking-time")
LIGHTHOUSE_MESSAGES = {
    "FAILED_DOCUMENT_REQUEST": "Lighthouse was unable to reliably load the page you requested. "
    "Make sure you are testing the correct URL and that the server is properly responding to "
    "all requests. (Details: net::ERR_CONNECTION_FAILED)",
    "ERRORED_DOCUMENT_REQUEST": "Lighthouse was unable to reliably load the page you requested. "
    "Make sure you are testing the correct URL and that the server is properly responding to "
    "all requests. (Status code: 404)",
}


def _fixture(strategy: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        (FIXTURES / f"psi-lighthouse-12.8.2-{strategy}.json").read_text()
    )
    return found


class PageSpeedStandIn(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.envelopes = {strategy: _fixture(strategy) for strategy in ("mobile", "desktop")}
        self.calls: Counter[tuple[str, str]] = Counter()
        # Each request's query: {url: [...], strategy: [...], category: [...], key: [...]}.
        self.requests: list[dict[str, list[str]]] = []
        self.keys: set[str] = set()
        self.field: dict[str, str] = {}
        self.slow: dict[str, float] = {}
        # url -> [what, calls left (None: every call)]; what: a Lighthouse code, 429 or 500.
        self.failures: dict[str, list[Any]] = {}
        # Seconds each answer takes (Google's take 10 to 60).
        self.delay = 0.0

    def settings(self) -> dict[str, Any]:
        """The service's settings that point it here (and retry at once)."""
        return {
            "pagespeed_api_base": self.url,
            "pagespeed_retries": 1,
            "pagespeed_backoff_seconds": 0.01,
        }

    def fail(self, url: str, what: str | int, times: int | None = None) -> None:
        with self.lock:
            self.failures[url] = [what, times]

    def sent_for(self, url: str) -> list[dict[str, list[str]]]:
        with self.lock:
            return [query for query in self.requests if query.get("url") == [url]]

    # --- serving ------------------------------------------------------------------------------

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        with self.lock:
            self.requests.append(query)
        if request.command != "GET" or parts.path != PATH:
            send(request, 404, {}, {"error": {"code": 404, "message": "Not Found"}})
            return
        status, payload = self._answer(query)
        if self.delay:
            time.sleep(self.delay)
        headers = {"Retry-After": "0"} if status == 429 else {}
        send(request, status, headers, payload)

    def _answer(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        key = (query.get("key") or [None])[0]
        if key is not None and key not in self.keys:
            return 400, _error(
                400,
                "API key not valid. Please pass a valid API key.",
                "INVALID_ARGUMENT",
                reason="badRequest",
                details=[{"reason": "API_KEY_INVALID", "domain": "googleapis.com"}],
            )
        url = (query.get("url") or [""])[0]
        if not url:
            return 400, _error(
                400, "Required parameter: url", "INVALID_ARGUMENT", reason="required"
            )
        strategy = (query.get("strategy") or ["mobile"])[0].lower()
        with self.lock:
            failure = self.failures.get(url)
            if failure is not None and failure[1] is not None:
                failure[1] -= 1
                if failure[1] < 0:
                    failure = None
            if failure is None:
                calls = self.calls[(url, strategy)]
                self.calls[(url, strategy)] += 1
        if failure is not None:
            return _failure(failure[0])
        return 200, self._envelope(url, strategy, calls, query.get("category") or [])

    def _envelope(self, url: str, strategy: str, calls: int, categories: list[str]) -> Any:
        body = copy.deepcopy(self.envelopes[strategy])
        variation = VARIATION[calls % len(VARIATION)]
        slow = self.slow.get(url, 1.0)
        result = body["lighthouseResult"]
        for field in ("requestedUrl", "finalUrl", "finalDisplayedUrl", "mainDocumentUrl"):
            result[field] = url
        for audit_id in TIMED:
            audit = result["audits"][audit_id]
            audit["numericValue"] = audit["numericValue"] * (1 + variation / 10) * slow
        result["audits"]["cumulative-layout-shift"]["numericValue"] += variation / 100
        performance = result["categories"]["performance"]
        performance["score"] = round(max(0.0, performance["score"] - variation / 50), 2)
        wanted = {name.lower().replace("_", "-") for name in categories}
        if wanted:
            result["categories"] = {
                name: value for name, value in result["categories"].items() if name in wanted
            }
        body["id"] = url
        self._field(body, url, slow)
        return body

    def _field(self, body: dict[str, Any], url: str, slow: float) -> None:
        mode = self.field.get(url, "url")
        for part in ("loadingExperience", "originLoadingExperience"):
            for name, metric in body[part]["metrics"].items():
                if name != "CUMULATIVE_LAYOUT_SHIFT_SCORE":
                    metric["percentile"] = round(metric["percentile"] * slow)
        body["loadingExperience"]["initial_url"] = url
        if mode == "origin_fallback":
            body["loadingExperience"] = {
                **copy.deepcopy(body["originLoadingExperience"]),
                "origin_fallback": True,
                "initial_url": url,
            }
        elif mode == "origin":
            body["loadingExperience"] = {"initial_url": url}
        elif mode == "none":
            body["loadingExperience"] = {"initial_url": url}
            del body["originLoadingExperience"]


def _error(
    code: int,
    message: str,
    status: str,
    *,
    reason: str,
    domain: str = "global",
    details: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    error: dict[str, Any] = {
        "code": code,
        "message": message,
        "errors": [{"message": message, "domain": domain, "reason": reason}],
        "status": status,
    }
    if details:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", **d} for d in details
        ]
    return {"error": error}


def _failure(what: str | int) -> tuple[int, Any]:
    if what == 429:
        message = (
            "Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service "
            "'pagespeedonline.googleapis.com'."
        )
        return 429, _error(429, message, "RESOURCE_EXHAUSTED", reason="rateLimitExceeded")
    if what == 500:
        return 500, _error(500, "Internal error encountered.", "INTERNAL", reason="backendError")
    code = str(what)
    message = f"Lighthouse returned error: {code}. {LIGHTHOUSE_MESSAGES.get(code, '')}".strip()
    return 400, _error(
        400, message, "INVALID_ARGUMENT", reason="lighthouseUserError", domain="lighthouse"
    )
