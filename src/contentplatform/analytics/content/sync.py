"""A source's sync: the days of its window asked of the provider in chunks (providers.py), each
chunk's rows normalized and tied to our drafts, then stored in a transaction of its own, so a
sync that stops keeps what it stored.

- URLs are normalized once, by the SEO page inventory's rule (seo/pages: tracking parameters
  dropped, host lowercased, default port and fragment removed), and the rows a provider gave for
  URLs that normalize alike are summed. A URL is ours when a publish attempt put a draft there
  (publishers: each target's URL); a draft live at two URLs is the sum of both, and a page not
  ours is kept with no draft (draft_id null), apart from every content read.
- The referrer rows also give `channel` rows: ai_assistant (chatgpt.com, chat.openai.com,
  perplexity.ai, gemini.google.com, copilot.microsoft.com and Bing's copilot), search, social,
  email, referral, direct.
- A 429 or 5xx (or an outage) is asked again after the provider's Retry-After, else a doubling
  back-off from settings.analytics_sync_backoff_seconds, settings.analytics_sync_retries times;
  the days still refused end the sync `partial`, named in missing_days. A refusal of the
  credentials ends it `failed` and the source `error`. GA4's property quota nearly spent (fewer
  than GA4_TOKENS_KEPT tokens) stops the sync without retrying: the days not asked are missing.
- `data_through` moves to the last day before the first missing one, at most the provider's last
  complete day (yesterday minus its lag_days); Search Console's is SEO's last final day.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics.content import providers
from contentplatform.analytics.content import repository as repo
from contentplatform.analytics.models import AnalyticsSource
from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.publishers import service as publishers
from contentplatform.publishers.vault import vault
from contentplatform.seo.connections import google
from contentplatform.seo.pages import inventory
from contentplatform.seo.search_console import service as search_console
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

# The daily sync's hour in the organization's zone: after Search Console's (04:00).
DAILY_AT = time(6, 0)
# The days the daily sync asks again (figures of the last days still move).
DAILY_DAYS = 3
REFRESH_MARGIN = timedelta(minutes=5)

AI_ASSISTANTS = (
    "chatgpt.com",
    "chat.openai.com",
    "openai.com",
    "perplexity.ai",
    "perplexity",
    "gemini.google.com",
    "gemini",
    "bard.google.com",
    "copilot.microsoft.com",
    "copilot",
    "claude.ai",
)
SEARCH = ("google", "bing", "duckduckgo", "yahoo", "ecosia", "baidu", "yandex", "brave", "qwant")
SOCIAL = (
    "facebook",
    "twitter",
    "t.co",
    "x.com",
    "linkedin",
    "reddit",
    "instagram",
    "pinterest",
    "youtube",
    "mastodon",
    "threads",
    "bsky",
)
EMAIL = ("mail", "newsletter", "substack")
DIRECT = ("", "direct", "(direct)", "direct / none", "(none)")


def next_daily(now: datetime, zone: str) -> datetime:
    """The next DAILY_AT of the zone after `now` (UTC)."""
    tz = ZoneInfo(zone)
    local = now.astimezone(tz)
    moment = datetime.combine(local.date(), DAILY_AT, tzinfo=tz)
    if moment <= local:
        moment = datetime.combine(local.date() + timedelta(days=1), DAILY_AT, tzinfo=tz)
    return moment.astimezone(ZoneInfo("UTC"))


def sync_window(today: date, days: int) -> tuple[date, date]:
    """The `days` days ending yesterday."""
    last = today - timedelta(days=1)
    return last - timedelta(days=days - 1), last


def mark_running(row: AnalyticsSource, first: date, last: date) -> None:
    row.status = "syncing"
    row.sync_status = "running"
    row.sync_from, row.sync_to = first, last
    row.sync_started_at = utcnow()
    row.missing_days = []


def channel_of(referrer: str) -> str:
    """The channel of a referring source (Plausible's visit:source, GA4's sessionSource)."""
    name = referrer.strip().lower()
    if name in DIRECT:
        return "direct"
    if any(marker in name for marker in AI_ASSISTANTS):
        return "ai_assistant"
    if any(marker in name for marker in SEARCH):
        return "search"
    if any(marker in name for marker in SOCIAL):
        return "social"
    if any(marker in name for marker in EMAIL):
        return "email"
    return "referral"


async def drafts_by_url(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, uuid.UUID]:
    """Our drafts by the normalized URL each was published at."""
    found: dict[str, uuid.UUID] = {}
    for draft_id, _connection, url, _at in await publishers.publications(session, tenant_id):
        key = inventory.key_of(url)
        if key is not None:
            found[key[0]] = draft_id
    return found


def rows_of(fetched: list[providers.Row], drafts: dict[str, uuid.UUID]) -> list[dict[str, Any]]:
    """The provider's rows as stored: URLs normalized and merged, tied to drafts, the referrer
    rows also summed by channel."""
    merged: dict[tuple[date, str, str, str], dict[str, Any]] = {}

    def add(row: providers.Row, url: str, dimension: str, value: str) -> None:
        key = (row.day, url, dimension, value)
        stored = merged.get(key)
        if stored is None:
            stored = merged[key] = {
                "day": row.day,
                "url": url,
                "draft_id": drafts.get(url),
                "dimension": dimension,
                "value": value,
                **{name: None for name in repo.FIGURES},
            }
        for name in repo.FIGURES:
            figure = getattr(row, name)
            if figure is not None:
                stored[name] = (stored[name] or 0) + figure

    for row in fetched:
        key = inventory.key_of(row.url)
        if key is None:
            continue
        url = key[0][:2048]
        add(row, url, row.dimension, row.value[:255])
        if row.dimension == "referrer":
            add(row, url, "channel", channel_of(row.value))
    return list(merged.values())


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=offset) for offset in range((last - first).days + 1)]


@dataclass
class _Source:
    tenant_id: uuid.UUID
    id: uuid.UUID
    provider: str
    property: str
    first: date
    last: date
    lag_days: int
    zone: ZoneInfo
    config: dict[str, Any]
    secret: dict[str, Any]
    data_through: date | None


async def run(db: Database, settings: Settings, tenant_id: uuid.UUID, source_id: uuid.UUID) -> str:
    """The source's running sync, to its end: succeeded | partial | failed | settled."""
    async with db.unit_of_work() as session:
        row = await repo.source(session, tenant_id, source_id, for_update=True)
        if row is None or row.sync_status != "running" or row.sync_from is None:
            return "settled"
        assert row.sync_to is not None
        zone = ZoneInfo(await tenants.timezone_of(session, tenant_id))
        secret: dict[str, Any] = {}
        if row.credentials_sealed:
            secret = dict(vault(settings).open(row.credentials_sealed))
        if row.provider == "ga4":
            try:
                secret = await _ga4_token(settings, row, secret)
            except google.GoogleApiError as error:
                _fail(row, "refused", f"Google refused the grant: {error.message}")
                return "failed"
        source = _Source(
            tenant_id,
            row.id,
            row.provider,
            row.property,
            row.sync_from,
            row.sync_to,
            row.lag_days,
            zone,
            dict(row.config or {}),
            secret,
            row.data_through,
        )
        drafts = await drafts_by_url(session, tenant_id)
    if source.provider == "search_console":
        return await _from_search_console(db, source, drafts)
    missing: list[date] = []
    chunk = providers.CHUNK_DAYS[source.provider]
    days = _days(source.first, source.last)
    for start in range(0, len(days), chunk):
        part = days[start : start + chunk]
        try:
            fetched = await _with_backoff(settings, source, part[0], part[-1])
        except providers.Refused as error:
            async with db.unit_of_work() as session:
                row = await repo.source(session, tenant_id, source_id, for_update=True)
                if row is not None and row.sync_status == "running":
                    _fail(row, "refused", str(error))
            return "failed"
        except providers.QuotaSpent:
            # GA4's quota nearly spent: this chunk and the days left wait for the next sync.
            missing.extend(days[start:])
            break
        except providers.Throttled as error:
            log.info(
                "analytics source %s: days %s-%s refused: %s", source_id, part[0], part[-1], error
            )
            missing.extend(part)
            continue
        async with db.unit_of_work() as session:
            await repo.replace_days(
                session, tenant_id, source_id, part, rows_of(fetched.rows, drafts)
            )
        if fetched.tokens_left is not None and fetched.tokens_left < providers.GA4_TOKENS_KEPT:
            # GA4's quota nearly spent: the days left wait for the next sync.
            missing.extend(days[start + chunk :])
            break
    return await _finish(db, source, drafts, missing)


async def _ga4_token(
    settings: Settings, row: AnalyticsSource, secret: dict[str, Any]
) -> dict[str, Any]:
    """A grant whose access token lives 5 more minutes at least: refreshed and sealed again."""
    expires = row.access_expires_at
    if expires is not None and expires - REFRESH_MARGIN > utcnow():
        return secret
    tokens = await google.GoogleOAuth(settings).refresh(str(secret.get("refresh_token") or ""))
    secret = {"access_token": tokens.access_token, "refresh_token": tokens.refresh_token}
    row.credentials_sealed = vault(settings).seal(secret)
    row.access_expires_at = utcnow() + timedelta(seconds=tokens.expires_in)
    return secret


async def _fetch(settings: Settings, source: _Source, first: date, last: date) -> providers.Fetched:
    if source.provider == "plausible":
        return await providers.plausible(
            settings, source.property, str(source.secret.get("apiKey", "")), first, last
        )
    if source.provider == "ga4":
        return await providers.ga4(
            settings, source.property, str(source.secret.get("access_token", "")), first, last
        )
    return await providers.umami(
        settings,
        str(source.secret.get("baseUrl", "")),
        source.property,
        str(source.config.get("site_url") or ""),
        {key: str(value) for key, value in source.secret.items()},
        first,
        last,
        source.zone,
    )


async def _with_backoff(
    settings: Settings, source: _Source, first: date, last: date
) -> providers.Fetched:
    """The chunk fetched, asked again after each Throttled as the provider asks (Retry-After) or
    a doubling back-off; the last Throttled raised when the retries are spent."""
    wait = settings.analytics_sync_backoff_seconds
    for attempt in range(settings.analytics_sync_retries + 1):
        try:
            return await _fetch(settings, source, first, last)
        except providers.Throttled as error:
            if attempt == settings.analytics_sync_retries or isinstance(
                error, providers.QuotaSpent
            ):
                raise
            await asyncio.sleep(
                min(error.retry_after if error.retry_after is not None else wait, 60.0)
            )
            wait *= 2
    raise AssertionError("unreachable")


async def _from_search_console(db: Database, source: _Source, drafts: dict[str, uuid.UUID]) -> str:
    """SEO's stored page facts of the window, as this source's rows (no call to Google)."""
    async with db.unit_of_work() as session:
        final, facts = await search_console.page_days(
            session, source.tenant_id, source.first, source.last
        )
    if final is None:
        async with db.unit_of_work() as session:
            row = await repo.source(session, source.tenant_id, source.id, for_update=True)
            if row is not None and row.sync_status == "running":
                _fail(row, "not_synced", "Search Console has no stored days yet (SEO syncs them).")
        return "failed"
    fetched: list[providers.Row] = []
    for day, page, country, device, clicks, impressions, position_sum in facts:
        figures = {"clicks": clicks, "impressions": impressions, "position_sum": position_sum}
        fetched.append(providers.Row(day, page, **figures))  # type: ignore[arg-type]
        fetched.append(providers.Row(day, page, "country", country.upper(), **figures))  # type: ignore[arg-type]
        fetched.append(providers.Row(day, page, "device", device.lower(), **figures))  # type: ignore[arg-type]
        fetched.append(providers.Row(day, page, "channel", "search", **figures))  # type: ignore[arg-type]
        fetched.append(providers.Row(day, page, "referrer", "Google", **figures))  # type: ignore[arg-type]
    days = _days(source.first, min(source.last, final))
    async with db.unit_of_work() as session:
        await repo.replace_days(
            session, source.tenant_id, source.id, days, rows_of(fetched, drafts)
        )
    source.last = min(source.last, final)
    return await _finish(db, source, drafts, [], through=final)


async def _finish(
    db: Database,
    source: _Source,
    drafts: dict[str, uuid.UUID],
    missing: list[date],
    *,
    through: date | None = None,
) -> str:
    async with db.unit_of_work() as session:
        row = await repo.source(session, source.tenant_id, source.id, for_update=True)
        if row is None or row.sync_status != "running":
            return "settled"
        await repo.match_urls(session, source.tenant_id, source.id, drafts)
        now = utcnow()
        if through is None:
            complete = now.astimezone(source.zone).date() - timedelta(days=1 + source.lag_days)
            reached = min(missing) - timedelta(days=1) if missing else source.last
            through = min(reached, complete) if reached >= source.first else None
        known = [day for day in (row.data_through, through) if day is not None]
        row.data_through = max(known) if known else None
        row.last_synced_at = now
        row.missing_days = [day.isoformat() for day in sorted(missing)]
        row.sync_status = "partial" if missing else "succeeded"
        row.status = "connected"
        row.error = None
        return row.sync_status


def _fail(row: AnalyticsSource, code: str, message: str) -> None:
    row.status = "error"
    row.sync_status = "failed"
    row.error = {"code": code, "message": message[:500]}
    row.last_synced_at = utcnow()
