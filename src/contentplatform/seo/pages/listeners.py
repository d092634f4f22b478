"""What the page inventory hears: website scans completed, drafts published and taken down
(events, in the dispatcher's transaction), and Search Console syncs and URL-inspection runs
ended (in the transaction that ends the run, sync_runs.when_ended). Each write in a savepoint:
a failure is logged and holds back nothing else (the next event of that source, or a rebuild,
writes it)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.seo.models import SeoSyncRun
from contentplatform.seo.pages import inventory
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)


@events.listener("seo.pages")
async def heard(session: AsyncSession, taken: Sequence[Event]) -> None:
    for event in taken:
        if event.type not in ("crawl.completed", "draft.published", "draft.unpublished"):
            continue
        try:
            async with session.begin_nested():
                await _take(session, event)
        except Exception:
            log.exception("the page inventory could not take event %s", event.id)


async def _take(session: AsyncSession, event: Event) -> None:
    payload = event.payload or {}
    if event.type == "crawl.completed" and payload.get("snapshot_id"):
        await inventory.scan_completed(
            session, event.tenant_id, uuid.UUID(str(payload["snapshot_id"]))
        )
    elif event.type == "draft.published" and payload.get("draft_id"):
        url = payload.get("url") or payload.get("published_url")
        if isinstance(url, str):
            at = payload.get("published_at")
            await inventory.published(
                session,
                event.tenant_id,
                url,
                uuid.UUID(str(payload["draft_id"])),
                datetime.fromisoformat(at) if isinstance(at, str) else None,
            )
    elif event.type == "draft.unpublished" and payload.get("draft_id"):
        url = payload.get("external_url")
        if isinstance(url, str):
            await inventory.unpublished(
                session, event.tenant_id, url, uuid.UUID(str(payload["draft_id"]))
            )


@sync_runs.when_ended("search_console")
async def search_console_synced(session: AsyncSession, run: SeoSyncRun) -> None:
    await inventory.search_console_synced(session, run.tenant_id, run.property_id)


@sync_runs.when_ended("url_inspection")
async def inspected(session: AsyncSession, run: SeoSyncRun) -> None:
    await inventory.inspected(session, run.tenant_id, run.id)


@sync_runs.when_ended("pagespeed")
async def pagespeed_measured(session: AsyncSession, run: SeoSyncRun) -> None:
    await inventory.measured(session, run.tenant_id, run.id)


@sync_runs.when_ended("rank_check")
async def rank_checked(session: AsyncSession, run: SeoSyncRun) -> None:
    await inventory.ranked(session, run.tenant_id)
