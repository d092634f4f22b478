"""The media's background work: licence alerts.

A licence that ends blocks attaching and publishing the asset (409), so the people who publish
hear of it first: when the licence of an asset a live draft uses comes within 30 days of its
end, `media.license_expiring` is told, and when it has ended, `media.license_expired` (the
notifications bring both to admins). Each once per expiry: the asset remembers the last alert
it raised, and a new expiry (a renewed licence) may be told again.
"""

from __future__ import annotations

import logging
from datetime import datetime

from contentplatform.events import service as events
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.media import repository
from contentplatform.media.models import MediaAsset

log = logging.getLogger(__name__)

# Licences change by the day: a look every few minutes is plenty, whatever the reconcile pace.
CHECK_EVERY_SECONDS = 600
# The most assets one pass looks at (the rest, at the next pass).
BATCH = 500

_last_check: datetime | None = None


@durable.maintenance("media.license_alerts")
async def check_licences(db: Database) -> int:
    """At most every CHECK_EVERY_SECONDS in a process: tell the licence alerts that are due."""
    global _last_check
    now = utcnow()
    if _last_check is not None and (now - _last_check).total_seconds() < CHECK_EVERY_SECONDS:
        return 0
    _last_check = now
    return await alert_licences(db, now)


def alert_of(asset: MediaAsset, now: datetime) -> tuple[str, str] | None:
    """The alert due for the asset's licence (event type, marker), or None."""
    expires = asset.license_expires_at
    if expires is None:
        return None
    kind = "expired" if expires <= now else "expiring"
    return f"media.license_{kind}", f"{kind}:{expires.isoformat()}"


async def alert_licences(db: Database, now: datetime) -> int:
    """Tell every licence alert due now, each once (processes racing agree through the asset's
    row); how many were told."""
    told = 0
    async with db.unit_of_work() as session:
        for asset in await repository.licences_ending(session, now, BATCH):
            due = alert_of(asset, now)
            if due is None or asset.license_alerted == due[1]:
                continue
            if not await repository.claim_alert(session, asset.tenant_id, asset.id, due[1]):
                continue
            used_by = await repository.drafts_of(session, asset.tenant_id, asset.id)
            live = [status for _, status in used_by if status != "deleted"]
            assert asset.license_expires_at is not None
            events.emit(
                session,
                asset.tenant_id,
                due[0],
                resource_type="media",
                resource_id=asset.id,
                payload={
                    "media_id": str(asset.id),
                    "filename": asset.filename,
                    "expires_at": asset.license_expires_at.isoformat(),
                    "drafts": len(live),
                    "published_drafts": live.count("published"),
                },
            )
            told += 1
    if told:
        log.info("told %d licence alerts", told)
    return told
