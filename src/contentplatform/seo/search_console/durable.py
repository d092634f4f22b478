"""The Search Console sync as durable work: a sync run queued -> running -> succeeded | partial
| failed, one DBOS workflow per run (`seo.sync:<run id>`), enqueued when the run is opened.

It has no DBOS steps: what it fetched is stored as it goes, each day marked in SeoSyncedDay
with its run and whether it is final, so a workflow DBOS recovers after a crash runs again from
the start and asks only for the days not stored final, nor stored fresh by this same run.

Per search type, for each window of consecutive days still to sync (the whole run's window at
first), searchAnalytics.query with dataState=all, each paged by ROW_LIMIT rows with startRow
until a short page: first the site's totals of the whole window in one request (dimension date:
a row per day with impressions, as Google's guide checks which days have data), then, per day
with impressions, oldest first, the pages' rows (date, page, country, device) and the query
rows (date, query, page, country, device; none for `discover`, which has no query dimension),
a day at a time as Google limits its rows per day. The window's days without impressions have
no page or query row either: the final ones are stored as zeros together in one transaction
(repository.replace_empty_days), the fresh ones not at all; each day with impressions is stored
whole in its own transaction (repository.replace_day), so a crash costs at most the day in
flight and the window's totals, asked again for the days not yet stored.
`metadata.firstIncompleteDate` of the totals says which days are final: a fresh day is stored
fresh and replaced by a later sync once final. Quota answers (429, 403
quotaExceeded/rateLimitExceeded) and Google's 5xx are retried after Retry-After or an
exponential backoff (settings seo_sync_retries, seo_sync_backoff_seconds,
seo_sync_max_wait_seconds); the days of a request still refused (a window's, or a day's) are
left out and the run ends `partial`, naming them in error.items (at most 100); after
GIVE_UP_AFTER such requests in a row the quota is spent for today and the rest is left to the
next sync. A 401 marks the connection needs_reauth (connections.grant_revoked) and fails the
run. Then, when asked, the sitemaps (inspections.refresh_sitemaps).

The reconcile source restarts a run whose workflow is missing (a crash between the commit and
the enqueue), fails one whose workflow ended in error, and gives up a running one whose row has
not moved for STALL_SECONDS, so none stays running forever.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.connections import access as connections
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.connections.google import GoogleApiError, GoogleGrantRevoked
from contentplatform.seo.inspections import service as inspections
from contentplatform.seo.search_console import repository, sync_repository
from contentplatform.seo.search_console.schemas import Figures, PageRow, QueryRow
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)

# Rows per searchAnalytics.query page: Google's most (a module constant, so a test can page).
ROW_LIMIT = 25_000
# Requests refused in a row (after their retries) after which the quota is taken as spent.
GIVE_UP_AFTER = 3
# The most missing days error.items names (the message counts them all).
MAX_ITEMS = 100
QUOTA_SPENT = "not fetched: the quota was spent for today"
# A running run whose row has not moved for this long is given up: it writes every day it
# stores, and waits at most seo_sync_max_wait_seconds per retry.
STALL_SECONDS = 30 * 60

# Syncs at once per process, one per organization: a large property's 16-month backfill (minutes)
# holds one slot while other organizations' syncs run in the others.
QUEUE_CONCURRENCY = 4
QUEUE = durable.declare_queue(
    "seo.search_console", worker_concurrency=QUEUE_CONCURRENCY, per_tenant=1
)

SITE = ["date"]
PAGES = ["date", "page", "country", "device"]
QUERIES = ["date", "query", "page", "country", "device"]


def workflow_id(run_id: uuid.UUID) -> str:
    return f"seo.sync:{run_id}"


def start_after_commit(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    durable.enqueue_after_commit(
        session, sync, [(workflow_id(run_id), (str(tenant_id), str(run_id)))], queue=QUEUE
    )


class _Failed(Exception):
    """The run cannot go on: fail it with this code and message."""

    def __init__(self, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.code, self.message, self.retryable = code, message, retryable


@dataclass(frozen=True)
class _Plan:
    property_id: uuid.UUID
    first: date
    last: date
    search_types: list[str]
    include: list[str]


@dataclass
class _Outcome:
    missing: list[dict[str, str]] = field(default_factory=list)  # {day, search_type, reason}
    quota_spent: bool = False


@DBOS.workflow(name="seo.search_console_sync")
async def sync(tenant_id: str, run_id: str) -> str:
    current = runtime.current()
    db, settings = current.db, current.settings
    tenant, run = uuid.UUID(tenant_id), uuid.UUID(run_id)
    try:
        plan = await _begin(db, tenant, run)
        if plan is None:
            return "settled"
        outcome = _Outcome()
        if "search_analytics" in plan.include:
            await _Sync(db, settings, tenant, run, plan, outcome).run()
        if "sitemaps" in plan.include:
            await _sitemaps(db, tenant)
        return await _finish(db, tenant, run, outcome)
    except GoogleGrantRevoked:
        async with db.unit_of_work() as session:
            await connections.grant_revoked(session, tenant)
        await fail(
            db,
            tenant,
            run,
            "needs_reauth",
            "Google refused the grant (revoked or expired): reconnect Search Console "
            "(seo.connect); the days stored so far are kept.",
        )
        return "failed"
    except _Failed as failure:
        await fail(db, tenant, run, failure.code, failure.message, retryable=failure.retryable)
        return "failed"
    except Exception:
        log.exception("Search Console sync %s failed", run_id)
        # The error's own text may hold SQL or URLs: it goes to the log, not to the client.
        await fail(
            db,
            tenant,
            run,
            "sync_failed",
            "The sync stopped on an internal error; the service logged it. The days stored so "
            "far are kept; sync again to go on.",
            retryable=True,
        )
        return "failed"


async def _begin(db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID) -> _Plan | None:
    """Mark the run running (or find it running after a crash): what it syncs; None when it
    ended (or was cancelled while queued)."""
    async with db.unit_of_work() as session:
        run = await sync_repository.run(session, tenant_id, run_id)
        if run is None or run.status not in ("queued", "running"):
            return None
        if run.property_id is None:
            raise _Failed("not_connected", "The run names no Search Console property.")
        await sync_runs.mark_running(session, tenant_id, run_id)
        params = run.params
        return _Plan(
            property_id=run.property_id,
            first=date.fromisoformat(params["start_date"]),
            last=date.fromisoformat(params["end_date"]),
            search_types=list(params.get("search_types") or ["web"]),
            include=list(params.get("include") or ["search_analytics", "sitemaps"]),
        )


@dataclass(frozen=True)
class _Day:
    site: Figures
    pages: list[PageRow]
    queries: list[QueryRow]
    is_final: bool


@dataclass(frozen=True)
class _Totals:
    """The site's totals of a window, one request: the days with impressions, and the first
    day not final (None: every day of the window is)."""

    days: dict[date, Figures]
    first_incomplete: date | None

    def is_final(self, day: date) -> bool:
        return self.first_incomplete is None or day < self.first_incomplete


class _Sync:
    """The days of one run: per search type and window of days not yet stored, the site's
    totals in one request, the days without impressions stored together, then each other day
    fetched and stored in its own transaction."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        tenant_id: uuid.UUID,
        run_id: uuid.UUID,
        plan: _Plan,
        outcome: _Outcome,
    ) -> None:
        self.db, self.settings = db, settings
        self.tenant_id, self.run_id, self.plan, self.outcome = tenant_id, run_id, plan, outcome
        self.days = _span(plan.first, plan.last)
        self.total = len(self.days) * len(plan.search_types)
        self.done = 0
        self.refused_in_row = 0
        # The windows' totals fetched by this run before a crash (its checkpoint), by key.
        self.kept: dict[str, Any] = {}

    async def run(self) -> None:
        todo: list[tuple[str, list[date]]] = []
        async with self.db.unit_of_work() as session:
            run = await sync_repository.run(session, self.tenant_id, self.run_id)
            self.kept = dict((run.checkpoint if run is not None else None) or {})
            for search_type in self.plan.search_types:
                stored = await sync_repository.synced_days(
                    session,
                    self.tenant_id,
                    self.plan.property_id,
                    search_type,
                    self.plan.first,
                    self.plan.last,
                )
                days = []
                for day in self.days:
                    is_final, by_run = stored.get(day, (False, None))
                    # Final days never change; fresh ones this run stored before a crash are
                    # as fresh as a refetch would be.
                    if not (is_final or by_run == self.run_id):
                        days.append(day)
                todo.append((search_type, days))
            self.done = self.total - sum(len(days) for _, days in todo)
            await sync_runs.record_progress(
                session, self.tenant_id, self.run_id, done=self.done, total=self.total
            )
        for search_type, days in todo:
            # Only days not stored are asked for: a window per run of consecutive ones.
            for first, last in _windows(days):
                await self._window(search_type, first, last)

    async def _window(self, search_type: str, first: date, last: date) -> None:
        days = _span(first, last)
        if self._spent(search_type, days):
            return
        totals = self._kept_totals(search_type, first, last)
        if totals is None:
            try:
                totals = await self._totals(search_type, first, last)
            except GoogleApiError as error:
                self._refused(search_type, days, error)
                return
            await self._keep_totals(search_type, first, last, totals)
        self.refused_in_row = 0
        # No impressions in the site's totals: no page or query row can exist. A final day is
        # stored as zeros (so it is never asked for again), a fresh one not at all.
        empty = [day for day in days if day not in totals.days]
        await self._store_empty(search_type, [day for day in empty if totals.is_final(day)], empty)
        busy = [day for day in days if day in totals.days]
        for index, day in enumerate(busy):
            if self._spent(search_type, busy[index:]):
                return
            try:
                pages, queries = await self._rows(search_type, day)
            except GoogleApiError as error:
                self._refused(search_type, [day], error)
                continue
            self.refused_in_row = 0
            fetched = _Day(totals.days[day], pages, queries, totals.is_final(day))
            await self._store(search_type, day, fetched)

    def _spent(self, search_type: str, days: list[date]) -> bool:
        """After GIVE_UP_AFTER refusals in a row the quota is spent for today: `days` are
        named missing without being asked for."""
        if self.refused_in_row < GIVE_UP_AFTER:
            return False
        self.outcome.quota_spent = True
        self.outcome.missing += [_missing(search_type, day, QUOTA_SPENT) for day in days]
        return True

    def _refused(self, search_type: str, days: list[date], error: GoogleApiError) -> None:
        """A request refused after its retries: its days are missing (a 401 or a refusal no
        retry helps fails the run)."""
        if isinstance(error, GoogleGrantRevoked) or not error.retryable:
            raise _provider_failure(error) from None
        log.info(
            "sync %s: %s %s-%s refused (%s)", self.run_id, search_type, days[0], days[-1], error
        )
        self.outcome.missing += [_missing(search_type, day, error.message) for day in days]
        self.refused_in_row += 1

    async def _access(self) -> connections.SearchConsoleAccess:
        """The connection's client (its token refreshed when due): asked for each request's
        turn, so a backfill longer than a token's life goes on; its property must still be the
        run's."""
        try:
            async with self.db.unit_of_work() as session:
                access = await connections.search_console(session, self.tenant_id)
        except SearchConsoleNotConnected as error:
            raise _Failed("not_connected", str(error)) from None
        if access.property_id != self.plan.property_id:
            raise _Failed(
                "property_changed",
                "The Search Console property changed while the sync ran; the next sync reads "
                "the new one.",
            )
        return access

    async def _totals(self, search_type: str, first: date, last: date) -> _Totals:
        """The site's totals of every day of the window (dimension date: a row per day with
        impressions, at most 16 months' worth: one page)."""
        access = await self._access()
        rows, metadata = await self._pages(access, search_type, first, last, SITE)
        days: dict[date, Figures] = {}
        for row in rows:
            keys = row.get("keys") or [""]
            try:
                day = date.fromisoformat(str(keys[0])[:10])
            except ValueError:
                continue
            figures = _figures(row)
            if first <= day <= last and figures.impressions > 0:
                days[day] = figures
        incomplete = metadata.get("firstIncompleteDate")
        # No firstIncompleteDate: every day answered is final.
        first_incomplete = date.fromisoformat(str(incomplete)[:10]) if incomplete else None
        return _Totals(days, first_incomplete)

    async def _keep_totals(
        self, search_type: str, first: date, last: date, totals: _Totals
    ) -> None:
        """The window's totals in the run's checkpoint: resumed after a crash, the run takes
        the days it has not stored from there rather than ask Google again."""
        kept = {
            "first": first.isoformat(),
            "last": last.isoformat(),
            "first_incomplete": totals.first_incomplete and totals.first_incomplete.isoformat(),
            "days": {
                day.isoformat(): [figures.clicks, figures.impressions, figures.position]
                for day, figures in totals.days.items()
            },
        }
        async with self.db.unit_of_work() as session:
            await sync_runs.keep_checkpoint(
                session, self.tenant_id, self.run_id, f"totals:{search_type}", kept
            )
        self.kept[f"totals:{search_type}"] = kept

    def _kept_totals(self, search_type: str, first: date, last: date) -> _Totals | None:
        """The totals of [first, last] from the checkpoint, when a window fetched before the
        crash covered it."""
        kept = self.kept.get(f"totals:{search_type}")
        if not kept or not date.fromisoformat(kept["first"]) <= first <= last:
            return None
        if last > date.fromisoformat(kept["last"]):
            return None
        days = {}
        for iso, (clicks, impressions, position) in kept["days"].items():
            day = date.fromisoformat(iso)
            if first <= day <= last:
                days[day] = Figures(int(clicks), int(impressions), float(position))
        incomplete = kept.get("first_incomplete")
        return _Totals(days, date.fromisoformat(incomplete) if incomplete else None)

    async def _rows(self, search_type: str, day: date) -> tuple[list[PageRow], list[QueryRow]]:
        """The day's page and query rows (a day at a time: Google keeps at most its top rows
        per day, which a longer window would cut across)."""
        access = await self._access()
        pages, _ = await self._pages(access, search_type, day, day, PAGES)
        queries: list[dict[str, Any]] = []
        if search_type != "discover":
            queries, _ = await self._pages(access, search_type, day, day, QUERIES)
        return [_page_row(row) for row in pages], [_query_row(row) for row in queries]

    async def _pages(
        self,
        access: connections.SearchConsoleAccess,
        search_type: str,
        first: date,
        last: date,
        dimensions: list[str],
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Every row of one query, page after page until a short one; the first page's
        metadata."""
        rows: list[dict[str, Any]] = []
        metadata: dict[str, Any] | None = None
        while True:
            body = {
                "startDate": first.isoformat(),
                "endDate": last.isoformat(),
                "dimensions": dimensions,
                "type": search_type,
                "dataState": "all",
                "rowLimit": ROW_LIMIT,
                "startRow": len(rows),
            }
            answer = await self._query(access, body)
            page = [row for row in answer.get("rows") or [] if isinstance(row, dict)]
            if metadata is None:
                found = answer.get("metadata")
                metadata = found if isinstance(found, dict) else {}
            rows += page
            if len(page) < ROW_LIMIT:
                return rows, metadata

    async def _query(
        self, access: connections.SearchConsoleAccess, body: dict[str, Any]
    ) -> dict[str, Any]:
        """One request, retried on quota answers and Google's own failures."""
        attempt = 0
        while True:
            try:
                return await access.client.query(access.site_url, body)
            except GoogleApiError as error:
                if isinstance(error, GoogleGrantRevoked) or not error.retryable:
                    raise
                if attempt >= self.settings.seo_sync_retries:
                    raise
                await asyncio.sleep(self._wait(error, attempt))
                attempt += 1

    def _wait(self, error: GoogleApiError, attempt: int) -> float:
        wanted = error.retry_after
        if wanted is None:
            wanted = self.settings.seo_sync_backoff_seconds * 2**attempt
        return float(min(max(wanted, 0.0), self.settings.seo_sync_max_wait_seconds))

    async def _running(self, session: AsyncSession) -> None:
        run = await sync_repository.run(session, self.tenant_id, self.run_id)
        if run is None or run.status != "running":
            raise _Failed("cancelled", "The run was stopped while it synced.")

    async def _store_empty(self, search_type: str, final: list[date], empty: list[date]) -> None:
        """The window's days without impressions, in one transaction with the run's progress:
        the `final` ones stored as zeros, the fresh ones only counted."""
        if not empty:
            return
        self.done += len(empty)
        async with self.db.unit_of_work() as session:
            await self._running(session)
            written = await repository.replace_empty_days(
                session,
                self.tenant_id,
                self.plan.property_id,
                search_type,
                final,
                run_id=self.run_id,
            )
            await sync_runs.record_progress(
                session, self.tenant_id, self.run_id, done=self.done, rows=written
            )

    async def _store(self, search_type: str, day: date, fetched: _Day) -> None:
        """The day's rows and the run's progress, in one transaction."""
        self.done += 1
        async with self.db.unit_of_work() as session:
            await self._running(session)
            written = await repository.replace_day(
                session,
                self.tenant_id,
                self.plan.property_id,
                search_type,
                day,
                site=fetched.site,
                pages=fetched.pages,
                queries=fetched.queries,
                is_final=fetched.is_final,
                run_id=self.run_id,
            )
            await sync_runs.record_progress(
                session, self.tenant_id, self.run_id, done=self.done, rows=written
            )


def _span(first: date, last: date) -> list[date]:
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _windows(days: list[date]) -> list[tuple[date, date]]:
    """The runs of consecutive days in `days` (ascending), as (first, last)."""
    windows: list[tuple[date, date]] = []
    for day in days:
        if windows and windows[-1][1] + timedelta(days=1) == day:
            windows[-1] = (windows[-1][0], day)
        else:
            windows.append((day, day))
    return windows


def _missing(search_type: str, day: date, reason: str) -> dict[str, str]:
    return {"day": day.isoformat(), "search_type": search_type, "reason": reason[:300]}


def _provider_failure(error: GoogleApiError) -> Exception:
    if isinstance(error, GoogleGrantRevoked):
        return error
    return _Failed(
        "provider_error",
        f"Search Console refused the sync: {error.message}",
        retryable=error.retryable,
    )


def _text(value: Any, limit: int) -> str:
    # Google's strings go to our columns: no NUL (PostgreSQL refuses it), within the column.
    return str(value).replace("\x00", "")[:limit]


def _figures(row: dict[str, Any]) -> Figures:
    return Figures(
        clicks=round(float(row.get("clicks") or 0)),
        impressions=round(float(row.get("impressions") or 0)),
        position=float(row.get("position") or 0.0),
    )


def _page_row(row: dict[str, Any]) -> PageRow:
    keys = row.get("keys") or []
    figures = _figures(row)
    return PageRow(
        clicks=figures.clicks,
        impressions=figures.impressions,
        position=figures.position,
        page=_text(keys[1], 2048),
        country=_text(keys[2], 3).lower(),
        device=_text(keys[3], 10).lower(),
    )


def _query_row(row: dict[str, Any]) -> QueryRow:
    keys = row.get("keys") or []
    figures = _figures(row)
    return QueryRow(
        clicks=figures.clicks,
        impressions=figures.impressions,
        position=figures.position,
        query=_text(keys[1], 512),
        page=_text(keys[2], 2048),
        country=_text(keys[3], 3).lower(),
        device=_text(keys[4], 10).lower(),
    )


async def _sitemaps(db: Database, tenant_id: uuid.UUID) -> None:
    try:
        async with db.unit_of_work() as session:
            access = await connections.search_console(session, tenant_id)
            await inspections.refresh_sitemaps(session, tenant_id, access)
    except SearchConsoleNotConnected as error:
        raise _Failed("not_connected", str(error)) from None
    except GoogleApiError as error:
        raise _provider_failure(error) from None


async def _finish(db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID, outcome: _Outcome) -> str:
    error: dict[str, Any] | None = None
    status = "succeeded"
    if outcome.missing:
        status = "partial"
        why = (
            "Search Console's quota was spent for today"
            if outcome.quota_spent
            else "Search Console kept refusing them (quota or its own errors)"
        )
        error = {
            "code": "quota_exceeded",
            "message": f"{len(outcome.missing)} days were not synced: {why}. The next sync "
            "fetches them.",
            "retryable": True,
            "items": outcome.missing[:MAX_ITEMS],
        }
    async with db.unit_of_work() as session:
        run = await sync_repository.run(session, tenant_id, run_id)
        if run is None or run.status != "running":
            return "settled"
        await sync_runs.finish(session, tenant_id, run_id, status=status, error=error)
        await sync_repository.note_sync(session, tenant_id, run.provider, at=utcnow(), error=error)
    return status


async def fail(
    db: Database,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    code: str,
    message: str,
    *,
    retryable: bool = False,
) -> None:
    """Fail the run (unless it ended meanwhile); the days it stored are kept."""
    error = {"code": code, "message": message, "retryable": retryable, "items": []}
    async with db.unit_of_work() as session:
        run = await sync_repository.run(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in ("queued", "running"):
            return
        await sync_runs.finish(session, tenant_id, run_id, status="failed", error=error)
        await sync_repository.note_sync(session, tenant_id, run.provider, at=utcnow(), error=error)


@durable.reconcile_source("seo.search_console_sync")
async def unfinished_syncs(session: AsyncSession) -> list[durable.Unfinished]:
    """Queued and running Search Console runs: restarted when their workflow is missing, failed
    when it ended in error or a running one's row stopped moving (a queued one may wait its
    turn)."""
    now = utcnow()
    work = []
    for run in await sync_repository.unfinished_runs(session):
        stalled = run.status == "running" and (now - run.updated_at).total_seconds() > STALL_SECONDS
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(run.id),
                restart=durable.restarter(
                    sync, workflow_id(run.id), str(run.tenant_id), str(run.id), queue=QUEUE
                ),
                give_up=_giver_up(run.tenant_id, run.id),
                stalled_reason="stalled" if stalled else None,
            )
        )
    return work


def _giver_up(tenant_id: uuid.UUID, run_id: uuid.UUID) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        run = await sync_repository.run(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in ("queued", "running"):
            return
        stalled = reason == "stalled"
        error: dict[str, Any] = {
            "code": "stalled" if stalled else "sync_failed",
            "message": (
                "The sync made no progress for 30 minutes and was stopped; the days it stored "
                "are kept."
                if stalled
                else f"The sync's background work ended unexpectedly ({reason})."
            ),
            "retryable": True,
            "items": [],
        }
        await sync_runs.finish(session, tenant_id, run_id, status="failed", error=error)

    return give_up
