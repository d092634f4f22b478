"""Every query on drafts and their revisions; the tenant always comes first."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Select, case, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts.models import Draft, DraftComment, DraftRevision
from contentplatform.drafts.schemas import ListDraftsInput
from contentplatform.kit.db import Owned, counts_by, lock_rows, page_of, plain
from contentplatform.kit.schemas import offset_of

PUBLISHABLE_LIMIT = 100


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
    as from a Draft), and how many there are."""
    statement = _live(tenant_id)
    if query.status is not None:
        statement = statement.where(Draft.status == query.status.value)
    if query.job_id is not None:
        statement = statement.where(Draft.job_id == query.job_id)
    if query.search:
        needle = query.search.lower()
        statement = statement.where(
            or_(
                func.lower(Draft.title).contains(needle, autoescape=True),
                func.lower(Draft.content_text).contains(needle, autoescape=True),
            )
        )
    return await page_of(
        session,
        plain(statement),
        Draft.created_at.desc(),
        Draft.id,
        limit=query.limit,
        offset=offset_of(query.page, query.limit),
    )


async def count_by_status(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, int]:
    return await counts_by(
        session, Draft.status, Draft.tenant_id == tenant_id, Draft.deleted_at.is_(None)
    )


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
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> tuple[dict[str, int], float | None]:
    """The job's live drafts counted by status, and their mean SEO score."""
    where = (Draft.tenant_id == tenant_id, Draft.deleted_at.is_(None), Draft.job_id == job_id)
    counts = await session.execute(
        select(Draft.status, func.count()).where(*where).group_by(Draft.status)
    )
    mean = await session.scalar(select(func.avg(Draft.seo_score)).where(*where))
    by_status = {status: count for status, count in counts.tuples()}
    return by_status, None if mean is None else float(mean)


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
