"""The rules of the SEO profile (settings) and competitors. Never commits.

The profile is one row per tenant, made with defaults on its first read (two first reads at
once make one row). Its blocks (search_console, rank, ai_visibility, audit, actions, planning)
are stored as JSON and read over their defaults (schemas.DEFAULT_BLOCKS), so a key added later
reads as its default; an update merges what is sent into them.

Competitors: at most MAX_COMPETITORS per tenant, one per domain, never the tenant's own site;
the tenant is locked while one is added, so two adds at once cannot pass the limit together.

The other parts read the profile through brand_terms(), site_url() and
search_console_block(), which never write.

Scheduled rank checks keep their clock on the profile (`next_rank_check_at`): the next
RANK_CHECK_AT of the organization's zone, every day (rank.frequency `daily`) or on rank.weekday
(`weekly`); none when `off`. It starts when keywords are first tracked (start_rank_clock) and
moves when the rank schedule changes here; the tick in rank/schedule.py moves it on. Scheduled
AI visibility runs keep theirs the same way (`next_ai_visibility_at`: AI_VISIBILITY_AT daily, or
on Mondays; started by the first prompts, moved on by ai_visibility/schedule.py).
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.jobs import service as jobs
from contentplatform.jobs.errors import JobNotFound
from contentplatform.kit.db import Database, Required, utcnow
from contentplatform.kit.schemas import Input
from contentplatform.publishers import service as publishers
from contentplatform.publishers.errors import ConnectionNotFound
from contentplatform.seo import repository, schemas
from contentplatform.seo.errors import CompetitorExists, CompetitorNotFound, TooManyCompetitors
from contentplatform.seo.models import SeoCompetitor, SeoSettings
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

# One organization's scheduled work started in its session: "started", "skipped", or None when
# it was not due after all (another tick took it, or its schedule changed meanwhile).
Fire = Callable[[AsyncSession, uuid.UUID], Awaitable[str | None]]


async def fire_each(
    db: Database, due: Sequence[uuid.UUID], fire: Fire, what: str
) -> dict[str, int]:
    """A scheduler tick's work over the organizations `due`: each `fire`d in a transaction of
    its own, so one that cannot start never holds up the others; a failure is logged (`what`
    names the work) and counted as "failed"."""
    report = {"started": 0, "skipped": 0, "failed": 0}
    for tenant_id in due:
        try:
            async with db.unit_of_work() as session:
                outcome = await fire(session, tenant_id)
        except Exception:
            log.exception("could not start %s of %s", what, tenant_id)
            outcome = "failed"
        if outcome is not None:
            report[outcome] += 1
    return report


require_competitor = Required(repository.competitor, CompetitorNotFound)

# The input's field names that differ from the stored block's keys.
_STORED_AS = {"page_speed_top_pages": "pagespeed_top_pages"}
# Block fields that null clears (on any other, null changes nothing).
_NULLABLE_IN_BLOCKS = {"auto_generate_day", "default_job_id", "default_publisher_connection_id"}
_NULLABLE = ("site_url", "brand_name", "country", "language", "location_code")
_BLOCKS = ("search_console", "rank", "ai_visibility", "audit", "actions", "planning")
# Scheduled rank checks start at this hour of the organization's zone: after Search Console's
# daily sync (04:00), so a day's figures and positions are read side by side.
RANK_CHECK_AT = time(5, 0)
# Scheduled AI visibility runs start at this hour of the organization's zone, weekly ones on
# this weekday: after the rank checks, at the start of the working week.
AI_VISIBILITY_AT = time(6, 0)
AI_VISIBILITY_WEEKDAY = "mon"
# Next month's SEO plan is generated at this hour of planning.auto_generate_day.
PLAN_GENERATED_AT = time(7, 0)
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


# --- settings ---------------------------------------------------------------------------------


def blocks_of(row: SeoSettings | None) -> dict[str, dict[str, Any]]:
    """Every block as stored, over its defaults."""
    stored = row.blocks if row is not None else {}
    merged = copy.deepcopy(schemas.DEFAULT_BLOCKS)
    for name, block in stored.items():
        if name in merged and isinstance(block, dict):
            merged[name].update(block)
    return merged


def record(row: SeoSettings) -> schemas.SeoSettings:
    return schemas.SeoSettings(
        site_url=row.site_url,
        brand_name=row.brand_name,
        brand_terms=row.brand_terms,
        country=row.country,
        language=row.language,
        location_code=row.location_code,
        devices=row.devices or list(schemas.DEFAULT_DEVICES),
        **blocks_of(row),
        updated_at=row.updated_at,
        updated_by=row.updated_by,
    )


async def get(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.SeoSettings:
    """The tenant's profile, made with defaults on the first read."""
    return record(await repository.settings(session, tenant_id))


async def update(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject: str,
    data: schemas.UpdateSeoSettingsInput,
) -> schemas.UpdatedSettings:
    """What was sent merged into the profile (locked while it is), with the warnings of what
    it now says."""
    row = await repository.settings(session, tenant_id, for_update=True)
    given = data.model_fields_set
    for name in _NULLABLE:
        if name in given:
            setattr(row, name, getattr(data, name))
    if data.brand_terms is not None:
        row.brand_terms = data.brand_terms
    if data.devices is not None:
        row.devices = list(data.devices)
    blocks = blocks_of(row)
    for name in _BLOCKS:
        patch = getattr(data, name)
        if patch is not None:
            blocks[name].update(_changes(patch))
    await _check_planning(session, tenant_id, data.planning)
    row.blocks = blocks
    # The weekly audit's clock (audits/scans.py): the first at the scheduler's next tick.
    if blocks["audit"].get("trigger") != "weekly":
        row.next_audit_at = None
    elif row.next_audit_at is None:
        row.next_audit_at = utcnow()
    # The rank checks' clock follows their schedule (never a check at once: it costs credits).
    if data.rank is not None and {"frequency", "weekday"} & data.rank.model_fields_set:
        zone = await tenants.timezone_of(session, tenant_id)
        row.next_rank_check_at = next_rank_check(utcnow(), zone, blocks["rank"])
    # Next month's plan's: on planning.auto_generate_day.
    if data.planning is not None and "auto_generate_day" in data.planning.model_fields_set:
        zone = await tenants.timezone_of(session, tenant_id)
        row.next_plan_at = next_plan_generation(utcnow(), zone, blocks["planning"])
    # And the AI visibility runs' (the same: never a run at once).
    if data.ai_visibility is not None and "frequency" in data.ai_visibility.model_fields_set:
        zone = await tenants.timezone_of(session, tenant_id)
        row.next_ai_visibility_at = next_ai_visibility_run(utcnow(), zone, blocks["ai_visibility"])
    row.updated_at = utcnow()
    row.updated_by = subject
    await session.flush()
    warnings = await _warnings(session, tenant_id, row)
    return schemas.UpdatedSettings(**record(row).model_dump(), warnings=warnings)


def next_slot(
    now: datetime, zone: str, frequency: str | None, weekday: str, at: time
) -> datetime | None:
    """The first `at` of `zone` after `now` (UTC): of the next day (`daily`) or of the next
    `weekday` (`weekly`); None for any other frequency (`off`)."""
    if frequency not in ("daily", "weekly"):
        return None
    tz = ZoneInfo(zone)
    local = now.astimezone(tz)
    for offset in range(8):
        day = local.date() + timedelta(days=offset)
        moment = datetime.combine(day, at, tzinfo=tz)
        if moment > local and (frequency == "daily" or WEEKDAYS[day.weekday()] == weekday):
            return moment.astimezone(UTC)
    return None


def next_rank_check(now: datetime, zone: str, rank: dict[str, Any]) -> datetime | None:
    """The first scheduled rank check after `now` (UTC) that the rank block names, in `zone`:
    RANK_CHECK_AT of the next day (daily) or of the next rank.weekday (weekly); None when off."""
    return next_slot(now, zone, rank.get("frequency"), rank.get("weekday", "mon"), RANK_CHECK_AT)


def next_plan_generation(now: datetime, zone: str, planning: dict[str, Any]) -> datetime | None:
    """When next month's plan is next generated after `now` (UTC): PLAN_GENERATED_AT of
    planning.auto_generate_day (1-28) of this month in `zone`, or of the next month once that
    has passed; None when the day is null."""
    day = planning.get("auto_generate_day")
    if not day:
        return None
    tz = ZoneInfo(zone)
    local = now.astimezone(tz)
    year, month = local.year, local.month
    for _ in range(2):
        moment = datetime.combine(date(year, month, day), PLAN_GENERATED_AT, tzinfo=tz)
        if moment > local:
            return moment.astimezone(UTC)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return None


def next_ai_visibility_run(now: datetime, zone: str, block: dict[str, Any]) -> datetime | None:
    """The first scheduled AI visibility run after `now` (UTC): AI_VISIBILITY_AT of the next day
    (ai_visibility.frequency daily) or of the next AI_VISIBILITY_WEEKDAY (weekly); None when
    off."""
    return next_slot(now, zone, block.get("frequency"), AI_VISIBILITY_WEEKDAY, AI_VISIBILITY_AT)


@dataclass(frozen=True)
class Due:
    """An organization's clock taken by a tick: when it was due, in which zone, and the
    profile's blocks as they stood."""

    at: datetime
    zone: str
    blocks: dict[str, dict[str, Any]]


async def take_due(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    clock: str,
    now: datetime,
    next_of: Callable[[datetime, str, dict[str, dict[str, Any]]], datetime | None],
) -> Due | None:
    """A scheduler tick's first move on an organization whose `clock` (a column of the profile:
    next_rank_check_at, next_ai_visibility_at, next_plan_at) seemed due: the organization locked
    before its profile (the order its other writers take them in), the clock read again, and,
    still due by `now`, moved on to `next_of(now, zone, blocks)` (the next slot after now: a
    late tick runs once for what it missed). None when another tick took it or the schedule
    changed meanwhile."""
    await tenants.lock_tenant(session, tenant_id)
    row = await repository.settings(session, tenant_id, for_update=True)
    due: datetime | None = getattr(row, clock)
    if due is None or due > now:
        return None
    zone = await tenants.timezone_of(session, tenant_id)
    blocks = blocks_of(row)
    setattr(row, clock, next_of(now, zone, blocks))
    return Due(due, zone, blocks)


async def start_ai_visibility_clock(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """Start the scheduled AI visibility runs' clock when it is not running (the first prompts
    tracked), as the ai_visibility settings say."""
    row = await repository.settings(session, tenant_id, for_update=True)
    if row.next_ai_visibility_at is None:
        zone = await tenants.timezone_of(session, tenant_id)
        row.next_ai_visibility_at = next_ai_visibility_run(
            utcnow(), zone, blocks_of(row)["ai_visibility"]
        )
        await session.flush()


async def start_rank_clock(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """Start the scheduled rank checks' clock when it is not running (the first keywords
    tracked, or a schedule switched on before any was), as the rank settings say."""
    row = await repository.settings(session, tenant_id, for_update=True)
    if row.next_rank_check_at is None:
        zone = await tenants.timezone_of(session, tenant_id)
        row.next_rank_check_at = next_rank_check(utcnow(), zone, blocks_of(row)["rank"])
        await session.flush()


def _changes(patch: Input) -> dict[str, Any]:
    """A block's sent fields as stored: null only where it clears."""
    changes: dict[str, Any] = {}
    dumped = patch.model_dump(mode="json")
    for name in patch.model_fields_set:
        value = dumped[name]
        if value is None and name not in _NULLABLE_IN_BLOCKS:
            continue
        changes[_STORED_AS.get(name, name)] = value
    return changes


async def _check_planning(
    session: AsyncSession, tenant_id: uuid.UUID, planning: schemas.PlanningPatch | None
) -> None:
    """The job and publisher connection planning names are this tenant's (404 otherwise)."""
    if planning is None:
        return
    job_id = planning.default_job_id
    if job_id is not None and await jobs.find(session, tenant_id, job_id) is None:
        raise JobNotFound(job_id)
    connection_id = planning.default_publisher_connection_id
    if (
        connection_id is not None
        and await publishers.find(session, tenant_id, connection_id) is None
    ):
        raise ConnectionNotFound(connection_id)


async def _warnings(session: AsyncSession, tenant_id: uuid.UUID, row: SeoSettings) -> list[str]:
    selected = await repository.selected_property(session, tenant_id)
    if row.site_url is None or selected is None or property_matches(row.site_url, selected):
        return []
    return [
        f"site_url {row.site_url} is not within the selected Search Console property "
        f"{selected}: its data describes another site. Select the matching property "
        "(seo.updateConnection) or correct site_url."
    ]


def property_matches(site_url: str, property_url: str) -> bool:
    """Whether a Search Console property covers the site at `site_url`: a domain property
    (`sc-domain:example.com`) covers the domain and its subdomains; a URL-prefix property
    (`https://www.example.com/`) the same scheme, host and port."""
    site = urlsplit(site_url)
    host = (site.hostname or "").lower()
    if property_url.startswith("sc-domain:"):
        domain = property_url.removeprefix("sc-domain:").strip().rstrip(".").lower()
        try:
            domain = schemas.ascii_host(domain)
        except ValueError:
            return False
        return host == domain or host.endswith("." + domain)
    prefix = urlsplit(property_url)
    try:
        same_port = (prefix.port or 443) == (site.port or 443)
    except ValueError:
        return False
    return (
        prefix.scheme.lower() == site.scheme.lower()
        and (prefix.hostname or "").lower() == host
        and same_port
    )


def search_console_host(value: str) -> str:
    """A host as Search Console compares it: lowercase, IDNA (punycode), no trailing dot."""
    host = value.lower().rstrip(".")
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def within_property(site_url: str, url: str) -> bool:
    """Whether `url` is within the Search Console property `site_url`: a domain property
    (`sc-domain:example.com`) holds its host and every subdomain, on either scheme; a URL-prefix
    property (`https://example.com/blog/`) the URLs starting with it (scheme and host in any
    case, a default port implied)."""
    parts = urlsplit(url)
    try:
        port = parts.port
        if not parts.hostname or parts.scheme.lower() not in ("http", "https"):
            return False
        host = search_console_host(parts.hostname)
        if site_url.startswith("sc-domain:"):
            domain = search_console_host(site_url.removeprefix("sc-domain:"))
            return bool(domain) and (host == domain or host.endswith("." + domain))
        prefix = urlsplit(site_url)
        scheme = prefix.scheme.lower()
        default = 443 if scheme == "https" else 80
        return (
            scheme == parts.scheme.lower()
            and bool(prefix.hostname)
            and host == search_console_host(prefix.hostname or "")
            and (port or default) == (prefix.port or default)
            and (parts.path or "/").startswith(prefix.path or "/")
        )
    except ValueError:  # a port out of range
        return False


async def brand_terms(session: AsyncSession, tenant_id: uuid.UUID) -> list[str]:
    """The brand name and the brand terms (no repeats, compared case-insensitively); empty
    when none is set."""
    row = await repository.stored_settings(session, tenant_id)
    if row is None:
        return []
    terms = [row.brand_name] if row.brand_name else []
    seen = {term.casefold() for term in terms}
    for term in row.brand_terms:
        if term.casefold() not in seen:
            seen.add(term.casefold())
            terms.append(term)
    return terms


async def site_url(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
    """The tenant's site (`https://host[:port]/`), None until set."""
    row = await repository.stored_settings(session, tenant_id)
    return row.site_url if row is not None else None


async def brand_name(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
    row = await repository.stored_settings(session, tenant_id)
    return row.brand_name if row is not None else None


async def search_console_block(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, Any]:
    """The search_console block over its defaults: {sync_enabled, search_types,
    backfill_months}."""
    row = await repository.stored_settings(session, tenant_id)
    return blocks_of(row)["search_console"]


# --- competitors ------------------------------------------------------------------------------


def competitor_record(row: SeoCompetitor) -> schemas.SeoCompetitor:
    return schemas.SeoCompetitor.model_validate(row)


async def list_competitors(
    session: AsyncSession, tenant_id: uuid.UUID
) -> schemas.SeoCompetitorListing:
    rows = await repository.competitors(session, tenant_id)
    return schemas.SeoCompetitorListing(data=[competitor_record(r) for r in rows], total=len(rows))


async def create_competitor(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.CreateCompetitorInput
) -> schemas.SeoCompetitor:
    await tenants.lock_tenant(session, tenant_id)
    own = await site_url(session, tenant_id)
    if own is not None:
        own_host = schemas.competitor_domain(urlsplit(own).hostname or "")
        if own_host == data.domain:
            raise CompetitorExists(
                f"{data.domain} is the organization's own site (settings.site_url {own})."
            )
    if await repository.competitor_by_domain(session, tenant_id, data.domain) is not None:
        raise CompetitorExists(f"{data.domain} is already a competitor.")
    count = await repository.competitor_count(session, tenant_id)
    if count >= schemas.MAX_COMPETITORS:
        raise TooManyCompetitors(
            f"The organization already tracks {count} competitors, the most it may "
            f"({schemas.MAX_COMPETITORS}); delete one to add another."
        )
    now = utcnow()
    row = SeoCompetitor(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        name=data.name,
        domain=data.domain,
        aliases=data.aliases or [],
        track_rank=True if data.track_rank is None else data.track_rank,
        track_ai=True if data.track_ai is None else data.track_ai,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return competitor_record(row)


async def update_competitor(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateCompetitorInput
) -> schemas.SeoCompetitor:
    row = await require_competitor(session, tenant_id, data.id, for_update=True)
    if data.name is not None:
        row.name = data.name
    if data.aliases is not None:
        row.aliases = data.aliases
    if data.track_rank is not None:
        row.track_rank = data.track_rank
    if data.track_ai is not None:
        row.track_ai = data.track_ai
    row.updated_at = utcnow()
    await session.flush()
    return competitor_record(row)


async def delete_competitor(
    session: AsyncSession, tenant_id: uuid.UUID, competitor_id: uuid.UUID
) -> None:
    row = await require_competitor(session, tenant_id, competitor_id, for_update=True)
    await session.delete(row)
    await session.flush()
