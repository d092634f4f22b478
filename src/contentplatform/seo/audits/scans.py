"""When audits run on their own, as the tenant's settings.audit.trigger says: `after_scan` (the
default), when a website scan completes its snapshot is audited (trigger `after_scan`);
`weekly`, the scheduler's tick audits the newest completed scan once a week (trigger
`schedule`); `manual`, never."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.kit.db import Database
from contentplatform.seo import repository as seo_repository
from contentplatform.seo import service as seo
from contentplatform.seo.audits import service
from contentplatform.seo.audits.errors import SnapshotNotAuditable
from contentplatform.seo.models import SeoSettings

log = logging.getLogger(__name__)

WEEK = timedelta(days=7)
# Organizations a tick takes at most; the rest are due at the next one.
TICK_LIMIT = 100


@events.listener("seo.audits")
async def scan_completed(session: AsyncSession, taken: Sequence[Event]) -> None:
    """In the dispatcher's transaction, once per completed scan; each in a savepoint, so a
    failure here is logged and holds back no other listener's events."""
    for event in taken:
        if event.type != "crawl.completed":
            continue
        payload = event.payload if isinstance(event.payload, dict) else {}
        try:
            snapshot_id = uuid.UUID(str(payload.get("snapshot_id")))
        except ValueError:
            continue
        try:
            async with session.begin_nested():
                row = await seo_repository.settings(session, event.tenant_id)
                if seo.blocks_of(row)["audit"].get("trigger") != "after_scan":
                    continue
                await service.start(
                    session,
                    event.tenant_id,
                    snapshot_id=snapshot_id,
                    trigger="after_scan",
                    force=False,
                    created_by=None,
                )
        except Exception:
            log.exception("the audit after scan %s could not start", snapshot_id)


async def tick(db: Database, now: datetime) -> dict[str, int]:
    """Start the weekly audits due by `now` (for the scheduler's tick): each organization's
    newest completed scan audited, unless it already has that audit with the checks in force
    (then nothing new runs), and its next audit a week on whether one starts or not (no
    completed scan yet: skipped). Each in its own transaction, so one that cannot start never
    holds up the others."""
    async with db.unit_of_work() as session:
        due = await seo_repository.due_by(session, SeoSettings.next_audit_at, now, TICK_LIMIT)

    async def fire(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
        return await _fire(session, tenant_id, now)

    return await seo.fire_each(db, due, fire, "the weekly audit")


async def _fire(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> str | None:
    row = await seo_repository.settings(session, tenant_id, for_update=True)
    if row.next_audit_at is None or row.next_audit_at > now:
        return None  # another tick took it, or the trigger changed meanwhile
    row.next_audit_at = now + WEEK
    try:
        async with session.begin_nested():
            await service.start(
                session,
                tenant_id,
                snapshot_id=None,
                trigger="schedule",
                force=False,
                created_by=None,
            )
    except SnapshotNotAuditable as reason:
        log.info("weekly audit of %s skipped: %s", tenant_id, reason)
        return "skipped"
    return "started"
