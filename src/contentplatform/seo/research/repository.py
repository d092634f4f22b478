"""Every query of keyword research, the tenant first: the 30-day store of the provider's
answers, the Search Console queries the fallback sums, and the tracked keywords ideas are
joined to."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Table, func, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import utcnow
from contentplatform.seo.models import SeoKeywordResearch, SeoQueryDay, SeoTrackedKeyword
from contentplatform.seo.search_console.repository import among

# The fallback reads web search only, as insights do.
SEARCH_TYPE = "web"


async def cached(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    location_code: int,
    language_code: str,
    request_hash: str,
    since: datetime,
) -> SeoKeywordResearch | None:
    """The stored answer to this request in this market, when fetched after `since`."""
    statement = select(SeoKeywordResearch).where(
        SeoKeywordResearch.tenant_id == tenant_id,
        SeoKeywordResearch.location_code == location_code,
        SeoKeywordResearch.language_code == language_code,
        SeoKeywordResearch.request_hash == request_hash,
        SeoKeywordResearch.fetched_at > since,
    )
    return (await session.execute(statement)).scalars().first()


async def store(session: AsyncSession, tenant_id: uuid.UUID, values: dict[str, Any]) -> None:
    """The answer stored for its market and request, over an older one (two at once: the later
    write wins, both were paid answers to the same question)."""
    table: Table = SeoKeywordResearch.__table__  # type: ignore[assignment]
    now = utcnow()
    upsert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = upsert(table).values(
        id=uuid.uuid4(), tenant_id=tenant_id, created_at=now, updated_at=now, **values
    )
    kept = [name for name in values if name not in ("location_code", "language_code")]
    statement = statement.on_conflict_do_update(
        index_elements=["tenant_id", "location_code", "language_code", "request_hash"],
        set_={**{name: statement.excluded[name] for name in kept}, "updated_at": now},
    )
    await session.execute(statement)


async def queries(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    first: date,
    last: date,
    *,
    containing: Sequence[str] = (),
    starting: Sequence[str] = (),
    exact: Sequence[str] = (),
    limit: int,
) -> list[tuple[str, int]]:
    """(query, impressions) of the property's web search rows from `first` to `last`, summed per
    query in the database (the day index bounds the rows read; nothing but the answer comes
    back), of the queries containing one of `containing`, starting with one of `starting`
    (followed by a space) and equal to one of `exact`, each when given: the most shown first,
    at most `limit`."""
    fact = SeoQueryDay
    criteria: list[Any] = [
        fact.tenant_id == tenant_id,
        fact.property_id == property_id,
        fact.search_type == SEARCH_TYPE,
        fact.day >= first,
        fact.day <= last,
    ]
    if containing:
        criteria.append(or_(*(fact.query.contains(word, autoescape=True) for word in containing)))
    if starting:
        criteria.append(
            or_(*(fact.query.startswith(f"{word} ", autoescape=True) for word in starting))
        )
    if exact:
        criteria.append(fact.query.in_(list(exact)))
    shown = func.sum(fact.impressions)
    statement = (
        select(fact.query, shown)
        .where(*criteria)
        .group_by(fact.query)
        .order_by(shown.desc(), fact.query)
        .limit(limit)
    )
    return [(query, int(total or 0)) for query, total in (await session.execute(statement))]


async def tracked(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    location_code: int,
    language_code: str,
    keywords: Sequence[str],
) -> list[tuple[str, int | None]]:
    """(keyword, position at its newest check) of each tracked keyword x device among
    `keywords` in this market."""
    if not keywords:
        return []
    statement = select(SeoTrackedKeyword.keyword, SeoTrackedKeyword.position).where(
        SeoTrackedKeyword.tenant_id == tenant_id,
        SeoTrackedKeyword.location_code == location_code,
        SeoTrackedKeyword.language_code == language_code,
        among(session, SeoTrackedKeyword.keyword, tuple(keywords)),
    )
    return [(keyword, position) for keyword, position in (await session.execute(statement))]
