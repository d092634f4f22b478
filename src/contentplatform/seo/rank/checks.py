"""One keyword's check, once its SERP is read: the position row completed, the SERP stored, and
the keyword's current figures (position, previous position, movement, changes over 1, 7 and
30 days, best position, estimated traffic, features, competitors, cannibalization) written on
its row, so lists and filters read them from an index rather than from the history.

- `previous_position`: the position at the keyword's check before this one (any day);
- `movement`, since that check: improved / declined (position moved), new (ranking now, not
  then), lost (ranking then, not now), unchanged (same position, or not ranking either time);
  a first check is `new` when it ranks, else `unchanged`;
- `change_Nd`: positions gained since the newest check at least N days before this one
  (previous - current; not ranking counts as NOT_RANKING, 100); null when no check is that old.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import utcnow
from contentplatform.seo.models import SeoKeywordPosition, SeoSerpSnapshot, SeoTrackedKeyword
from contentplatform.seo.rank import repository, visibility
from contentplatform.seo.rank.reading import Reading


def movement(previous: int | None, current: int | None, first: bool) -> str:
    if first:
        return "new" if current is not None else "unchanged"
    if previous is None:
        return "new" if current is not None else "unchanged"
    if current is None:
        return "lost"
    if current < previous:
        return "improved"
    return "declined" if current > previous else "unchanged"


def change(before: int | None, now: int | None) -> int:
    """Positions gained (positive: better), not ranking as 100."""
    return (before or visibility.NOT_RANKING) - (now or visibility.NOT_RANKING)


async def complete(
    session: AsyncSession,
    row: SeoKeywordPosition,
    keyword: SeoTrackedKeyword,
    reading: Reading,
    *,
    provider: str,
    depth: int,
    cost: float | None,
) -> None:
    """`row` completed with `reading`, its SERP stored and `keyword` brought up to date."""
    now = utcnow()
    row.status = "completed"
    row.checked_at = now
    row.position, row.url = reading.position, reading.url
    row.serp_features = reading.serp_features
    row.ai_overview_present = reading.ai_overview_present
    row.ai_overview_cited = reading.ai_overview_cited
    row.competitors = reading.competitors
    row.cannibalization = reading.cannibalization
    row.pages = reading.pages
    row.cost = cost
    row.error = None
    session.add(
        SeoSerpSnapshot(
            id=uuid.uuid4(),
            tenant_id=row.tenant_id,
            keyword_id=keyword.id,
            sync_run_id=row.sync_run_id,
            check_date=row.check_date,
            checked_at=now,
            location_code=keyword.location_code,
            language_code=keyword.language_code,
            device=keyword.device,
            provider=provider,
            depth=depth,
            stopped_at_own_domain=reading.stopped,
            item_types=reading.item_types,
            items=reading.items,
            created_at=now,
            updated_at=now,
        )
    )
    await session.flush()
    await _update_keyword(session, row, keyword, now)


async def _at_least(
    session: AsyncSession, row: SeoKeywordPosition, days: int
) -> SeoKeywordPosition | None:
    return await repository.latest_before(
        session,
        row.tenant_id,
        row.keyword_id,
        row.check_date - timedelta(days=days),
        row.sync_run_id,
    )


async def _update_keyword(
    session: AsyncSession, row: SeoKeywordPosition, keyword: SeoTrackedKeyword, now: datetime
) -> None:
    previous = await repository.latest_before(
        session, row.tenant_id, row.keyword_id, row.check_date, row.sync_run_id
    )
    keyword.previous_position = previous.position if previous is not None else None
    keyword.movement = movement(keyword.previous_position, row.position, previous is None)
    for days, name in ((1, "change_1d"), (7, "change_7d"), (30, "change_30d")):
        before = await _at_least(session, row, days)
        setattr(keyword, name, None if before is None else change(before.position, row.position))
    keyword.position, keyword.url = row.position, row.url
    keyword.best_position = await repository.best_position(session, row.tenant_id, keyword.id)
    keyword.estimated_traffic = visibility.traffic(keyword.search_volume, row.position)
    keyword.serp_features = list(row.serp_features)
    keyword.ai_overview_present = row.ai_overview_present
    keyword.ai_overview_cited = row.ai_overview_cited
    keyword.competitors = list(row.competitors)
    keyword.cannibalization = list(row.cannibalization)
    keyword.last_checked_at = now
    keyword.updated_at = now
    await session.flush()


def fail(row: SeoKeywordPosition, code: str, message: str) -> None:
    row.status = "failed"
    row.error = {"code": code[:60], "message": message[:500]}
    row.updated_at = utcnow()


def today() -> date:
    return utcnow().date()
