"""The crawl as durable work: queued -> running -> completed | failed, or cancelling ->
cancelled.

One DBOS workflow per run (`crawl:<run id>`), enqueued when the run is queued (so a crash
before it began loses nothing, and any worker process takes it, at most `QUEUE_CONCURRENCY`
crawls at once per process). It has no DBOS
steps: everything it writes is idempotent and recorded in our tables, so a workflow DBOS
recovers after a crash runs again from the start and picks up where the run's rows say it
stopped. Pages are stored in batches (every `BATCH_PAGES` pages or `BATCH_SECONDS`), each batch
in one transaction with the run's progress and its frontier (what is queued and what is done),
so a resumed crawl never fetches a stored page again and never loses one it stored.

Cancel is read from the run's status, checked with each batch and every second between them;
the crawler stops before its next page and what was stored becomes a partial snapshot. A
failure (anything the crawler raises) fails the run with its reason and also keeps a partial
snapshot. Broken links and the snapshot's totals are computed from the stored pages when the
run ends, so they hold across a resume. The latest `KEEP_CONTENT` snapshots of a config keep
their pages' content; older ones are purged of it then.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

from dbos import DBOS
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.events import service as events
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.tenants import service as tenants
from contentplatform.website_scan import repository as configs
from contentplatform.website_scan import service
from contentplatform.website_scan.crawling.crawler import CrawlResult, CrawlSettings
from contentplatform.website_scan.crawling.crawler import crawl as crawl_site
from contentplatform.website_scan.crawling.fetching import Fetcher
from contentplatform.website_scan.crawling.frontier import Frontier
from contentplatform.website_scan.crawling.pages import PageRecord
from contentplatform.website_scan.crawling.site_files import SiteFacts, sitemaps_json
from contentplatform.website_scan.crawls import repository
from contentplatform.website_scan.imports import service as imports
from contentplatform.website_scan.models import ACTIVE_STATUSES, CrawlRun, CrawlSnapshot
from contentplatform.website_scan.schemas import ROBOTS_TOKEN

log = logging.getLogger(__name__)

BATCH_PAGES = 25
BATCH_SECONDS = 1.0
CANCEL_CHECK_SECONDS = 1.0
KEEP_CONTENT = 20
# A run whose rows have not moved for this long is given up (its workflow cancelled): a crawl
# writes at least every batch, and waits at most a minute on a slow site (Retry-After).
STALL_SECONDS = 30 * 60


# Crawls at once per process, and of those one organization's at most (its sites crawled
# together must not hold up another organization's crawl).
QUEUE_CONCURRENCY = 8
PER_TENANT = 4
QUEUE = durable.declare_queue(
    "website_scan.crawls", worker_concurrency=QUEUE_CONCURRENCY, per_tenant=PER_TENANT
)


def workflow_id(run_id: uuid.UUID) -> str:
    return f"crawl:{run_id}"


class _Stopped(Exception):
    """The run is no longer ours to continue (cancelled, deleted, or ended meanwhile)."""


@DBOS.workflow(name="website_scan.crawl")
async def crawl(tenant_id: str, run_id: str) -> str:
    db = runtime.current().db
    tenant, run = uuid.UUID(tenant_id), uuid.UUID(run_id)
    try:
        begun = await _begin(db, tenant, run)
        if begun is None:
            # Recovered after the run ended: a crash may have come before its re-import, which
            # finds nothing to do when it came after (it imports only pages that changed).
            await _auto_import(db, tenant, run)
            return "settled"
        result = await _Crawl(db, tenant, run, *begun).run()
        status = await _finish(db, tenant, run, result)
    except _Stopped:
        return "settled"
    except Exception as error:
        log.exception("crawl %s failed", run_id)
        await fail(db, tenant, run, "crawl_failed", _reason(error))
        return "failed"
    if status == "completed":
        await _auto_import(db, tenant, run)
    return status


def _reason(error: Exception) -> str:
    text = str(error).strip()
    return (
        f"The crawl stopped on an error: {text[:500]}" if text else "The crawl stopped on an error."
    )


async def _begin(
    db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> tuple[CrawlSettings, uuid.UUID, Frontier | None] | None:
    """Mark the run running (or find it running after a crash): its settings, snapshot and
    stored frontier; None when there is nothing to crawl (it ended, or was cancelled queued)."""
    async with db.unit_of_work() as session:
        run = await repository.get_run(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in ACTIVE_STATUSES:
            return None
        if run.status == "cancelling" and run.frontier is None:
            await settle(session, run, "cancelled")
            return None
        if run.status == "queued":
            run.status = "running"
            run.started_at = utcnow()
        run.updated_at = utcnow()
        snapshot = await _snapshot_of(session, run)
        frontier = Frontier.from_json(run.frontier) if run.frontier else None
        return _settings(run.settings), snapshot.id, frontier


def _settings(values: dict[str, Any]) -> CrawlSettings:
    return CrawlSettings(
        start_url=values["start_url"],
        user_agent=values["user_agent"],
        robots_token=ROBOTS_TOKEN,
        max_pages=values["max_pages"],
        max_depth=values["max_depth"],
        include=tuple(values["include_patterns"]),
        exclude=tuple(values["exclude_patterns"]),
        respect_robots=values["respect_robots_txt"],
        requests_per_second=values["requests_per_second"],
        concurrency=values["concurrency"],
        sitemap_mode=values["sitemap_mode"],
        allow_subdomains=values["allow_subdomains"],
        check_external_links=values["check_external_links"],
    )


async def _snapshot_of(session: AsyncSession, run: CrawlRun) -> CrawlSnapshot:
    statement = select(CrawlSnapshot).where(
        CrawlSnapshot.tenant_id == run.tenant_id, CrawlSnapshot.crawl_run_id == run.id
    )
    snapshot = (await session.execute(statement)).scalar_one()
    return snapshot


class _Crawl:
    """One run of the crawler, storing its pages in batches with the frontier."""

    def __init__(
        self,
        db: Database,
        tenant_id: uuid.UUID,
        run_id: uuid.UUID,
        settings: CrawlSettings,
        snapshot_id: uuid.UUID,
        frontier: Frontier | None,
    ) -> None:
        self.db, self.tenant_id, self.run_id = db, tenant_id, run_id
        self.settings, self.snapshot_id = settings, snapshot_id
        self.resumed = frontier is not None
        self.frontier = frontier or Frontier(settings.max_pages, settings.max_depth)
        self.batch: list[PageRecord] = []
        self.flushed_at = time.monotonic()
        self.lock = asyncio.Lock()
        self.cancelled = False

    async def run(self) -> CrawlResult:
        policy = service.policy(runtime.current().settings)
        with self._watch_cancel():
            result = await crawl_site(
                # External links are checked when the run ends, from the stored pages (so a
                # resumed crawl checks them all, once).
                dataclasses.replace(self.settings, check_external_links=False),
                policy,
                frontier=self.frontier,
                on_page=self.on_page,
                cancelled=lambda: self.cancelled,
                keep_pages=False,
                on_site=self.on_site,
            )
        await self.flush()
        return result

    async def on_site(self, facts: SiteFacts) -> None:
        """Keep the site's files in the snapshot; the sitemaps only as a fresh start read them
        (a resumed crawl reads robots.txt and llms.txt again, not the sitemaps)."""
        async with self.db.unit_of_work() as session:
            await repository.keep_site_files(
                session,
                self.tenant_id,
                self.snapshot_id,
                robots_txt=facts.robots_txt.to_json(),
                llms_txt=None if facts.llms_txt is None else facts.llms_txt.to_json(),
                sitemaps=None if facts.sitemaps is None else sitemaps_json(facts.sitemaps),
            )

    async def on_page(self, page: PageRecord) -> None:
        self.batch.append(page)
        due = time.monotonic() - self.flushed_at >= BATCH_SECONDS
        if len(self.batch) >= BATCH_PAGES or due:
            await self.flush()

    async def flush(self) -> None:
        """Store the pages fetched since the last batch, with the run's progress and frontier,
        in one transaction; learn whether the run is being cancelled."""
        async with self.lock:
            pages, self.batch = self.batch, []
            self.flushed_at = time.monotonic()
            # The pages stored now are done, even before the crawler marks them so: a resume
            # must not fetch them again.
            self.frontier.done.update(page.url for page in pages)
            async with self.db.unit_of_work() as session:
                run = await repository.get_run(
                    session, self.tenant_id, self.run_id, for_update=True
                )
                if run is None or run.status not in ("running", "cancelling"):
                    raise _Stopped
                await repository.add_pages(
                    session, self.tenant_id, self.snapshot_id, pages, utcnow()
                )
                run.pages_crawled += len(pages)
                run.pages_failed += sum(1 for page in pages if _failed(page))
                run.pages_discovered = len(self.frontier.seen)
                run.queue_size = len(self.frontier.queue)
                run.truncated = self.frontier.truncated
                if pages:
                    run.current_depth = max(run.current_depth, max(page.depth for page in pages))
                run.frontier = self.frontier.to_json()
                run.updated_at = utcnow()
                self.cancelled = self.cancelled or run.status == "cancelling"

    @contextlib.contextmanager
    def _watch_cancel(self) -> Iterator[None]:
        """Read the run's status every second while the crawler waits between pages."""

        async def watch() -> None:
            while not self.cancelled:
                await asyncio.sleep(CANCEL_CHECK_SECONDS)
                async with self.db.unit_of_work() as session:
                    run = await repository.get_run(session, self.tenant_id, self.run_id)
                    if run is None or run.status != "running":
                        self.cancelled = True

        task = asyncio.create_task(watch())
        try:
            yield
        finally:
            task.cancel()


def _failed(page: PageRecord) -> bool:
    return page.error is not None or (page.status is not None and page.status >= 400)


async def _finish(
    db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID, result: CrawlResult
) -> str:
    """The snapshot's broken links and totals, then the run's end."""
    settings = None
    async with db.unit_of_work() as session:
        run = await repository.get_run(session, tenant_id, run_id)
        if run is None or run.status not in ("running", "cancelling"):
            return "settled"
        settings = _settings(run.settings)
        snapshot = await _snapshot_of(session, run)
        rows = await repository.page_links(session, tenant_id, snapshot.id)
    cancelled = result.cancelled
    external = settings.check_external_links and not cancelled
    broken = await broken_links(rows, settings if external else None)
    async with db.unit_of_work() as session:
        run = await repository.get_run(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in ("running", "cancelling"):
            return "settled"
        cancelled = cancelled or run.status == "cancelling"
        snapshot = await _snapshot_of(session, run)
        await repository.add_broken_links(session, tenant_id, snapshot.id, broken)
        run.pages_skipped = len(result.skipped_by_robots)
        run.truncated = run.truncated or result.truncated
        if result.robots_retry and not rows:
            run.error_code = "robots_unavailable"
            run.error_message = (
                "robots.txt could not be read (the site answered 5xx or not at all), so nothing "
                "was crawled; the next run tries again."
            )
            status = "failed"
        else:
            status = "cancelled" if cancelled else "completed"
        await settle(session, run, status, broken_count=len(broken))
    return status


async def _auto_import(db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """After a completed scheduled run whose schedule says `autoImportChanged`: import again the
    pages already imported whose content changed. Its own transaction after the run ended: a
    failure here is logged and leaves the run completed (the pages can be imported by hand).
    Run again (the workflow recovered), it imports only what is still out of date."""
    try:
        async with db.unit_of_work() as session:
            run = await repository.get_run(session, tenant_id, run_id)
            if (
                run is None
                or run.status != "completed"
                or run.trigger != "schedule"
                or run.snapshot_id is None
            ):
                return
            schedule = await configs.schedule_of(session, tenant_id, run.config_id)
            if schedule is None or not schedule.auto_import_changed:
                return
            access = await tenants.system_access(session, tenant_id)
            if access is None:
                return
            result = await imports.reimport_changed(
                session, runtime.current(), access, run.snapshot_id
            )
        if result.imported or result.skipped:
            log.info(
                "crawl %s re-imported %d changed pages (%d skipped)",
                run_id,
                len(result.imported),
                len(result.skipped),
            )
    except Exception:
        log.exception("could not re-import the changed pages of crawl %s", run_id)


async def broken_links(
    rows: list[tuple[str, int | None, str | None, list[dict[str, Any]]]],
    external: CrawlSettings | None,
) -> list[dict[str, Any]]:
    """The broken links of a snapshot's pages ((url, status, error, links) each): internal
    targets crawled that answered >= 400 or failed; with `external` settings, external targets
    checked with HEAD (GET when HEAD is refused) too."""
    outcome = {url: (status, error) for url, status, error, _ in rows}
    internal: dict[str, list[dict[str, str]]] = {}
    outbound: dict[str, list[dict[str, str]]] = {}
    for source, _, _, links in rows:
        for link in links:
            occurrence = {"source_url": source, "link_text": link.get("text") or ""}
            by_target = internal if link.get("internal") else outbound
            by_target.setdefault(link["url"], []).append(occurrence)
    found = []
    for target, occurrences in internal.items():
        if target not in outcome:
            continue
        status, error = outcome[target]
        if error is not None or (status is not None and status >= 400):
            found.append(_broken(target, status, error, True, occurrences))
    if external is not None and outbound:
        found += await _check_external(outbound, external)
    return found


# External targets checked at once (each host still keeps the run's own limits).
EXTERNAL_CHECKS = 4


async def _check_external(
    outbound: dict[str, list[dict[str, str]]], settings: CrawlSettings
) -> list[dict[str, Any]]:
    policy = service.policy(runtime.current().settings)
    found: list[dict[str, Any]] = []
    targets = iter(outbound.items())
    async with Fetcher(
        policy,
        user_agent=settings.user_agent,
        interval=1 / settings.requests_per_second,
        concurrency=settings.concurrency,
    ) as fetcher:

        async def check() -> None:
            for target, occurrences in targets:
                fetched = await fetcher.fetch(target, method="HEAD")
                if fetched.status in (405, 501):
                    fetched = await fetcher.fetch(target)
                if fetched.broken:
                    found.append(_broken(target, fetched.status, fetched.error, False, occurrences))

        await asyncio.gather(*(check() for _ in range(EXTERNAL_CHECKS)))
    found.sort(key=lambda link: link["target_url"])
    return found


def _broken(
    target: str,
    status: int | None,
    error: str | None,
    internal: bool,
    occurrences: list[dict[str, str]],
) -> dict[str, Any]:
    return {
        "target_url": target,
        "status_code": status,
        "error": error,
        "internal": internal,
        "occurrences": occurrences,
    }


async def settle(
    session: AsyncSession, run: CrawlRun, status: str, *, broken_count: int | None = None
) -> None:
    """End the run as `status` (completed, failed or cancelled): its snapshot finished (partial
    unless completed) with its totals, older snapshots purged of content, the event told."""
    now = utcnow()
    snapshot = await _snapshot_of(session, run)
    pages, words, counts = await repository.snapshot_totals(session, run.tenant_id, snapshot.id)
    snapshot.page_count, snapshot.total_words, snapshot.status_counts = pages, words, counts
    if broken_count is not None:
        snapshot.broken_link_count = broken_count
    snapshot.partial = status != "completed"
    snapshot.finished_at = now
    snapshot.updated_at = now
    run.status = status
    run.snapshot_id = snapshot.id
    run.finished_at = now
    run.frontier = None
    run.queue_size = 0 if status == "completed" else run.queue_size
    run.updated_at = now
    await session.flush()
    await repository.purge_old_content(session, run.tenant_id, run.config_id, KEEP_CONTENT)
    payload = {
        "run_id": str(run.id),
        "config_id": str(run.config_id),
        "snapshot_id": str(snapshot.id),
        "status": status,
        "pages_crawled": pages,
        "pages_failed": run.pages_failed,
        "broken_links": snapshot.broken_link_count,
        "truncated": run.truncated,
    }
    if run.error_code:
        payload["error"] = {"code": run.error_code, "message": run.error_message}
        payload["reason"] = run.error_message
    kind = {"completed": "crawl.completed", "failed": "crawl.failed"}.get(status, "crawl.cancelled")
    events.emit(session, run.tenant_id, kind, resource_id=run.id, payload=payload)


async def fail(
    db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID, code: str, reason: str
) -> None:
    """Fail the run (unless it ended meanwhile), keeping what it stored as a partial snapshot."""
    async with db.unit_of_work() as session:
        run = await repository.get_run(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in ACTIVE_STATUSES:
            return
        if run.status == "cancelling":
            await settle(session, run, "cancelled")
            return
        run.error_code, run.error_message = code, reason
        await settle(session, run, "failed")


@durable.reconcile_source("website_scan.crawl")
async def unfinished_crawls(session: AsyncSession) -> list[durable.Unfinished]:
    """Active runs: restarted if their workflow is missing (a crash before it started), failed
    when it ended in error or their rows stopped moving."""
    now = utcnow()
    work = []
    for run in await repository.unfinished_runs(session):
        stalled = (now - run.updated_at).total_seconds() > STALL_SECONDS
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(run.id),
                restart=durable.restarter(
                    crawl, workflow_id(run.id), str(run.tenant_id), str(run.id), queue=QUEUE
                ),
                give_up=_giver_up(run.tenant_id, run.id),
                stalled_reason="stalled" if stalled else None,
            )
        )
    return work


def _giver_up(tenant_id: uuid.UUID, run_id: uuid.UUID) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        run = await repository.get_run(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in ACTIVE_STATUSES:
            return
        if run.status == "cancelling":
            await settle(session, run, "cancelled")
            return
        run.error_code = "stalled" if reason == "stalled" else "crawl_failed"
        run.error_message = (
            "The crawl made no progress for 30 minutes and was stopped; what it stored is kept."
            if reason == "stalled"
            else f"The crawl's background work ended unexpectedly ({reason})."
        )
        await settle(session, run, "failed")

    return give_up
