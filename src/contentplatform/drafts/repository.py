"""Every query on drafts and their revisions; the tenant always comes first."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    case,
    func,
    insert,
    literal_column,
    or_,
    select,
    table,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts.models import (
    SEARCH_TABLE,
    Draft,
    DraftComment,
    DraftCount,
    DraftRevision,
)
from contentplatform.drafts.schemas import ListDraftsInput
from contentplatform.kit.db import Owned, cross_tenant, lock_rows, page_of, plain
from contentplatform.kit.schemas import offset_of

PUBLISHABLE_LIMIT = 100
# A search's `total` counts its matches up to this many (docs/guides/generation-and-review.md,
# "Lists, search and totals"; docs/decisions/0007-drafts-search-by-trigrams-total-capped.md).
SEARCH_COUNT_LIMIT = 1000
TRIGRAM = 3
SEARCH_TRIGRAMS = 12
# Below this many drafts holding a search's trigrams (every tenant's), they are read by rowid;
# from it on, the tenant's newest drafts are walked.
FEW_CANDIDATES = 2000
_LIKE_SPECIAL = re.compile(r"[\\%_]")


def _live(tenant_id: uuid.UUID) -> Select[Draft]:
    return select(Draft).where(Draft.tenant_id == tenant_id, Draft.deleted_at.is_(None))


get = Owned(Draft)


async def add_many(session: AsyncSession, tenant_id: uuid.UUID, rows: list[dict[str, Any]]) -> None:
    """Insert drafts of the tenant (column values by attribute name) in one statement."""
    if rows:
        await session.execute(insert(Draft), [{**row, "tenant_id": tenant_id} for row in rows])


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, query: ListDraftsInput
) -> tuple[list[dict[str, Any]], int]:
    """A page of the tenant's live drafts, as their columns (a Draft record validates from them
    as from a Draft), and how many there are (a search's: up to SEARCH_COUNT_LIMIT)."""
    statement = _live(tenant_id)
    if query.status is not None:
        statement = statement.where(Draft.status == query.status.value)
    if query.job_id is not None:
        statement = statement.where(Draft.job_id == query.job_id)
    total: Select[Any] | None = None
    if query.search:
        statement = statement.where(await _matches(session, query.search))
        # Counting every match of a common word would read them all to show 20.
        total = select(func.count()).select_from(
            statement.with_only_columns(Draft.id).limit(SEARCH_COUNT_LIMIT).subquery()
        )
    elif query.job_id is None:
        total = select(func.coalesce(func.sum(DraftCount.live), 0)).where(
            DraftCount.tenant_id == tenant_id
        )
        if query.status is not None:
            total = total.where(DraftCount.status == query.status.value)
    return await page_of(
        session,
        plain(statement),
        Draft.created_at.desc(),
        Draft.id,
        limit=query.limit,
        offset=offset_of(query.page, query.limit),
        total=total,
    )


@cross_tenant("counts every tenant's drafts that hold the trigrams (FTS5 has no tenant column)")
async def _matches(session: AsyncSession, search: str) -> ColumnElement[bool]:
    """The title or the content's text holds `search`, ignoring case.

    PostgreSQL: the pg_trgm indexes on lower() serve the LIKE, or the planner walks the tenant's
    newest drafts when it expects the LIKE to hold often. SQLite: FTS5 (detail=none) knows which
    drafts hold each trigram; when few drafts hold them all, the query reads those drafts by
    rowid and checks their text; when many do (a common word), it walks the tenant's newest
    drafts and checks their text, which finds a page of a common word in its first rows. Below
    a trigram's length there is nothing to look up: such a search reads the tenant's drafts."""
    # A pattern bound whole (not '%' || :needle || '%') is one pg_trgm can use.
    pattern = "%" + _LIKE_SPECIAL.sub(r"\\\g<0>", search.lower()) + "%"
    sqlite = session.get_bind().dialect.name == "sqlite"
    title: ColumnElement[str] = Draft.__table__.c.title
    content_text: ColumnElement[str] = Draft.__table__.c.content_text
    if not (sqlite and search.isascii()):
        # SQLite's own LIKE ignores ASCII case without a call to Python's lower() per draft;
        # beyond ASCII, and on PostgreSQL (whose indexes are on lower()), lower() it is.
        title, content_text = func.lower(title), func.lower(content_text)
    holds = or_(title.like(pattern, escape="\\"), content_text.like(pattern, escape="\\"))
    if not sqlite or len(search) < TRIGRAM:
        return holds
    query = text(f"{SEARCH_TABLE} MATCH :draft_search").bindparams(draft_search=_trigrams(search))
    candidates: Select[Any] = (
        select(literal_column("rowid")).select_from(table(SEARCH_TABLE)).where(query)
    )
    few = await session.scalar(
        select(func.count()).select_from(candidates.limit(FEW_CANDIDATES).subquery())
    )
    if (few or 0) >= FEW_CANDIDATES:
        return holds
    rowid: ColumnElement[int] = literal_column(f"{Draft.__tablename__}.rowid")
    return and_(rowid.in_(candidates.scalar_subquery()), holds)


def _trigrams(search: str) -> str:
    """An FTS5 query for the drafts holding each of the search's trigrams (FTS5 folds their
    case), at most SEARCH_TRIGRAMS of them spread over it: the text is checked anyway."""
    starts = range(len(search) - TRIGRAM + 1)
    trigrams = list(dict.fromkeys(search[n : n + TRIGRAM] for n in starts))
    if len(trigrams) > SEARCH_TRIGRAMS:
        step = (len(trigrams) - 1) / (SEARCH_TRIGRAMS - 1)
        trigrams = [trigrams[round(n * step)] for n in range(SEARCH_TRIGRAMS)]
    return " AND ".join('"' + trigram.replace('"', '""') + '"' for trigram in trigrams)


async def count_by_status(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, int]:
    result = await session.execute(
        select(DraftCount.status, DraftCount.live).where(DraftCount.tenant_id == tenant_id)
    )
    return {status: count for status, count in result.tuples()}


async def publishable(session: AsyncSession, tenant_id: uuid.UUID) -> list[Draft]:
    result = await session.execute(
        _live(tenant_id)
        .where(Draft.status == "approved")
        .order_by(Draft.approved_at.desc(), Draft.id)
        .limit(PUBLISHABLE_LIMIT)
    )
    return list(result.scalars())


async def of_job(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, limit: int
) -> list[Draft]:
    result = await session.execute(
        _live(tenant_id)
        .where(Draft.job_id == job_id)
        .order_by(Draft.created_at.desc(), Draft.id)
        .limit(limit)
    )
    return list(result.scalars())


async def job_figures(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_ids: list[uuid.UUID] | None,
    start: datetime | None,
    end: datetime | None,
) -> dict[uuid.UUID, tuple[dict[str, int], float | None]]:
    """Per job (these, or every job when None), its live drafts made in [start, end) (unbounded
    sides when None) counted by status, and their mean SEO score: one grouped query."""
    where = [Draft.tenant_id == tenant_id, Draft.deleted_at.is_(None), Draft.job_id.is_not(None)]
    if job_ids is not None:
        where.append(Draft.job_id.in_(job_ids))
    if start is not None:
        where.append(Draft.created_at >= start)
    if end is not None:
        where.append(Draft.created_at < end)
    rows = await session.execute(
        select(Draft.job_id, Draft.status, func.count(), func.sum(Draft.seo_score))
        .add_columns(func.count(Draft.seo_score))
        .where(*where)
        .group_by(Draft.job_id, Draft.status)
    )
    counts: dict[uuid.UUID, dict[str, int]] = {}
    scores: dict[uuid.UUID, tuple[float, int]] = {}
    for job_id, status, count, score_sum, scored in rows.tuples():
        counts.setdefault(job_id, {})[status] = int(count)
        total, n = scores.get(job_id, (0.0, 0))
        scores[job_id] = (total + float(score_sum or 0), n + int(scored))
    return {
        job_id: (by_status, scores[job_id][0] / scores[job_id][1] if scores[job_id][1] else None)
        for job_id, by_status in counts.items()
    }


async def job_drafts_made(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_ids: list[uuid.UUID] | None,
    start: datetime,
    end: datetime,
) -> list[tuple[datetime, str]]:
    """(created_at, status) of the live drafts of these jobs (any job when None) made in
    [start, end)."""
    statement = select(Draft.created_at, Draft.status).where(
        Draft.tenant_id == tenant_id,
        Draft.deleted_at.is_(None),
        Draft.job_id.is_not(None) if job_ids is None else Draft.job_id.in_(job_ids),
        Draft.created_at >= start,
        Draft.created_at < end,
    )
    return list((await session.execute(statement)).tuples())


async def unclaimed_approved(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> Draft | None:
    """The approved draft a select_existing day takes: not yet taken by another instance, the
    job's own first, then the oldest approved."""
    statement = (
        _live(tenant_id)
        .where(Draft.status == "approved", Draft.instance_id.is_(None))
        # case(): a draft without a job must not sort as NULL (first or last by dialect).
        .order_by(case((Draft.job_id == job_id, 0), else_=1), Draft.approved_at, Draft.id)
        .limit(1)
    )
    await lock_rows(
        session,
        Draft,
        Draft.tenant_id == tenant_id,
        Draft.status == "approved",
        Draft.instance_id.is_(None),
    )
    return (await session.execute(statement.with_for_update())).scalar_one_or_none()


async def revisions(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, limit: int, offset: int
) -> tuple[list[DraftRevision], int]:
    statement = select(DraftRevision).where(
        DraftRevision.tenant_id == tenant_id, DraftRevision.draft_id == draft_id
    )
    return await page_of(
        session, statement, DraftRevision.version.desc(), limit=limit, offset=offset
    )


async def revision(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, version: int
) -> DraftRevision | None:
    result = await session.execute(
        select(DraftRevision).where(
            DraftRevision.tenant_id == tenant_id,
            DraftRevision.draft_id == draft_id,
            DraftRevision.version == version,
        )
    )
    return result.scalar_one_or_none()


def _published(tenant_id: uuid.UUID) -> Select[Draft]:
    return _live(tenant_id).where(Draft.status == "published")


async def published(
    session: AsyncSession, tenant_id: uuid.UUID, limit: int, offset: int
) -> tuple[list[Draft], int]:
    return await page_of(
        session,
        _published(tenant_id),
        Draft.published_at.desc(),
        Draft.id,
        limit=limit,
        offset=offset,
    )


async def published_links(
    session: AsyncSession, tenant_id: uuid.UUID, limit: int
) -> list[tuple[str, str]]:
    """(title, published URL) of the tenant's newest published drafts that have a URL."""
    statement = (
        select(Draft.title, Draft.published_url)
        .where(
            Draft.tenant_id == tenant_id,
            Draft.deleted_at.is_(None),
            Draft.status == "published",
            Draft.published_url.is_not(None),
        )
        .order_by(Draft.published_at.desc(), Draft.id)
        .limit(limit)
    )
    return [(title, url) for title, url in (await session.execute(statement)).all() if url]


async def published_by_slug(session: AsyncSession, tenant_id: uuid.UUID, slug: str) -> Draft | None:
    statement = _published(tenant_id).where(Draft.slug == slug).order_by(Draft.published_at)
    return (await session.execute(statement.limit(1))).scalar_one_or_none()


async def slugs_like(
    session: AsyncSession, tenant_id: uuid.UUID, base: str, other_than: uuid.UUID
) -> set[str]:
    """The tenant's fixed slugs that are `base` or start with `base-`."""
    rows = await session.execute(
        select(Draft.slug).where(
            Draft.tenant_id == tenant_id,
            Draft.id != other_than,
            or_(Draft.slug == base, Draft.slug.startswith(base + "-", autoescape=True)),
        )
    )
    return {slug for slug in rows.scalars() if slug}


async def unassign(session: AsyncSession, tenant_id: uuid.UUID, assignee_id: str) -> int:
    """Clear the assignee of every draft of the tenant assigned to `assignee_id`; how many."""
    result = await session.execute(
        update(Draft)
        .where(Draft.tenant_id == tenant_id, Draft.assignee_id == assignee_id)
        .values(assignee_id=None)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


async def latest_ai_revision(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, at_most: int
) -> DraftRevision | None:
    """The draft's newest revision written by the generation pipeline, at or before `at_most`."""
    result = await session.execute(
        select(DraftRevision)
        .where(
            DraftRevision.tenant_id == tenant_id,
            DraftRevision.draft_id == draft_id,
            DraftRevision.author_type == "ai",
            DraftRevision.version <= at_most,
        )
        .order_by(DraftRevision.version.desc())
        .limit(1)
    )
    return result.scalar_one_or_none()


# --- comments -----------------------------------------------------------------------------------

comment = Owned(DraftComment)


async def threads(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    draft_id: uuid.UUID,
    *,
    include_resolved: bool,
    limit: int,
    offset: int,
) -> tuple[list[DraftComment], int]:
    """A page of the draft's threads (their first comments), oldest first, and how many."""
    statement = select(DraftComment).where(
        DraftComment.tenant_id == tenant_id,
        DraftComment.draft_id == draft_id,
        DraftComment.parent_id.is_(None),
    )
    if not include_resolved:
        statement = statement.where(DraftComment.resolved_at.is_(None))
    return await page_of(
        session,
        statement,
        DraftComment.created_at,
        DraftComment.id,
        limit=limit,
        offset=offset,
    )


async def replies(
    session: AsyncSession, tenant_id: uuid.UUID, parent_ids: list[uuid.UUID]
) -> list[DraftComment]:
    """The replies to these comments, oldest first."""
    if not parent_ids:
        return []
    result = await session.execute(
        select(DraftComment)
        .where(DraftComment.tenant_id == tenant_id, DraftComment.parent_id.in_(parent_ids))
        .order_by(DraftComment.created_at, DraftComment.id)
    )
    return list(result.scalars())


async def reply_count(session: AsyncSession, tenant_id: uuid.UUID, parent_id: uuid.UUID) -> int:
    count = await session.scalar(
        select(func.count()).where(
            DraftComment.tenant_id == tenant_id, DraftComment.parent_id == parent_id
        )
    )
    return int(count or 0)


async def published_between(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime
) -> list[tuple[datetime, int | None]]:
    """(published_at, seo_score) of the live drafts first published in [start, end)."""
    result = await session.execute(
        select(Draft.published_at, Draft.seo_score).where(
            Draft.tenant_id == tenant_id,
            Draft.deleted_at.is_(None),
            Draft.status == "published",
            Draft.published_at >= start,
            Draft.published_at < end,
        )
    )
    return [(published_at, score) for published_at, score in result.tuples() if published_at]


async def titles_since(
    session: AsyncSession, tenant_id: uuid.UUID, since: datetime, limit: int
) -> list[str]:
    """The titles of the live drafts created since `since`, newest first."""
    result = await session.execute(
        select(Draft.title)
        .where(Draft.tenant_id == tenant_id, Draft.deleted_at.is_(None), Draft.created_at >= since)
        .order_by(Draft.created_at.desc(), Draft.id)
        .limit(limit)
    )
    return [title for title in result.scalars() if title]


async def in_review(session: AsyncSession, tenant_id: uuid.UUID, limit: int) -> list[Draft]:
    """The live drafts in review, least recently changed first."""
    result = await session.execute(
        _live(tenant_id)
        .where(Draft.status == "reviewing")
        .order_by(Draft.updated_at, Draft.id)
        .limit(limit)
    )
    return list(result.scalars())


async def scores(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    draft_ids: list[uuid.UUID] | None,
    start: datetime | None,
    end: datetime | None,
    limit: int,
) -> list[tuple[uuid.UUID, int, datetime, int, str]]:
    """(draft, version, when, seo score, author type) of the revisions that carry a score, in
    [start, end) when given, of `draft_ids` when given; oldest first."""
    statement = select(
        DraftRevision.draft_id,
        DraftRevision.version,
        DraftRevision.created_at,
        DraftRevision.seo_score,
        DraftRevision.author_type,
    ).where(DraftRevision.tenant_id == tenant_id, DraftRevision.seo_score.is_not(None))
    if draft_ids is not None:
        statement = statement.where(DraftRevision.draft_id.in_(draft_ids))
    if start is not None:
        statement = statement.where(DraftRevision.created_at >= start)
    if end is not None:
        statement = statement.where(DraftRevision.created_at < end)
    statement = statement.order_by(DraftRevision.created_at, DraftRevision.version).limit(limit)
    return [
        (draft, version, at, int(score or 0), str(author))
        for draft, version, at, score, author in (await session.execute(statement)).all()
    ]


async def by_ids(
    session: AsyncSession, tenant_id: uuid.UUID, draft_ids: list[uuid.UUID]
) -> list[Draft]:
    if not draft_ids:
        return []
    statement = select(Draft).where(Draft.tenant_id == tenant_id, Draft.id.in_(draft_ids))
    return list((await session.execute(statement)).scalars().all())
