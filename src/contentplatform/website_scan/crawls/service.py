"""The rules of crawl runs: start (by hand or on schedule), cancel, read. Never commits.

A run copies its config's settings (with the run's overrides) when it starts, so a config
changed meanwhile applies to the next run only. A config has at most one active run (queued,
running or cancelling: 409) and an organization at most two (429): the tenant is locked while
a run starts, and a unique index on the config's active run holds even against racing starts.
The crawl itself is a durable workflow (durable.py), queued once this commits.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Role
from contentplatform.events import service as events
from contentplatform.kit import durable, errors
from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.schemas import window_of
from contentplatform.tenants import service as tenants
from contentplatform.website_scan import repository as configs
from contentplatform.website_scan import service
from contentplatform.website_scan.crawls import durable as workflows
from contentplatform.website_scan.crawls import repository, schemas
from contentplatform.website_scan.errors import (
    CrawlAlreadyActive,
    CrawlNotCancellable,
    CrawlRunNotFound,
    RobotsOverrideForbidden,
    TooManyActiveCrawls,
)
from contentplatform.website_scan.models import (
    ACTIVE_STATUSES,
    CrawlConfig,
    CrawlRun,
    CrawlSchedule,
    CrawlSnapshot,
)
from contentplatform.website_scan.schemas import USER_AGENT

log = logging.getLogger(__name__)

MAX_ACTIVE_PER_TENANT = 2

# The config's fields a run copies (and the overrides may change).
_COPIED = tuple(field for field in service.PLAIN_FIELDS if field != "render_javascript")


def _settings_of(
    config: CrawlConfig, overrides: schemas.CrawlOverrides | None, page_cap: int | None
) -> dict[str, Any]:
    settings: dict[str, Any] = {"start_url": config.start_url, "user_agent": USER_AGENT}
    for field in _COPIED:
        value = getattr(config, field)
        settings[field] = list(value) if isinstance(value, list) else value
    if overrides is not None:
        for field, value in overrides.model_dump(exclude_none=True).items():
            settings[field] = value
    if page_cap is not None:
        # A plan changed since the config was saved: the run keeps within the plan now.
        settings["max_pages"] = max(1, min(settings["max_pages"], page_cap))
    return settings


def record(run: CrawlRun) -> schemas.CrawlRun:
    crawled, queued = run.pages_crawled, run.queue_size
    max_pages = int(run.settings.get("max_pages") or 1)
    if run.status == "completed":
        percent = 100.0
    else:
        total = min(crawled + queued, max_pages) or 1
        percent = round(min(100.0, 100.0 * crawled / total), 1)
    eta = None
    if run.status == "running" and run.started_at is not None and crawled:
        elapsed = (utcnow() - run.started_at).total_seconds()
        left = max(0, min(queued, max_pages - crawled))
        eta = int(elapsed / crawled * left)
    error = (
        schemas.CrawlError(code=run.error_code, message=run.error_message or run.error_code)
        if run.error_code
        else None
    )
    return schemas.CrawlRun(
        id=run.id,
        config_id=run.config_id,
        status=run.status,
        trigger=run.trigger,
        settings=schemas.CrawlSettingsRecord.model_validate(run.settings),
        progress=schemas.CrawlProgress(
            pages_discovered=run.pages_discovered,
            pages_crawled=crawled,
            pages_failed=run.pages_failed,
            pages_skipped=run.pages_skipped,
            queue_size=queued,
            percent=percent,
            current_depth=run.current_depth,
            eta_seconds=eta,
        ),
        truncated=run.truncated,
        snapshot_id=run.snapshot_id,
        error=error,
        created_by=run.created_by,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
    )


async def require(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> CrawlRun:
    return errors.require(
        await repository.get_run(session, tenant_id, run_id), CrawlRunNotFound, run_id
    )


async def get(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> schemas.CrawlRun:
    return record(await require(session, tenant_id, run_id))


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListCrawlsInput
) -> schemas.CrawlRunPage:
    rows, total = await repository.page_runs(
        session,
        tenant_id,
        config_id=data.config_id,
        status=None if data.status == "all" else data.status,
        **window_of(data),
    )
    return schemas.CrawlRunPage(
        data=[record(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


# --- starting ---------------------------------------------------------------------------------


async def start(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    role: Role,
    created_by: str | None,
    data: schemas.StartCrawlInput,
) -> schemas.CrawlRun:
    """A queued run of the config, its workflow started once this commits; the run an
    idempotency key already started within 24 hours, if any."""
    robots_off = data.overrides is not None and data.overrides.respect_robots_txt is False
    if robots_off and not role.includes(Role.admin):
        raise RobotsOverrideForbidden(
            "Only an admin may turn off respecting robots.txt (respectRobotsTxt: false)."
        )
    config = await service.require(session, tenant_id, data.config_id)
    if data.overrides is not None and data.overrides.max_pages is not None:
        await service.check_page_cap(session, tenant_id, data.overrides.max_pages)
    await tenants.lock_tenant(session, tenant_id)
    if data.idempotency_key is not None:
        since = utcnow() - configs.IDEMPOTENCY_WINDOW
        earlier = await repository.run_by_idempotency_key(
            session, tenant_id, data.idempotency_key, since
        )
        if earlier is not None:
            return record(earlier)
    run = await _start(
        session,
        tenant_id,
        config,
        trigger="manual",
        created_by=created_by,
        overrides=data.overrides,
        idempotency_key=data.idempotency_key,
    )
    return record(run)


async def _start(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    config: CrawlConfig,
    *,
    trigger: str,
    created_by: str | None,
    overrides: schemas.CrawlOverrides | None = None,
    idempotency_key: str | None = None,
) -> CrawlRun:
    """Queue a run of `config` (the tenant locked by the caller): 409 when the config has an
    active run, 429 when the organization has two."""
    active = await repository.active_runs(session, tenant_id)
    mine = [run for run in active if run.config_id == config.id]
    if mine:
        raise CrawlAlreadyActive(
            f"The configuration '{config.name}' already has a crawl {mine[0].status} "
            f"({mine[0].id}); cancel it or wait for it to end.",
            extensions={"runId": str(mine[0].id)},
        )
    if len(active) >= MAX_ACTIVE_PER_TENANT:
        raise TooManyActiveCrawls(
            f"The organization already has {len(active)} crawls queued or running, the most it "
            "may have at once; start this one when one of them ends."
        )
    now = utcnow()
    run = CrawlRun(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        config_id=config.id,
        status="queued",
        trigger=trigger,
        settings=_settings_of(config, overrides, await service.page_cap(session, tenant_id)),
        pages_discovered=0,
        pages_crawled=0,
        pages_failed=0,
        pages_skipped=0,
        queue_size=0,
        current_depth=0,
        truncated=False,
        idempotency_key=idempotency_key,
        created_by=created_by,
        created_at=now,
        updated_at=now,
    )
    session.add(run)
    await session.flush()
    # Its pages point at the snapshot from the first one stored; it is listed once it ends.
    session.add(
        CrawlSnapshot(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            config_id=config.id,
            crawl_run_id=run.id,
            partial=False,
            page_count=0,
            status_counts={},
            broken_link_count=0,
            total_words=0,
            content_purged=False,
            created_at=now,
            updated_at=now,
        )
    )
    events.emit(
        session,
        tenant_id,
        "crawl.started",
        resource_id=run.id,
        payload={
            "run_id": str(run.id),
            "config_id": str(config.id),
            "start_url": config.start_url,
            "trigger": trigger,
        },
    )
    durable.enqueue_after_commit(
        session,
        workflows.crawl,
        [(workflows.workflow_id(run.id), (str(tenant_id), str(run.id)))],
        queue=workflows.QUEUE,
    )
    return run


# --- cancelling -------------------------------------------------------------------------------


async def cancel(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> schemas.CrawlRun:
    """queued -> cancelled at once (its snapshot is an empty partial one); running ->
    cancelling, and the workflow stops before its next page, keeping what it stored."""
    await tenants.lock_tenant(session, tenant_id)
    run = await require(session, tenant_id, run_id)
    await session.refresh(run, with_for_update=True)
    if run.status not in ACTIVE_STATUSES:
        raise CrawlNotCancellable(f"The crawl already ended ({run.status}).")
    if run.status == "queued":
        await workflows.settle(session, run, "cancelled")
    elif run.status == "running":
        run.status = "cancelling"
        run.updated_at = utcnow()
    return record(run)


async def delete_config(session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID) -> None:
    """Soft-delete the config and its schedule; its queued runs are cancelled, its running one
    asked to stop (its pages so far make a partial snapshot)."""
    await tenants.lock_tenant(session, tenant_id)
    await service.delete(session, tenant_id, config_id)
    for run in await repository.active_runs_of_config(session, tenant_id, config_id):
        if run.status == "queued":
            await workflows.settle(session, run, "cancelled")
        elif run.status == "running":
            run.status = "cancelling"
            run.updated_at = utcnow()


async def last_runs(
    session: AsyncSession, tenant_id: uuid.UUID, config_ids: list[uuid.UUID]
) -> dict[uuid.UUID, CrawlRun]:
    return await configs.last_runs(session, tenant_id, config_ids)


# --- the schedule -----------------------------------------------------------------------------

# Due schedules one tick starts at most; the rest wait for the next tick.
TICK_LIMIT = 200


async def tick(db: Database, now: datetime) -> dict[str, int]:
    """Start the crawls whose schedule is due by `now`. Each schedule moves to its next run
    whether its crawl starts or is skipped (the config has an active run, or the organization
    two): a due run is skipped, never queued. Each in its own transaction, so one that cannot
    start never holds up the others; locked schedules (another process's tick) are skipped."""
    report = {"started": 0, "skipped": 0, "failed": 0}
    async with db.unit_of_work() as session:
        due = [
            (row.tenant_id, row.id) for row in await configs.due_schedules(session, now, TICK_LIMIT)
        ]
    for tenant_id, schedule_id in due:
        try:
            async with db.unit_of_work() as session:
                outcome = await _fire(session, tenant_id, schedule_id, now)
        except Exception:
            log.exception("could not start the scheduled crawl of schedule %s", schedule_id)
            outcome = "failed"
        if outcome is not None:
            report[outcome] += 1
    return report


async def _fire(
    session: AsyncSession, tenant_id: uuid.UUID, schedule_id: uuid.UUID, now: datetime
) -> str | None:
    await tenants.lock_tenant(session, tenant_id)
    schedule = await session.get(CrawlSchedule, schedule_id, with_for_update=True)
    if (
        schedule is None
        or schedule.tenant_id != tenant_id
        or schedule.deleted_at is not None
        or schedule.next_run_at is None
        or schedule.next_run_at > now
    ):
        return None  # another tick took it, or it changed meanwhile
    schedule.next_run_at = service.next_run(schedule.cron_expression, schedule.timezone, now)
    config = await configs.get_config(session, tenant_id, schedule.config_id)
    if config is None or config.deleted_at is not None:
        schedule.next_run_at = None
        return "skipped"
    try:  # both refusals come before anything is written
        run = await _start(session, tenant_id, config, trigger="schedule", created_by=None)
    except (CrawlAlreadyActive, TooManyActiveCrawls) as reason:
        log.info("scheduled crawl of config %s skipped: %s", config.id, reason)
        return "skipped"
    schedule.last_run_at, schedule.last_run_id = now, run.id
    return "started"
