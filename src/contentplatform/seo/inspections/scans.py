"""What SEO hears of the website scans: when a scan completes, the sitemaps its site's robots.txt
declares become the `robots_txt` rows of listSitemaps (service.keep_robots_sitemaps)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.seo.inspections import service

log = logging.getLogger(__name__)


@events.listener("seo.scans")
async def scan_completed(session: AsyncSession, taken: Sequence[Event]) -> None:
    """In the dispatcher's transaction, once per organization whose scans completed; each in a
    savepoint, so a failure here is logged and holds back no other listener's events (the rows
    are made again at the next scan)."""
    for tenant_id in dict.fromkeys(e.tenant_id for e in taken if e.type == "crawl.completed"):
        try:
            async with session.begin_nested():
                await service.keep_robots_sitemaps(session, tenant_id)
        except Exception:
            log.exception("the robots.txt sitemaps of %s could not be kept", tenant_id)
