"""The `offline` provider's Search Console, local environment only: made-up data, labelled as
such, for demos and tests without a Google account.

`OfflineSearchConsole` answers every call of google.SearchConsoleClient with Google's shapes
(sites.list, searchAnalytics.query with its request body and answer, sitemaps, URL inspection)
and sends nothing anywhere. Its days are deterministic: the same property and day always give
the same rows (random.Random seeded with `<property>:<day>:<type>`, which Python hashes with
SHA-512, so the same in every process), whatever process or run asks. A plausible site: 20 pages
under the profile's site_url (else OFFLINE_SITE), 60 queries (the site's brand among them) with
an anonymized share counted in every total but never returned as a query row, as Google does,
2 devices, 3 countries, fewer searches at the weekend. Days from FRESH_DAYS before today (UTC)
on are fresh (`metadata.firstIncompleteDate`, with dataState all and the date dimension, as
Google gives it); after today there is nothing.

Its property is a row of its own, marked by its permission level OFFLINE_PERMISSION, so made-up
days are never stored under a property Google's data lives in (see `attach`).
"""

from __future__ import annotations

import asyncio
import functools
import random
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

from sqlalchemy import ColumnElement, and_, case, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.kit.db import utcnow
from contentplatform.seo.connections import providers
from contentplatform.seo.connections import repository as repo
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.connections.google import GoogleApiError, SearchConsoleClient
from contentplatform.seo.models import SeoConnection, SeoProperty

GSC = "google_search_console"
OFFLINE = "offline"
# The statuses in which a Google connection is present: it, not the offline one, is used.
PRESENT = ("connected", "error", "needs_reauth")
# The connection's account_label and config.label: nobody must take these figures for Google's.
LABEL = providers.OFFLINE_LABEL
OFFLINE_SITE = "https://offline.example/"
# The permission level of the offline provider's property: what tells its rows from Google's.
OFFLINE_PERMISSION = "offline"
# firstIncompleteDate is today minus this: as Google's, the last two days are not final.
FRESH_DAYS = 2
DIMENSIONS = ("date", "query", "page", "country", "device")
SEARCH_TYPES = ("web", "image", "video", "news", "discover", "googleNews")
# Each search type's share of web's searches.
_TYPE_SCALE = {
    "web": 1.0,
    "image": 0.2,
    "video": 0.05,
    "news": 0.05,
    "discover": 0.1,
    "googleNews": 0.03,
}
MAX_ROW_LIMIT = 25_000
COUNTRIES = (("usa", 0.55), ("gbr", 0.25), ("deu", 0.2))
DEVICES = (("MOBILE", 0.6), ("DESKTOP", 0.4))
# Monday first: fewer searches at the weekend.
WEEKDAY = (1.05, 1.1, 1.1, 1.05, 0.95, 0.7, 0.75)
_TOPICS = (
    "garden soil",
    "compost bins",
    "raised beds",
    "tomato plants",
    "drip irrigation",
    "pruning shears",
    "seed starting",
    "mulch",
    "lawn care",
    "indoor herbs",
    "potting mix",
    "worm farm",
    "greenhouse kits",
    "fruit trees",
    "pest control",
    "garden tools",
    "rain barrels",
    "flower bulbs",
    "hydroponics",
)
_FORMS = ("{t}", "best {t}", "how to choose {t}")


@functools.cache
def _queries() -> tuple[tuple[str, int, float, int | None], ...]:
    """(query, page index, base position, second page index) of the 57 topic queries; the
    brand's 3 come with the site's name (queries_of)."""
    found = []
    for form_index, form in enumerate(_FORMS):
        for topic_index, topic in enumerate(_TOPICS):
            rank = form_index * len(_TOPICS) + topic_index
            # A few queries also rank a second page lower: cannibalization to find.
            second = (topic_index + 3) % len(_TOPICS) + 1 if rank % 12 == 5 else None
            found.append((form.format(t=topic), topic_index + 1, 1.5 + (rank % 25) * 0.9, second))
    return tuple(found)


def pages_of(base: str) -> list[str]:
    """The site's 20 pages: its home and one per topic."""
    return [base] + [f"{base}guides/{topic.replace(' ', '-')}" for topic in _TOPICS]


def queries_of(base: str) -> list[tuple[str, int, float, int | None]]:
    """The 60 queries, most searched first: the brand's 3 (on the home page), then the topics'."""
    brand = (urlsplit(base).hostname or "offline.example").removeprefix("www.").split(".")[0]
    branded = [(brand, 0, 1.1, None), (f"{brand} login", 0, 1.2, None)]
    branded.append((f"{brand} reviews", 0, 2.4, None))
    return branded + list(_queries())


def _ctr(position: float) -> float:
    """A click-through curve of the usual shape: about 30% at 1, 3% at 10."""
    return min(0.35, 0.3 / float(position**0.95))


@functools.lru_cache(maxsize=256)
def day_rows(site_url: str, base: str, search_type: str, day: date) -> tuple[dict[str, Any], ...]:
    """Every row of the day: {query (None: anonymized), page, country, device, clicks,
    impressions, position}. The same arguments always give the same rows."""
    rng = random.Random(f"{site_url}:{day.isoformat()}:{search_type}")
    scale = _TYPE_SCALE[search_type] * WEEKDAY[day.weekday()]
    pages = pages_of(base)
    rows: list[dict[str, Any]] = []
    named: dict[tuple[str, str, str], int] = {}
    for rank, (query, page, position, second) in enumerate(queries_of(base)):
        volume = 900 / (rank + 1) ** 0.9 * scale * rng.lognormvariate(0, 0.2)
        ranked = [(page, position, 1.0)] + ([(second, position + 6, 0.4)] if second else [])
        for page_index, base_position, share in ranked:
            for country, country_share in COUNTRIES:
                for device, device_share in DEVICES:
                    weight = share * country_share * device_share * rng.uniform(0.7, 1.3)
                    impressions = round(volume * weight)
                    where = max(1.0, base_position + rng.gauss(0, 0.6))
                    where += 0.4 if device == "MOBILE" else 0.0
                    if impressions <= 0:
                        continue
                    clicks = min(
                        impressions, round(impressions * _ctr(where) * rng.uniform(0.7, 1.3))
                    )
                    key = (pages[page_index], country, device)
                    named[key] = named.get(key, 0) + impressions
                    rows.append(_row(query, key, clicks, impressions, round(where, 1)))
    # Anonymized queries: about a fifth more impressions that no query row shows.
    for key, impressions in named.items():
        hidden = round(impressions * 0.2 * rng.uniform(0.5, 1.5))
        if hidden > 0:
            where = round(8 + rng.uniform(0, 20), 1)
            rows.append(_row(None, key, round(hidden * _ctr(where)), hidden, where))
    return tuple(rows)


def _row(
    query: str | None, key: tuple[str, str, str], clicks: int, impressions: int, position: float
) -> dict[str, Any]:
    page, country, device = key
    return {
        "query": query,
        "page": page,
        "country": country,
        "device": device,
        "clicks": clicks,
        "impressions": impressions,
        "position": position,
    }


def _invalid(message: str) -> GoogleApiError:
    return GoogleApiError(400, message, reason="invalid")


class OfflineSearchConsole(SearchConsoleClient):
    """google.SearchConsoleClient's calls answered here with made-up data: a SearchConsoleClient,
    so every part holding a SearchConsoleAccess takes it unchanged. Nothing is sent anywhere
    (the parent's constructor, which would set up Google's endpoints, is not called).

    `site_url` is the offline property (the only one it lists and answers for, as a grant with
    one property would); `base` the URL every page is under."""

    def __init__(self, site_url: str, base: str | None) -> None:
        self.site_url = site_url
        base = base or OFFLINE_SITE
        self.base = base if base.endswith("/") else base + "/"

    def __repr__(self) -> str:
        return f"OfflineSearchConsole({self.site_url!r})"

    def _own(self, site_url: str) -> None:
        if site_url != self.site_url:
            raise GoogleApiError(
                403,
                f"User does not have sufficient permission for site '{site_url}'.",
                reason="forbidden",
            )

    async def list_sites(self) -> list[dict[str, Any]]:
        return [{"siteUrl": self.site_url, "permissionLevel": "siteOwner"}]

    async def query(self, site_url: str, body: dict[str, Any]) -> dict[str, Any]:
        """searchAnalytics/query as Google answers it: rows grouped by `dimensions`, sorted by
        clicks descending, paged by rowLimit (1-25,000, default 1,000) and startRow; dataState
        final (the default: final days only) or all. dimensionFilterGroups are not applied."""
        self._own(site_url)
        try:
            start = date.fromisoformat(str(body["startDate"]))
            end = date.fromisoformat(str(body["endDate"]))
            row_limit = int(body.get("rowLimit") or 1000)
            start_row = int(body.get("startRow") or 0)
        except (KeyError, TypeError, ValueError):
            raise _invalid("Invalid date range or paging.") from None
        dimensions = [str(d) for d in body.get("dimensions") or []]
        search_type = str(body.get("type") or body.get("searchType") or "web")
        data_state = str(body.get("dataState") or "final")
        if (
            any(d not in DIMENSIONS for d in dimensions)
            or search_type not in SEARCH_TYPES
            or data_state not in ("final", "all")
            or not 1 <= row_limit <= MAX_ROW_LIMIT
            or start_row < 0
            or start > end
        ):
            raise _invalid("Invalid value in request.")
        if search_type == "discover" and "query" in dimensions:
            raise _invalid("Discover data has no query dimension.")
        # Making up a window's days is CPU work (a 16-month backfill's first call makes about
        # 250,000 rows): in a thread, so the service's event loop goes on answering meanwhile.
        return await asyncio.to_thread(
            self._answer, start, end, dimensions, search_type, data_state, row_limit, start_row
        )

    def _answer(
        self,
        start: date,
        end: date,
        dimensions: list[str],
        search_type: str,
        data_state: str,
        row_limit: int,
        start_row: int,
    ) -> dict[str, Any]:
        today = utcnow().date()
        first_incomplete = today - timedelta(days=FRESH_DAYS)
        groups: dict[tuple[str, ...], list[float]] = {}
        day = start
        while day <= min(end, today):
            if data_state == "all" or day < first_incomplete:
                for row in day_rows(self.site_url, self.base, search_type, day):
                    if "query" in dimensions and row["query"] is None:
                        continue
                    values = {**row, "date": day.isoformat()}
                    sums = groups.setdefault(tuple(str(values[d]) for d in dimensions), [0, 0, 0])
                    sums[0] += row["clicks"]
                    sums[1] += row["impressions"]
                    sums[2] += row["position"] * row["impressions"]
            day += timedelta(days=1)
        ordered = sorted(groups.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
        rows = [
            {
                "keys": list(key),
                "clicks": clicks,
                "impressions": impressions,
                "ctr": clicks / impressions,
                "position": weighted / impressions,
            }
            for key, (clicks, impressions, weighted) in ordered[start_row : start_row + row_limit]
        ]
        if not dimensions:
            rows = [{k: v for k, v in row.items() if k != "keys"} for row in rows]
        aggregation = "byPage" if "page" in dimensions else "byProperty"
        answer: dict[str, Any] = {"responseAggregationType": aggregation}
        if rows:
            answer["rows"] = rows
        # Google names the first incomplete day only to dataState all grouped by date.
        if data_state == "all" and "date" in dimensions and end >= first_incomplete:
            answer["metadata"] = {"firstIncompleteDate": first_incomplete.isoformat()}
        return answer

    async def list_sitemaps(self, site_url: str) -> list[dict[str, Any]]:
        """One sitemap, always: submit and delete change nothing (a list kept in memory would
        differ from one process to the next)."""
        self._own(site_url)
        read = datetime.combine(utcnow().date() - timedelta(days=1), datetime.min.time(), UTC)
        stamp = read.isoformat().replace("+00:00", "Z")
        return [
            {
                "path": f"{self.base}sitemap.xml",
                "lastSubmitted": stamp,
                "lastDownloaded": stamp,
                "isPending": False,
                "isSitemapsIndex": False,
                "type": "sitemap",
                "warnings": "0",
                "errors": "0",
                "contents": [{"type": "web", "submitted": "20", "indexed": "18"}],
            }
        ]

    async def submit_sitemap(self, site_url: str, feedpath: str) -> None:
        self._own(site_url)

    async def delete_sitemap(self, site_url: str, feedpath: str) -> None:
        self._own(site_url)

    async def inspect(self, site_url: str, url: str, language_code: str | None) -> dict[str, Any]:
        """A plausible inspectionResult, the same for the same URL: most pages indexed, some
        crawled or discovered but not indexed."""
        self._own(site_url)
        rng = random.Random(f"{site_url}:{url}")
        coverage = rng.choices(
            (
                ("PASS", "Submitted and indexed", "INDEXING_ALLOWED"),
                ("NEUTRAL", "Crawled - currently not indexed", "INDEXING_ALLOWED"),
                ("NEUTRAL", "Discovered - currently not indexed", "INDEXING_ALLOWED"),
            ),
            weights=(8, 1, 1),
        )[0]
        crawled = datetime.combine(
            utcnow().date() - timedelta(days=rng.randint(1, 30)), datetime.min.time(), UTC
        )
        return {
            "inspectionResultLink": "https://search.google.com/search-console/inspect?id="
            + quote(url, safe=""),
            "indexStatusResult": {
                "verdict": coverage[0],
                "coverageState": coverage[1],
                "robotsTxtState": "ALLOWED",
                "indexingState": coverage[2],
                "lastCrawlTime": crawled.isoformat().replace("+00:00", "Z"),
                "pageFetchState": "SUCCESSFUL",
                "googleCanonical": url,
                "userCanonical": url,
                "sitemap": [f"{self.base}sitemap.xml"],
                "referringUrls": [self.base],
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


def domain_property(site_url: str | None) -> str:
    """`sc-domain:` of the profile's site (www. aside), else of OFFLINE_SITE."""
    host = urlsplit(site_url or OFFLINE_SITE).hostname or "offline.example"
    return f"sc-domain:{host.removeprefix('www.')}"


async def attach(session: AsyncSession, tenant_id: uuid.UUID, row: SeoConnection) -> None:
    """Select the offline property on the offline connection `row`, made when it has none:
    `sc-domain:` of the profile's site, unless the tenant holds that property from Google (its
    rows must never mix with made-up ones): then `sc-domain:offline.example`."""
    site_url = domain_property(await repo.site_url(session, tenant_id))
    found = await repo.property_by_url(session, tenant_id, site_url)
    if found is not None and found.permission_level != OFFLINE_PERMISSION:
        site_url = domain_property(None)
        found = await repo.property_by_url(session, tenant_id, site_url)
    if found is None:
        found = await repo.add_property(session, tenant_id, site_url, OFFLINE_PERMISSION)
    row.property_id = found.id
    row.available_properties = [{"siteUrl": site_url, "permissionLevel": "siteOwner"}]


async def hand_over(session: AsyncSession, tenant_id: uuid.UUID, prop: SeoProperty) -> None:
    """Google's connection chose the offline provider's property `prop`: the made-up days
    stored under it go (they must never pass for Google's), and the offline connection no
    longer has a property (connecting it again makes one Google does not hold)."""
    await repo.purge_search_console(session, tenant_id, [prop.id])
    row = await repo.connection(session, tenant_id, OFFLINE, for_update=True)
    if row is not None and row.property_id == prop.id:
        row.property_id = None
        row.available_properties = []


async def client(
    session: AsyncSession, tenant_id: uuid.UUID, chosen: SeoProperty
) -> SearchConsoleClient:
    """The offline client of its property `chosen`, the pages under the profile's site.
    SearchConsoleNotConnected when `chosen` is now Google's (Google's connection chose it
    since): made-up days must not be stored there."""
    if chosen.permission_level != OFFLINE_PERMISSION:
        raise SearchConsoleNotConnected(
            f"{chosen.site_url} is now a Google property: connect offline again (seo.connect)."
        )
    return OfflineSearchConsole(chosen.site_url, await repo.site_url(session, tenant_id))


async def connection_in_use(
    session: AsyncSession, tenant_id: uuid.UUID, settings: Settings | None = None
) -> SeoConnection | None:
    """The connection Search Console is reached through: google_search_console's when present
    (connected, error or needs_reauth: a real Google connection always wins), else in the local
    environment a connected offline one, else google_search_console's row (or None)."""
    row = await repo.connection(session, tenant_id, GSC)
    local = (settings or runtime.current().settings).is_local
    if (row is None or row.status not in PRESENT) and local:
        other = await repo.connection(session, tenant_id, OFFLINE)
        return other if other is not None and other.status == "connected" else row
    return row


def in_use() -> tuple[ColumnElement[bool], ColumnElement[int]]:
    """connection_in_use for a query over SeoConnection (the tenant's rows): which rows may be
    the one in use, and an order putting it first: a present Google connection, then a
    connected offline one, then a Google one no longer present (its data is kept). The
    environment is not checked: only the local one connects offline."""
    may = or_(
        SeoConnection.provider == GSC,
        and_(SeoConnection.provider == OFFLINE, SeoConnection.status == "connected"),
    )
    first = case(
        (and_(SeoConnection.provider == GSC, SeoConnection.status.in_(PRESENT)), 0),
        (SeoConnection.provider == OFFLINE, 1),
        else_=2,
    )
    return may, first


async def property_in_use(session: AsyncSession, tenant_id: uuid.UUID) -> SeoProperty | None:
    """The property chosen on the tenant's connection in use (in_use), if any: the one the
    Search Console reads and the sitemaps answer from."""
    may, first = in_use()
    chosen = (
        select(SeoConnection.property_id)
        .where(SeoConnection.tenant_id == tenant_id, may)
        .order_by(first)
        .limit(1)
        .scalar_subquery()
    )
    statement = select(SeoProperty).where(
        SeoProperty.tenant_id == tenant_id, SeoProperty.id == chosen
    )
    return (await session.execute(statement)).scalars().first()
