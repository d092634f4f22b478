"""What SEO actions hear: a draft published (`draft.published`, in the dispatcher's transaction)
completes the action its job was made for; a completed audit and an ended Search Console sync,
URL-inspection run, rank check or AI visibility run (in the transaction that ends it) generate
the actions of that source when the SEO settings' `actions.auto_generate` is on. Each in a
savepoint: a failure is logged and breaks neither the audit, the sync nor another listener (the
next run, or seo.generateActions, does it again: generation is idempotent)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.seo.actions import generation, service
from contentplatform.seo.audits import work as audit_work
from contentplatform.seo.models import SeoAuditRun, SeoSyncRun
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)

# The runs whose end generates, and the source each one refreshes.
RUN_SOURCES = {
    "search_console": "search_console",
    "url_inspection": "url_inspection",
    "rank_check": "rank",
    "ai_visibility": "ai_visibility",
}


@events.listener("seo.actions")
async def heard(session: AsyncSession, taken: Sequence[Event]) -> None:
    for event in taken:
        payload = event.payload if isinstance(event.payload, dict) else {}
        if event.type != "draft.published" or not payload.get("draft_id"):
            continue
        try:
            async with session.begin_nested():
                url = payload.get("published_url") or payload.get("url")
                await service.draft_published(
                    session,
                    event.tenant_id,
                    uuid.UUID(str(payload["draft_id"])),
                    url if isinstance(url, str) else None,
                )
        except Exception:
            log.exception("SEO actions could not take event %s", event.id)


async def _generate(
    session: AsyncSession, tenant_id: uuid.UUID, source: str, audit_id: uuid.UUID | None = None
) -> None:
    # Run by the audit's and the sync runs' hooks, each in a savepoint of its own.
    if await service.auto_generate(session, tenant_id):
        await generation.generate(
            session, tenant_id, sources=[source], audit_id=audit_id, lock=False
        )


@audit_work.when_completed
async def audited(session: AsyncSession, audit: SeoAuditRun) -> None:
    await _generate(session, audit.tenant_id, "audit", audit.id)


@sync_runs.when_ended("search_console")
@sync_runs.when_ended("url_inspection")
@sync_runs.when_ended("rank_check")
@sync_runs.when_ended("ai_visibility")
async def run_ended(session: AsyncSession, run: SeoSyncRun) -> None:
    if run.status in ("succeeded", "partial"):
        await _generate(session, run.tenant_id, RUN_SOURCES[run.kind])
