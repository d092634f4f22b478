"""The providers content analytics reads traffic from, each spoken to in its own protocol through
the guarded client (kit/outbound.py), each answering `fetch(first, last)` with per-URL rows:

- plausible: Stats API v2, `POST {base}/api/v2/query` with the site's API key as a bearer
  token; `time:day` and `event:page` (and `visit:source | visit:country | visit:device`)
  dimensions, `visitors` and `pageviews` (visits are session metrics Plausible will not split by
  page). Its rate limit answers 429.
- ga4: the GA4 Data API's `properties/{id}:runReport` with an OAuth access token; `date`,
  `hostName`, `pagePath` (and `sessionSource | countryId | deviceCategory`), `screenPageViews`,
  `totalUsers`, `sessions`; `returnPropertyQuota` asked, and the sync stops before the hourly
  or daily tokens run out. Quota exhausted answers 429 RESOURCE_EXHAUSTED.
- umami: a self-hosted Umami's `GET {base}/api/websites/{id}/metrics?type=url` (views per path)
  for each day, after `POST /api/auth/login` (username and password) or with an
  `x-umami-api-key` (Umami Cloud's).

A refusal is `Refused` (the credentials: the source turns `error`), a rate limit or an outage
`Throttled` (asked again after a back-off; the days still refused end the sync `partial`).
Nothing here logs or returns a credential.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import quote

from contentplatform.config import Settings
from contentplatform.kit import outbound

PAGE_LIMIT = 10_000
GA4_PAGE_LIMIT = 100_000
# GA4 tokens kept in hand: a sync stops asking once fewer remain (the next day's sync resumes).
GA4_TOKENS_KEPT = 50
# Days one request covers.
CHUNK_DAYS = {"plausible": 7, "ga4": 7, "umami": 1}
METRICS = {
    "plausible": ["views", "visitors"],
    "ga4": ["views", "visitors", "sessions"],
    "umami": ["views"],
    "search_console": ["clicks", "impressions", "ctr", "avg_position"],
    "webhook": ["views", "visitors"],
}
# How many days after a day the provider's figures for it are complete.
LAG_DAYS = {"plausible": 0, "ga4": 1, "umami": 0, "search_console": 3, "webhook": 0}
# The dimensions a provider gives per page ('' is the page's totals).
DIMENSIONS = {
    "plausible": ("", "referrer", "country", "device"),
    "ga4": ("", "referrer", "country", "device"),
    "umami": ("",),
}


class Refused(Exception):
    """The provider refused the credentials or the property: its words, never a credential."""


class Throttled(Exception):
    """A rate limit or an outage: worth asking again after `retry_after` seconds (or a back-off)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class QuotaSpent(Throttled):
    """GA4's property quota is nearly spent: asking again within the hour is pointless, so the
    sync's remaining days are missing (the next daily sync asks them again)."""


@dataclass
class Row:
    day: date
    url: str
    dimension: str = ""
    value: str = ""
    views: int | None = None
    visitors: int | None = None
    sessions: int | None = None
    clicks: int | None = None
    impressions: int | None = None
    position_sum: float | None = None


@dataclass
class Fetched:
    rows: list[Row] = field(default_factory=list)
    # GA4's tokens left (the least of the hourly and daily ones), when it said.
    tokens_left: int | None = None


def _dimension_value(dimension: str, raw: Any) -> str:
    """A dimension's value as stored: devices lowercase (Plausible's `Desktop`, GA4's
    `desktop`), countries' ISO codes uppercase, referrers as the provider names them."""
    value = str(raw or "").strip()[:255]
    if dimension == "device":
        return value.lower()
    if dimension == "country":
        return value.upper()
    if value.lower() in ("", "direct / none", "(direct)", "(none)", "direct"):
        return "(direct)"
    return value


def _message(response: outbound.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status}"
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
    return f"HTTP {response.status}"


async def _send(settings: Settings, method: str, url: str, **kwargs: Any) -> outbound.Response:
    try:
        async with outbound.GuardedClient(outbound.policy_of(settings)) as client:
            response = await client.request(method, url, **kwargs)
    except outbound.Refused as error:
        raise Refused(str(error)) from None
    except outbound.OutboundError as error:
        raise Throttled(str(error)) from None
    if response.status == 429 or response.status >= 500:
        raise Throttled(
            f"HTTP {response.status}: {_message(response)}",
            outbound.retry_after_seconds(response.headers.get("retry-after")),
        )
    if response.status >= 400:
        raise Refused(f"HTTP {response.status}: {_message(response)}")
    return response


def _json(response: outbound.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        raise Throttled("The provider answered with something other than JSON.") from None
    if not isinstance(body, dict):
        raise Throttled("The provider answered with something other than an object.")
    return body


def _int(value: Any) -> int:
    try:
        return max(0, int(float(value)))
    except (TypeError, ValueError):
        return 0


# --- Plausible ---------------------------------------------------------------------------------

_PLAUSIBLE_DIMENSION = {
    "referrer": "visit:source",
    "country": "visit:country",
    "device": "visit:device",
}


async def plausible(
    settings: Settings,
    site_id: str,
    api_key: str,
    first: date,
    last: date,
    *,
    base: str | None = None,
) -> Fetched:
    """The site's pages per day (and per source, country and device) over [first, last]."""
    root = (base or settings.plausible_api_base).rstrip("/")
    rows: list[Row] = []
    for dimension in DIMENSIONS["plausible"]:
        dimensions = ["time:day", "event:page"]
        if dimension:
            dimensions.append(_PLAUSIBLE_DIMENSION[dimension])
        offset = 0
        while True:
            body = {
                "site_id": site_id,
                "metrics": ["visitors", "pageviews"],
                "date_range": [first.isoformat(), last.isoformat()],
                "dimensions": dimensions,
                "pagination": {"limit": PAGE_LIMIT, "offset": offset},
            }
            answer = _json(
                await _send(
                    settings,
                    "POST",
                    f"{root}/api/v2/query",
                    headers={
                        "authorization": f"Bearer {api_key}",
                        "content-type": "application/json",
                        "accept": "application/json",
                    },
                    content=json.dumps(body).encode(),
                )
            )
            results = answer.get("results") or []
            for result in results:
                if not isinstance(result, dict):
                    continue
                dims, metrics = result.get("dimensions") or [], result.get("metrics") or []
                if len(dims) < len(dimensions) or len(metrics) < 2:
                    continue
                try:
                    day = date.fromisoformat(str(dims[0])[:10])
                except ValueError:
                    continue
                rows.append(
                    Row(
                        day=day,
                        url=f"https://{site_id}{dims[1]}",
                        dimension=dimension,
                        value=_dimension_value(dimension, dims[2]) if dimension else "",
                        visitors=_int(metrics[0]),
                        views=_int(metrics[1]),
                    )
                )
            if len(results) < PAGE_LIMIT:
                break
            offset += PAGE_LIMIT
    return Fetched(rows)


async def plausible_check(settings: Settings, site_id: str, api_key: str) -> None:
    """One cheap aggregate query (today's visitors): Refused when Plausible refuses the key or
    the site."""
    today = datetime.now(UTC).date()
    await _send(
        settings,
        "POST",
        f"{settings.plausible_api_base.rstrip('/')}/api/v2/query",
        headers={"authorization": f"Bearer {api_key}", "content-type": "application/json"},
        content=json.dumps(
            {"site_id": site_id, "metrics": ["visitors"], "date_range": [today.isoformat()] * 2}
        ).encode(),
    )


# --- GA4 ----------------------------------------------------------------------------------------

_GA4_DIMENSION = {"referrer": "sessionSource", "country": "countryId", "device": "deviceCategory"}


def _tokens_left(answer: dict[str, Any]) -> int | None:
    quota = answer.get("propertyQuota")
    if not isinstance(quota, dict):
        return None
    left = [
        _int(quota[name].get("remaining"))
        for name in ("tokensPerDay", "tokensPerHour", "tokensPerProjectPerHour")
        if isinstance(quota.get(name), dict) and "remaining" in quota[name]
    ]
    return min(left) if left else None


async def ga4(
    settings: Settings, property_id: str, access_token: str, first: date, last: date
) -> Fetched:
    """The property's pages per day (and per source, country and device) over [first, last]."""
    base = settings.google_analytics_data_api_base.rstrip("/")
    url = f"{base}/properties/{quote(property_id, safe='')}:runReport"
    fetched = Fetched()
    for dimension in DIMENSIONS["ga4"]:
        names = ["date", "hostName", "pagePath"] + (
            [_GA4_DIMENSION[dimension]] if dimension else []
        )
        offset = 0
        while True:
            if fetched.tokens_left is not None and fetched.tokens_left < GA4_TOKENS_KEPT:
                raise QuotaSpent("GA4's property quota is nearly spent.")
            body = {
                "dateRanges": [{"startDate": first.isoformat(), "endDate": last.isoformat()}],
                "dimensions": [{"name": name} for name in names],
                "metrics": [
                    {"name": "screenPageViews"},
                    {"name": "totalUsers"},
                    {"name": "sessions"},
                ],
                "limit": GA4_PAGE_LIMIT,
                "offset": offset,
                "keepEmptyRows": False,
                "returnPropertyQuota": True,
            }
            answer = _json(
                await _send(
                    settings,
                    "POST",
                    url,
                    headers={
                        "authorization": f"Bearer {access_token}",
                        "content-type": "application/json",
                        "accept": "application/json",
                    },
                    content=json.dumps(body).encode(),
                )
            )
            left = _tokens_left(answer)
            if left is not None:
                fetched.tokens_left = left
            rows = answer.get("rows") or []
            for row in rows:
                dims = [str(v.get("value", "")) for v in row.get("dimensionValues") or []]
                values = [v.get("value") for v in row.get("metricValues") or []]
                if len(dims) < len(names) or len(values) < 3:
                    continue
                try:
                    day = datetime.strptime(dims[0], "%Y%m%d").date()
                except ValueError:
                    continue
                fetched.rows.append(
                    Row(
                        day=day,
                        url=f"https://{dims[1]}{dims[2]}",
                        dimension=dimension,
                        value=_dimension_value(dimension, dims[3]) if dimension else "",
                        views=_int(values[0]),
                        visitors=_int(values[1]),
                        sessions=_int(values[2]),
                    )
                )
            offset += len(rows)
            if not rows or offset >= _int(answer.get("rowCount")):
                break
    return fetched


# --- Umami --------------------------------------------------------------------------------------


async def umami_headers(
    settings: Settings, base: str, credentials: dict[str, str]
) -> dict[str, str]:
    """The headers of an authenticated Umami call: its API key, or a login's bearer token."""
    if credentials.get("apiKey"):
        return {"x-umami-api-key": credentials["apiKey"], "accept": "application/json"}
    answer = _json(
        await _send(
            settings,
            "POST",
            f"{base.rstrip('/')}/api/auth/login",
            headers={"content-type": "application/json", "accept": "application/json"},
            content=json.dumps(
                {
                    "username": credentials.get("username", ""),
                    "password": credentials.get("password", ""),
                }
            ).encode(),
        )
    )
    token = answer.get("token")
    if not isinstance(token, str) or not token:
        raise Refused("Umami's login answered without a token.")
    return {"authorization": f"Bearer {token}", "accept": "application/json"}


def _millis(day: date, zone: Any) -> int:
    return int(datetime.combine(day, time(0), tzinfo=zone).timestamp() * 1000)


async def umami(
    settings: Settings,
    base: str,
    website_id: str,
    site_url: str,
    credentials: dict[str, str],
    first: date,
    last: date,
    zone: Any,
) -> Fetched:
    """Views per path for each day of [first, last] (days of the organization's zone)."""
    headers = await umami_headers(settings, base, credentials)
    site = site_url.rstrip("/")
    fetched = Fetched()
    day = first
    while day <= last:
        response = await _send(
            settings,
            "GET",
            f"{base.rstrip('/')}/api/websites/{quote(website_id, safe='')}/metrics",
            params={
                "type": "url",
                "startAt": str(_millis(day, zone)),
                "endAt": str(_millis(day + timedelta(days=1), zone) - 1),
                "timezone": str(zone),
            },
            headers=headers,
        )
        try:
            answer = response.json()
        except ValueError:
            raise Throttled("Umami answered with something other than JSON.") from None
        for item in answer if isinstance(answer, list) else []:
            if isinstance(item, dict) and isinstance(item.get("x"), str):
                fetched.rows.append(
                    Row(day=day, url=f"{site}{item['x']}", views=_int(item.get("y")))
                )
        day += timedelta(days=1)
    return fetched
