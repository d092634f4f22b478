"""The rules of crawl configurations and their schedules. Never commits.

A config's start URL goes through the outbound guard (kit/outbound.py) when it is given: https
only and a public address (http and loopback only where the operator allows them for local
work); the crawler checks it again at every request, redirect hop and discovered host. Its path
patterns are compiled and probed when given (schemas.py).

A schedule is a 5-field cron read on the wall clock of an IANA zone (the organization's, as it
is when the schedule is set, unless one is named), at most once a day: its minute and hour are
each one number, so it fires at one wall time on the days it names, once per local day even
across daylight-saving changes (cronsim's fixed-time rule, the one jobs follow). `next_run_at`
is stored in UTC while the schedule is enabled and recomputed on every change.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Role
from contentplatform.billing import service as billing
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.config import Settings
from contentplatform.kit import cron, outbound
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.kit.schemas import window_of
from contentplatform.tenants import service as tenants
from contentplatform.website_scan import repository, schemas
from contentplatform.website_scan.errors import (
    BadCrawlSchedule,
    CrawlConfigNotFound,
    CrawlScheduleNotFound,
    CrawlSettingUnavailable,
    DuplicateStartUrl,
    RobotsOverrideForbidden,
    StartUrlRefused,
)
from contentplatform.website_scan.models import CrawlConfig, CrawlRun, CrawlSchedule

_DEFAULT_PORTS = {"http": 80, "https": 443}


def policy(settings: Settings) -> outbound.Policy:
    """The outbound guard for crawls, with the operator's allowances for local work."""
    return outbound.policy_of(settings)


@dataclass(frozen=True)
class StartUrl:
    url: str  # normalized
    host: str  # IDNA (ASCII) form


async def checked_start_url(settings: Settings, url: str) -> StartUrl:
    """`url` normalized, when its form is allowed and every address its host resolves to now is
    public (StartUrlRefused otherwise, naming `startUrl`). Nothing is sent to it."""
    guard = policy(settings)
    try:
        parsed = outbound.check_url(url.strip(), guard)
        await outbound.checked_address(parsed, guard)
    except outbound.OutboundError as error:
        message = f"The start URL cannot be crawled: {error}"
        raise StartUrlRefused(message, errors=[FieldError("startUrl", str(error))]) from None
    return StartUrl(url=_normalized(parsed), host=parsed.raw_host.decode("ascii").lower())


def _normalized(url: httpx.URL) -> str:
    """One spelling per start URL, so the same site is one config: lower-case scheme and host,
    no default port, no fragment, a path of at least "/"."""
    host = url.raw_host.decode("ascii").lower()
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    port = "" if url.port in (None, _DEFAULT_PORTS.get(url.scheme)) else f":{url.port}"
    path = url.raw_path.decode("ascii").partition("?")[0] or "/"
    query = f"?{url.query.decode('ascii')}" if url.query else ""
    return f"{url.scheme}://{host}{port}{path}{query}"


# --- configs: reading -------------------------------------------------------------------------


require = Required(repository.get_config, CrawlConfigNotFound)


def _record(
    config: CrawlConfig, schedule: CrawlSchedule | None, last_run: CrawlRun | None = None
) -> schemas.CrawlConfig:
    values = {column.key: getattr(config, column.key) for column in CrawlConfig.__table__.columns}
    return schemas.CrawlConfig.model_validate(
        {
            **values,
            "user_agent": schemas.USER_AGENT,
            "schedule": schemas.CrawlSchedule.model_validate(schedule) if schedule else None,
            "last_run": schemas.CrawlRunSummary.model_validate(last_run, from_attributes=True)
            if last_run
            else None,
        }
    )


async def get(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> schemas.CrawlConfig:
    config = await require(session, tenant_id, config_id)
    runs = await repository.last_runs(session, tenant_id, [config.id])
    return _record(
        config, await repository.schedule_of(session, tenant_id, config.id), runs.get(config.id)
    )


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListConfigsInput
) -> schemas.CrawlConfigPage:
    rows, total = await repository.page(
        session, tenant_id, search=data.search, scheduled=data.scheduled, **window_of(data)
    )
    ids = [row.id for row in rows]
    schedules = await repository.schedules_of(session, tenant_id, ids)
    runs = await repository.last_runs(session, tenant_id, ids)
    return schemas.CrawlConfigPage(
        data=[_record(row, schedules.get(row.id), runs.get(row.id)) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


# --- configs: writing -------------------------------------------------------------------------


def _check_settings(
    role: Role, respect_robots_txt: bool | None, render_javascript: bool | None
) -> None:
    if respect_robots_txt is False and not role.includes(Role.admin):
        raise RobotsOverrideForbidden(
            "Only an admin may turn off respecting robots.txt (respectRobotsTxt: false)."
        )
    if render_javascript:
        message = "JavaScript rendering is not available: renderJavascript must be false."
        raise CrawlSettingUnavailable(
            message, errors=[FieldError("renderJavascript", "only false is accepted")]
        )


async def check_page_cap(session: AsyncSession, tenant_id: uuid.UUID, max_pages: int) -> None:
    """PlanLimitReached (403, `crawl_pages`) when the plan caps a crawl below `max_pages`."""
    cap = (await billing.plan_limits(session, tenant_id)).crawl_pages
    if cap is not None and max_pages > cap:
        raise PlanLimitReached("crawl_pages", cap)


async def page_cap(session: AsyncSession, tenant_id: uuid.UUID) -> int | None:
    """The pages one crawl may fetch on the organization's plan now (None: the 5000 bound)."""
    return (await billing.plan_limits(session, tenant_id)).crawl_pages


async def _claim_start_url(
    session: AsyncSession, tenant_id: uuid.UUID, start: StartUrl, config_id: uuid.UUID | None
) -> None:
    """DuplicateStartUrl when another live config of the tenant starts there. The tenant is
    locked first, so two writes cannot both take the same URL."""
    await tenants.lock_tenant(session, tenant_id)
    taken = await repository.config_at(session, tenant_id, start.url)
    if taken is not None and taken.id != config_id:
        raise DuplicateStartUrl(
            f"The crawl configuration '{taken.name}' ({taken.id}) already starts at {start.url}.",
            extensions={"configId": str(taken.id)},
        )


async def create(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    role: Role,
    created_by: str,
    data: schemas.CreateConfigInput,
) -> schemas.CrawlConfig:
    _check_settings(role, data.respect_robots_txt, data.render_javascript)
    start = await checked_start_url(settings, data.start_url)
    await check_page_cap(session, tenant_id, data.max_pages)
    await _claim_start_url(session, tenant_id, start, None)
    config = CrawlConfig(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        name=data.name,
        start_url=start.url,
        host=start.host,
        include_patterns=list(data.include_patterns),
        exclude_patterns=list(data.exclude_patterns),
        max_pages=data.max_pages,
        max_depth=data.max_depth,
        respect_robots_txt=data.respect_robots_txt,
        requests_per_second=data.requests_per_second,
        concurrency=data.concurrency,
        sitemap_mode=data.sitemap_mode,
        allow_subdomains=data.allow_subdomains,
        check_external_links=data.check_external_links,
        render_javascript=data.render_javascript,
        created_by=created_by,
    )
    session.add(config)
    await session.flush()
    return _record(config, None)


# Fields an update copies as given (null: unchanged); name and start URL are checked apart.
PLAIN_FIELDS = (
    "include_patterns",
    "exclude_patterns",
    "max_pages",
    "max_depth",
    "respect_robots_txt",
    "requests_per_second",
    "concurrency",
    "sitemap_mode",
    "allow_subdomains",
    "check_external_links",
    "render_javascript",
)


async def update(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    role: Role,
    data: schemas.UpdateConfigInput,
) -> schemas.CrawlConfig:
    """Change what `data` gives; a run already started keeps the settings it copied."""
    _check_settings(role, data.respect_robots_txt, data.render_javascript)
    start = None if data.start_url is None else await checked_start_url(settings, data.start_url)
    if data.max_pages is not None:
        await check_page_cap(session, tenant_id, data.max_pages)
    config = await require(session, tenant_id, data.id, for_update=True)
    if start is not None:
        await _claim_start_url(session, tenant_id, start, config.id)
        config.start_url, config.host = start.url, start.host
    if data.name is not None:
        config.name = data.name
    for field in PLAIN_FIELDS:
        value = getattr(data, field)
        if value is not None:
            setattr(config, field, list(value) if isinstance(value, list) else value)
    config.updated_at = utcnow()
    runs = await repository.last_runs(session, tenant_id, [config.id])
    return _record(
        config, await repository.schedule_of(session, tenant_id, config.id), runs.get(config.id)
    )


async def delete(session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID) -> None:
    """Soft-delete the config and its schedule (which stops). Snapshots and imported documents
    are kept; the caller cancels its runs (crawls.cancel_all_of_config)."""
    config = await require(session, tenant_id, config_id, for_update=True)
    now = utcnow()
    config.deleted_at = now
    schedule = await repository.schedule_of(session, tenant_id, config.id)
    if schedule is not None:
        schedule.deleted_at = now
        schedule.next_run_at = None


# --- schedules --------------------------------------------------------------------------------


def _refused(field: str, message: str) -> BadCrawlSchedule:
    return BadCrawlSchedule(message, errors=[FieldError(field, message)])


def validate_cron(expression: str) -> str:
    """The expression, whitespace collapsed, when it is a valid cron (kit/cron.py, as jobs read
    theirs) firing at most once a day (BadCrawlSchedule naming `cronExpression` otherwise)."""
    try:
        normalized = cron.validate_cron(expression)
    except cron.InvalidSchedule as error:
        raise _refused("cronExpression", str(error)) from None
    minute, hour = normalized.split()[:2]
    # A field starting with '*' is read on elapsed time, not the wall clock (cronsim, as Debian
    # cron): `*/60 1 * * *` fires twice on a fall-back night. One number each keeps it daily.
    if not (minute.isascii() and minute.isdigit() and hour.isascii() and hour.isdigit()):
        raise _refused(
            "cronExpression",
            f"{normalized!r} runs more often than once a day; a crawl runs at most daily: give "
            "one minute and one hour, e.g. '30 2 * * *' (daily at 02:30) or '0 6 * * MON' "
            "(Mondays at 06:00).",
        )
    return normalized


def _zone(name: str) -> str:
    try:
        return cron.validate_timezone(name)
    except cron.InvalidSchedule as error:
        raise _refused("timezone", str(error)) from None


def next_run(expression: str, timezone: str, after: datetime) -> datetime | None:
    """The first occurrence strictly after `after` (UTC) on `timezone`'s wall clock; None when
    nothing matches within cronsim's search (about 50 years)."""
    return cron.next_cron(expression, timezone, after)


async def set_schedule(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.SetScheduleInput
) -> schemas.CrawlSchedule:
    """Create or replace the config's schedule; next_run_at from now while enabled."""
    expression = validate_cron(data.cron_expression)
    timezone = (data.timezone or "").strip() or await tenants.timezone_of(session, tenant_id)
    _zone(timezone)
    # The config's row lock serializes two first schedules of one config.
    config = await require(session, tenant_id, data.id, for_update=True)
    now = utcnow()
    next_run_at = next_run(expression, timezone, now) if data.enabled else None
    if data.enabled and next_run_at is None:
        raise _refused("cronExpression", f"The cron expression {expression!r} never runs.")
    schedule = await repository.schedule_of(session, tenant_id, config.id)
    if schedule is None:
        schedule = CrawlSchedule(id=uuid.uuid4(), tenant_id=tenant_id, config_id=config.id)
        session.add(schedule)
    schedule.cron_expression = expression
    schedule.timezone = timezone
    schedule.enabled = data.enabled
    schedule.auto_import_changed = data.auto_import_changed
    schedule.next_run_at = next_run_at
    schedule.updated_at = now
    await session.flush()
    return schemas.CrawlSchedule.model_validate(schedule)


async def delete_schedule(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> None:
    config = await require(session, tenant_id, config_id, for_update=True)
    if not await repository.remove_schedule(session, tenant_id, config.id):
        raise CrawlScheduleNotFound(config.id)
