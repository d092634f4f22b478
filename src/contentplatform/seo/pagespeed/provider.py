"""One measurement: Google's PageSpeed Insights API v5 (`GET {base}/pagespeedonline/v5/
runPagespeed?url=&strategy=&category=...[&key=]`, through the guarded client), or the Lighthouse
CLI run here (local.py); and what is kept of the answer.

Of a Lighthouse result (`lighthouseResult`): each category's score x 100, the lab metrics'
`numericValue` (largest-contentful-paint, cumulative-layout-shift, total-blocking-time,
first-contentful-paint, speed-index), the failed audits (scored, score below 0.9) and
`lighthouseVersion`. Of the Chrome UX Report field data: `loadingExperience` (the URL's own,
unless Google marks it `origin_fallback`), else `originLoadingExperience` (the origin's), else
none; each metric's 75th percentile (CUMULATIVE_LAYOUT_SHIFT_SCORE is CLS x 100).

A refusal is a MeasureFailed {code, message, retryable, retry_after}: Lighthouse's own error
code when Google names it ("Lighthouse returned error: FAILED_DOCUMENT_REQUEST. ..."),
`quota_exceeded` (429), `provider_error` (5xx), `unreachable`, `invalid_request` (another 4xx),
`invalid_response`. The key travels as Google documents it (`key=`), and no message here
carries it: messages are Google's `error.message` or ours.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from contentplatform.config import Settings
from contentplatform.kit import outbound

PATH = "/pagespeedonline/v5/runPagespeed"
# Our category names -> Google's `category` values and Lighthouse's category ids.
GOOGLE_CATEGORIES = {
    "performance": "PERFORMANCE",
    "seo": "SEO",
    "accessibility": "ACCESSIBILITY",
    "best-practices": "BEST_PRACTICES",
}
SCORE_KEYS = {
    "performance": "performance",
    "seo": "seo",
    "accessibility": "accessibility",
    "best-practices": "best_practices",
}
# Our lab metric -> Lighthouse's audit id.
LAB_AUDITS = {
    "lcp_ms": "largest-contentful-paint",
    "cls": "cumulative-layout-shift",
    "tbt_ms": "total-blocking-time",
    "fcp_ms": "first-contentful-paint",
    "speed_index_ms": "speed-index",
}
FIELD_METRICS = {
    "lcp_ms": "LARGEST_CONTENTFUL_PAINT_MS",
    "inp_ms": "INTERACTION_TO_NEXT_PAINT",
    "cls": "CUMULATIVE_LAYOUT_SHIFT_SCORE",
}
FAILED_BELOW = 0.9
MAX_FAILED_AUDITS = 50
# A full PSI answer with its screenshots runs to a few megabytes.
MAX_RESPONSE_BYTES = 20 * 1024 * 1024
_LIGHTHOUSE_ERROR = re.compile(r"Lighthouse returned error: ([A-Z][A-Z0-9_]{2,60})")
_OVERALL = frozenset({"FAST", "AVERAGE", "SLOW"})


class MeasureFailed(Exception):
    def __init__(
        self, code: str, message: str, *, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.message = code, message[:500]
        self.retryable, self.retry_after = retryable, retry_after


@dataclass(frozen=True)
class Measurement:
    """One run's figures, as stored (JSON-ready)."""

    scores: dict[str, int | None]
    lab: dict[str, float | None]
    field: dict[str, Any]
    failed_audits: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    lighthouse_version: str | None = None
    fetched_at: str | None = None


# --- reading a result -----------------------------------------------------------------------


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: Any, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def from_lighthouse(result: Any, field_data: dict[str, Any] | None = None) -> Measurement:
    """What is kept of a Lighthouse result (LHR); MeasureFailed when it carries a
    runtimeError (the page could not be measured) or is no result at all."""
    if not isinstance(result, dict) or not isinstance(result.get("audits"), dict):
        raise MeasureFailed("invalid_response", "The answer holds no Lighthouse result.")
    error = result.get("runtimeError")
    if isinstance(error, dict) and error.get("code"):
        raise MeasureFailed(
            str(error["code"])[:60], _text(error.get("message"), 500) or "Lighthouse failed."
        )
    found_categories = result.get("categories")
    categories = found_categories if isinstance(found_categories, dict) else {}
    scores: dict[str, int | None] = {}
    for lighthouse_id, key in SCORE_KEYS.items():
        found = categories.get(lighthouse_id)
        score = _number(found.get("score")) if isinstance(found, dict) else None
        scores[key] = round(score * 100) if score is not None else None
    audits: dict[str, Any] = result["audits"]
    lab: dict[str, float | None] = {}
    for key, audit_id in LAB_AUDITS.items():
        audit = audits.get(audit_id)
        value = _number(audit.get("numericValue")) if isinstance(audit, dict) else None
        lab[key] = None if value is None else round(value, 4) if key == "cls" else round(value)
    return Measurement(
        scores=scores,
        lab=lab,
        field=field_data or none_field(),
        failed_audits=failed_audits(audits),
        lighthouse_version=_text(result.get("lighthouseVersion"), 40),
        fetched_at=_text(result.get("fetchTime"), 40),
    )


def failed_audits(audits: dict[str, Any]) -> list[dict[str, Any]]:
    """Scored audits (binary, numeric or metric-savings) below 0.9, lowest score first."""
    failed = []
    for audit_id, audit in audits.items():
        if not isinstance(audit, dict):
            continue
        score = _number(audit.get("score"))
        if score is None or score >= FAILED_BELOW:
            continue
        if audit.get("scoreDisplayMode") not in ("binary", "numeric", "metricSavings", None):
            continue  # informative, manual, not applicable: no pass or fail
        failed.append(
            {
                "id": str(audit_id)[:100],
                "title": _text(audit.get("title"), 300) or str(audit_id)[:100],
                "score": score,
                "display_value": _text(audit.get("displayValue"), 200),
            }
        )
    failed.sort(key=lambda audit: (audit["score"], audit["id"]))
    return failed[:MAX_FAILED_AUDITS]


def none_field() -> dict[str, Any]:
    return {"scope": "none", "lcp_ms": None, "inp_ms": None, "cls": None, "overall_category": None}


def _experience(found: Any, scope: str) -> dict[str, Any] | None:
    if not isinstance(found, dict) or not isinstance(found.get("metrics"), dict):
        return None
    metrics: dict[str, Any] = found["metrics"]
    kept: dict[str, Any] = {"scope": scope}
    for key, name in FIELD_METRICS.items():
        metric = metrics.get(name)
        value = _number(metric.get("percentile")) if isinstance(metric, dict) else None
        # Google gives CLS x 100 as an integer percentile.
        kept[key] = None if value is None else value / 100 if key == "cls" else round(value)
    overall = found.get("overall_category")
    kept["overall_category"] = overall if overall in _OVERALL else None
    return kept


def field_of(body: dict[str, Any]) -> dict[str, Any]:
    """The URL's field data, else its origin's, else none."""
    url_level = body.get("loadingExperience")
    if isinstance(url_level, dict) and not url_level.get("origin_fallback"):
        found = _experience(url_level, "url")
        if found is not None:
            return found
    return _experience(body.get("originLoadingExperience"), "origin") or none_field()


def parse(body: Any) -> Measurement:
    """A runPagespeed answer (200) as a Measurement."""
    if not isinstance(body, dict):
        raise MeasureFailed("invalid_response", "PageSpeed Insights answered no JSON object.")
    return from_lighthouse(body.get("lighthouseResult"), field_of(body))


def refusal(status: int, body: Any, retry_after: float | None) -> MeasureFailed:
    """Google's error answer as a MeasureFailed."""
    error = body.get("error") if isinstance(body, dict) else None
    message = _text(error.get("message"), 500) if isinstance(error, dict) else None
    message = message or f"PageSpeed Insights answered HTTP {status}."
    named = _LIGHTHOUSE_ERROR.search(message)
    if status == 429:
        return MeasureFailed("quota_exceeded", message, retryable=True, retry_after=retry_after)
    if status >= 500:
        code = named.group(1) if named else "provider_error"
        return MeasureFailed(code, message, retryable=True, retry_after=retry_after)
    return MeasureFailed(named.group(1) if named else "invalid_request", message)


# --- Google ---------------------------------------------------------------------------------


def request_url(
    settings: Settings, url: str, strategy: str, categories: list[str], key: str | None
) -> str:
    query = [("url", url), ("strategy", strategy)]
    query += [("category", GOOGLE_CATEGORIES[name]) for name in categories]
    if key:
        query.append(("key", key))
    return f"{settings.pagespeed_api_base.rstrip('/')}{PATH}?{urlencode(query)}"


async def google(
    settings: Settings, url: str, strategy: str, categories: list[str], key: str | None
) -> Measurement:
    """One runPagespeed call: its Measurement, or MeasureFailed."""
    policy = outbound.policy_of(
        settings,
        timeout=settings.pagespeed_timeout_seconds,
        max_response_bytes=MAX_RESPONSE_BYTES,
    )
    try:
        async with outbound.GuardedClient(policy) as client:
            response = await client.request(
                "GET",
                request_url(settings, url, strategy, categories, key),
                headers={"accept": "application/json"},
            )
    except outbound.OutboundError as error:
        # A refusal may quote the URL asked for, which carries the key.
        message = str(error).replace(key, "••••") if key else str(error)
        raise MeasureFailed("unreachable", message, retryable=True) from None
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status != 200:
        raise refusal(
            response.status,
            body,
            outbound.retry_after_seconds(response.headers.get("retry-after")),
        )
    return parse(body)
