"""seo.syncSearchConsole's rules: which window a sync covers, when a run is new and when the
one already there is answered, the first backfill on connect, and the daily schedule in the
organization's time zone. The sync itself is durable work (durable.py).

A run's key is `search_console:<property>:<first day>:<last day>` (`:offline` added for the
offline provider's made-up data, used in the local environment while Google's connection is
not present: connections/offline.py): the same window asked again finds the run that covers
it (a retried trigger never pays twice, and the daily schedule never runs twice a day, nor
after a manual sync of the same window). A window whose run ended failed or partial gets a new
run under the key with `:<n>` added, so it can be tried again.
"""

from __future__ import annotations

import logging
import uuid
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.series import add_months
from contentplatform.seo import service as seo
from contentplatform.seo.connections import offline
from contentplatform.seo.connections import service as connections
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.models import SeoConnection, SeoSyncRun
from contentplatform.seo.search_console import durable, sync_repository
from contentplatform.seo.search_console.sync_errors import SyncWindowRefused
from contentplatform.seo.search_console.sync_schemas import SyncSearchConsoleInput
from contentplatform.seo.sync_runs import schemas as run_schemas
from contentplatform.seo.sync_runs import service as sync_runs
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

KIND = sync_repository.KIND
PROVIDER = sync_repository.PROVIDER
# Search Console keeps 16 months of data: no window starts before.
MAX_MONTHS = 16
# Days before the last final day a default window starts again at (Search Console's data lags
# two to three days; days stored final inside it are skipped, not fetched).
OVERLAP_DAYS = 3
# The daily sync's local hour in the organization's zone: Google has finished the day before
# yesterday by then.
DAILY_AT = time(4, 0)
# Attempts of one window after failed or partial runs (`:<n>` keys), the last one answered.
MAX_ATTEMPTS = 20
# Connections a tick looks at; the others are due still and come on the next tick.
TICK_LIMIT = 500
PARTS = ("search_analytics", "sitemaps")


async def sync_now(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    data: SyncSearchConsoleInput,
    *,
    created_by: str | None,
) -> run_schemas.SyncRun:
    """seo.syncSearchConsole: the run syncing the window (new, or the one already covering it,
    or the search_console run already queued or running)."""
    run = await start(session, tenant_id, data, trigger="manual", created_by=created_by)
    return sync_runs.record(run)


async def start(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    data: SyncSearchConsoleInput,
    *,
    trigger: str,
    created_by: str | None = None,
) -> SeoSyncRun:
    """Open the run for the window and start its workflow once this commits (raises
    SearchConsoleNotConnected, SyncWindowRefused)."""
    zone = await tenants.timezone_of(session, tenant_id)
    today = utcnow().astimezone(ZoneInfo(zone)).date()
    _check(data, today)
    # One trigger at a time per organization: two at once would each see no active run.
    await tenants.lock_tenant(session, tenant_id)
    # Google's connection, or in the local environment the offline provider's (made-up data).
    connection = await offline.connection_in_use(session, tenant_id)
    usable = connection is not None and connection.status in ("connected", "error")
    if connection is None or not usable or connection.property_id is None:
        raise SearchConsoleNotConnected(
            "Search Console is not connected, needs to be authorized again, or has no property "
            "selected: connect it (seo.connect) or choose a property (seo.updateConnection)."
        )
    active = await sync_runs.active_run(session, tenant_id, KIND)
    if active is not None:
        return active
    property_id = connection.property_id
    first, last = await _window(session, tenant_id, property_id, data, today)
    block = await seo.search_console_block(session, tenant_id)
    params: dict[str, Any] = {
        "start_date": first.isoformat(),
        "end_date": last.isoformat(),
        "include": list(data.include or PARTS),
        "search_types": list(block.get("search_types") or ["web"]),
    }
    base = f"{KIND}:{property_id}:{first.isoformat()}:{last.isoformat()}"
    if connection.provider != PROVIDER:
        # The offline provider's runs are keyed apart: once Google's connection takes the
        # property, its sync of the same window is one of its own, not the made-up one's.
        base += f":{connection.provider}"
    for attempt in range(1, MAX_ATTEMPTS + 1):
        key = base if attempt == 1 else f"{base}:{attempt}"
        run, opened = await sync_runs.open_run(
            session,
            tenant_id,
            kind=KIND,
            provider=connection.provider,
            run_key=key,
            trigger=trigger,
            params=params,
            property_id=property_id,
            created_by=created_by,
        )
        if opened:
            durable.start_after_commit(session, tenant_id, run.id)
            return run
        if run.status in ("queued", "running", "succeeded"):
            return run
    return run  # the window failed MAX_ATTEMPTS times today: its last run says why


def _check(data: SyncSearchConsoleInput, today: date) -> None:
    oldest = add_months(today, -MAX_MONTHS)
    if data.end_date is not None and data.end_date > today:
        raise SyncWindowRefused(f"endDate is after today ({today.isoformat()}).")
    if data.start_date is not None:
        if data.start_date < oldest:
            raise SyncWindowRefused(
                f"startDate is older than 16 months: Search Console keeps data from "
                f"{oldest.isoformat()} on."
            )
        if data.end_date is not None and data.start_date > data.end_date:
            raise SyncWindowRefused("startDate is after endDate.")
        if data.end_date is None and data.start_date > today - timedelta(days=1):
            raise SyncWindowRefused("startDate is after yesterday, the default endDate.")


async def _window(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    data: SyncSearchConsoleInput,
    today: date,
) -> tuple[date, date]:
    """The days to sync: those asked for, else the last final day stored minus OVERLAP_DAYS
    (or, before the first sync, the backfill of backfill_months) through yesterday."""
    last = data.end_date or today - timedelta(days=1)
    if data.start_date is not None:
        return data.start_date, last
    oldest = add_months(today, -MAX_MONTHS)
    final = await sync_repository.final_through(session, tenant_id, property_id)
    if final is not None:
        first = final - timedelta(days=OVERLAP_DAYS)
    else:
        block = await seo.search_console_block(session, tenant_id)
        months = int(block.get("backfill_months") or MAX_MONTHS)
        first = add_months(today, -min(max(months, 1), MAX_MONTHS))
    return min(max(first, oldest), last), last


# --- the first backfill and the daily schedule -------------------------------------------------


def next_daily(now: datetime, zone: str) -> datetime:
    """The next DAILY_AT of the zone after `now` (UTC)."""
    local = now.astimezone(ZoneInfo(zone))
    moment = datetime.combine(local.date(), DAILY_AT, tzinfo=ZoneInfo(zone))
    if moment <= local:
        moment = datetime.combine(local.date() + timedelta(days=1), DAILY_AT, ZoneInfo(zone))
    return moment.astimezone(ZoneInfo("UTC"))


@connections.when_connected
async def on_connected(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoConnection
) -> SeoSyncRun | None:
    """Search Console was connected (or its property chosen): the daily sync is scheduled on
    the connection in use (Google's when present, else the offline one) and, when that is
    `row`, the first backfill queued (settings' backfill_months), unless syncing is paused, no
    property is selected yet, or a search_console run is already queued or running. Never
    raises for that: a connection succeeds whether or not a sync can start."""
    await session.flush()  # the connection's new state, for connection_in_use and start() to read
    in_use = await offline.connection_in_use(session, tenant_id)
    if in_use is None:
        return None
    zone = await tenants.timezone_of(session, tenant_id)
    await sync_repository.schedule_next(session, tenant_id, in_use.id, next_daily(utcnow(), zone))
    # The offline one connected while Google's is present is not used: its backfill would be
    # Google's sync.
    if in_use.id != row.id or not row.sync_enabled or row.property_id is None:
        return None
    try:
        return await start(
            session,
            tenant_id,
            SyncSearchConsoleInput(),
            trigger="connect",
            created_by=row.connected_by,
        )
    except SearchConsoleNotConnected:
        return None


async def tick(db: Database, now: datetime) -> dict[str, int]:
    """Start the daily syncs due by `now` (for the scheduler's tick): each tenant's next sync
    moves to the next DAILY_AT of its organization's zone whether its sync starts or not
    (paused, not connected, no property: skipped). Each in its own transaction, so one that
    cannot start never holds up the others."""
    async with db.unit_of_work() as session:
        due = await sync_repository.due_connections(session, now, TICK_LIMIT)

    async def fire(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
        return await _fire(session, tenant_id, now)

    return await seo.fire_each(
        db, [tenant_id for tenant_id, _ in due], fire, "the daily Search Console sync"
    )


async def _fire(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> str | None:
    rows = await sync_repository.connections(session, tenant_id, for_update=True)
    due = [row for row in rows if row.next_sync_at is not None and row.next_sync_at <= now]
    if not due:
        return None  # another tick took it, or it changed meanwhile
    # The next turn goes on the connection in use now, which may not be the one that was due
    # (Google's connected or disconnected since): the schedule follows the provider the sync
    # below goes through. With none in use it stays where it was, to be skipped.
    connection = await offline.connection_in_use(session, tenant_id) or due[0]
    zone = await tenants.timezone_of(session, tenant_id)
    await sync_repository.schedule_next(session, tenant_id, connection.id, next_daily(now, zone))
    if not connection.sync_enabled:
        return "skipped"
    try:
        await start(session, tenant_id, SyncSearchConsoleInput(), trigger="schedule")
    except (SearchConsoleNotConnected, SyncWindowRefused) as reason:
        log.info("daily Search Console sync of %s skipped: %s", tenant_id, reason)
        return "skipped"
    return "started"
