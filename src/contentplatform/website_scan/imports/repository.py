"""The queries of importing a snapshot's pages as knowledge; the tenant always comes first."""

from __future__ import annotations

import uuid
from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.website_scan.models import CrawlPage


async def pages_of(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    page_ids: Collection[uuid.UUID],
) -> dict[uuid.UUID, CrawlPage]:
    """Those of `page_ids` that are pages of the snapshot, by id (at most 100 are asked for)."""
    if not page_ids:
        return {}
    statement = select(CrawlPage).where(
        CrawlPage.tenant_id == tenant_id,
        CrawlPage.snapshot_id == snapshot_id,
        CrawlPage.id.in_(list(page_ids)),
    )
    return {page.id: page for page in (await session.execute(statement)).scalars()}


async def page_hashes(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> list[tuple[uuid.UUID, str, str | None]]:
    """(id, url, content hash) of every page of the snapshot that answered 2xx."""
    statement = select(CrawlPage.id, CrawlPage.url, CrawlPage.content_hash).where(
        CrawlPage.tenant_id == tenant_id,
        CrawlPage.snapshot_id == snapshot_id,
        CrawlPage.error.is_(None),
        CrawlPage.status_code >= 200,
        CrawlPage.status_code < 300,
    )
    return [
        (page_id, url, digest) for page_id, url, digest in (await session.execute(statement)).all()
    ]
