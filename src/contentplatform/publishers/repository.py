"""Every query on connections, attempts and publications; the tenant always comes first."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Select, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Owned, cross_tenant, owned_by, page_of
from contentplatform.publishers.models import (
    UNFINISHED,
    Publication,
    PublishAttempt,
    PublisherConnection,
)


def _connections(tenant_id: uuid.UUID) -> Select[PublisherConnection]:
    return select(PublisherConnection).where(
        PublisherConnection.tenant_id == tenant_id, PublisherConnection.deleted_at.is_(None)
    )


connection = Owned(PublisherConnection)


async def connection_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    statement = select(func.count()).select_from(_connections(tenant_id).subquery())
    return int(await session.scalar(statement) or 0)


async def connections(
    session: AsyncSession, tenant_id: uuid.UUID, type: str | None, status: str | None
) -> list[PublisherConnection]:
    statement = _connections(tenant_id)
    if type is not None:
        statement = statement.where(PublisherConnection.type == type)
    if status is not None:
        statement = statement.where(PublisherConnection.status == status)
    rows = await session.execute(
        statement.order_by(PublisherConnection.created_at, PublisherConnection.id)
    )
    return list(rows.scalars())


async def default_connection(
    session: AsyncSession, tenant_id: uuid.UUID
) -> PublisherConnection | None:
    statement = _connections(tenant_id).where(PublisherConnection.is_default.is_(True))
    return (await session.execute(statement.limit(1))).scalar_one_or_none()


async def clear_default(session: AsyncSession, tenant_id: uuid.UUID, keep: uuid.UUID) -> None:
    await session.execute(
        update(PublisherConnection)
        .where(
            PublisherConnection.tenant_id == tenant_id,
            PublisherConnection.id != keep,
            PublisherConnection.is_default.is_(True),
        )
        .values(is_default=False)
    )


attempt = Owned(PublishAttempt)


async def attempts(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    limit: int,
    offset: int,
    draft_id: uuid.UUID | None = None,
    connection_id: uuid.UUID | None = None,
    status: str | None = None,
) -> tuple[list[PublishAttempt], int]:
    """Attempts of a draft or of a connection, newest first."""
    statement = select(PublishAttempt).where(PublishAttempt.tenant_id == tenant_id)
    if draft_id is not None:
        statement = statement.where(PublishAttempt.draft_id == draft_id)
    if connection_id is not None:
        statement = statement.where(PublishAttempt.connection_id == connection_id)
    if status is not None:
        statement = statement.where(PublishAttempt.status == status)
    newest_first = (PublishAttempt.created_at.desc(), PublishAttempt.id)
    return await page_of(session, statement, *newest_first, limit=limit, offset=offset)


@cross_tenant("the reconciler's sweep of every tenant's unfinished work")
async def unfinished_attempts(
    session: AsyncSession, started_before: datetime
) -> list[PublishAttempt]:
    """Across tenants, for the reconciler: attempts not done that were made before a moment."""
    rows = await session.execute(
        select(PublishAttempt)
        .where(UNFINISHED, PublishAttempt.created_at < started_before)
        .order_by(PublishAttempt.created_at)
        .limit(500)
    )
    return list(rows.scalars())


async def publication(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, connection_id: uuid.UUID
) -> Publication | None:
    return await owned_by(
        session, Publication, tenant_id, draft_id=draft_id, connection_id=connection_id
    )


async def live_connection_ids(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID
) -> list[uuid.UUID]:
    """The connections (not deleted) the draft is live on, oldest publication first."""
    rows = await session.execute(
        select(Publication.connection_id)
        .join(PublisherConnection, PublisherConnection.id == Publication.connection_id)
        .where(
            Publication.tenant_id == tenant_id,
            Publication.draft_id == draft_id,
            Publication.remote_status == "published",
            PublisherConnection.tenant_id == tenant_id,
            PublisherConnection.deleted_at.is_(None),
        )
        .order_by(Publication.created_at, Publication.id)
    )
    return list(rows.scalars())


async def unfinished_of_draft(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID
) -> list[PublishAttempt]:
    """The draft's attempts not done yet (scheduled, pending, running), oldest first."""
    rows = await session.execute(
        select(PublishAttempt)
        .where(
            PublishAttempt.tenant_id == tenant_id,
            PublishAttempt.draft_id == draft_id,
            UNFINISHED,
        )
        .order_by(PublishAttempt.created_at, PublishAttempt.id)
    )
    return list(rows.scalars())


async def job_attempt_outcomes(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> tuple[int, int]:
    """(succeeded, finished) publish attempts of a job's drafts."""
    finished = ("succeeded", "failed")
    rows = await session.execute(
        select(PublishAttempt.status, func.count())
        .join(Draft, Draft.id == PublishAttempt.draft_id)
        .where(
            PublishAttempt.tenant_id == tenant_id,
            Draft.tenant_id == tenant_id,
            Draft.job_id == job_id,
            PublishAttempt.mode != "unpublish",
            PublishAttempt.status.in_(finished),
        )
        .group_by(PublishAttempt.status)
    )
    counts = {status: int(count) for status, count in rows.tuples()}
    return counts.get("succeeded", 0), sum(counts.values())


async def jobs_attempt_outcomes(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_ids: list[uuid.UUID] | None,
    start: datetime,
    end: datetime,
) -> tuple[int, int]:
    """(succeeded, finished) publish attempts, finished in [start, end), of the drafts of these
    jobs (of any job when None)."""
    where = [
        PublishAttempt.tenant_id == tenant_id,
        Draft.tenant_id == tenant_id,
        Draft.job_id.is_not(None) if job_ids is None else Draft.job_id.in_(job_ids),
        PublishAttempt.mode != "unpublish",
        PublishAttempt.status.in_(("succeeded", "failed")),
        PublishAttempt.finished_at >= start,
        PublishAttempt.finished_at < end,
    ]
    rows = await session.execute(
        select(PublishAttempt.status, func.count())
        .join(Draft, Draft.id == PublishAttempt.draft_id)
        .where(*where)
        .group_by(PublishAttempt.status)
    )
    counts = {status: int(count) for status, count in rows.tuples()}
    return counts.get("succeeded", 0), sum(counts.values())


async def scheduled_between(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime, limit: int
) -> list[tuple[PublishAttempt, str]]:
    """The tenant's publishes scheduled in [start, end), soonest first, with their draft's
    title."""
    rows = await session.execute(
        select(PublishAttempt, Draft.title)
        .join(Draft, (Draft.id == PublishAttempt.draft_id) & (Draft.tenant_id == tenant_id))
        .where(
            PublishAttempt.tenant_id == tenant_id,
            PublishAttempt.status == "scheduled",
            PublishAttempt.scheduled_at >= start,
            PublishAttempt.scheduled_at < end,
        )
        .order_by(PublishAttempt.scheduled_at, PublishAttempt.id)
        .limit(limit)
    )
    return [(attempt, title) for attempt, title in rows.tuples()]


async def published_copies(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime, limit: int
) -> list[tuple[datetime, str, uuid.UUID, str, bool]]:
    """(finished at, URL, draft, its title, first) of the publish attempts that put a draft on a
    target in [start, end), newest first; `first` when no earlier attempt had put that draft on
    that target (a publication), else it updated the copy."""
    earlier = PublishAttempt.__table__.alias("earlier")
    first = ~(
        select(earlier.c.id)
        .where(
            earlier.c.tenant_id == tenant_id,
            earlier.c.draft_id == PublishAttempt.draft_id,
            earlier.c.connection_id == PublishAttempt.connection_id,
            earlier.c.mode == "publish",
            earlier.c.status == "succeeded",
            earlier.c.finished_at < PublishAttempt.finished_at,
        )
        .exists()
    )
    rows = await session.execute(
        select(
            PublishAttempt.finished_at,
            PublishAttempt.external_url,
            PublishAttempt.draft_id,
            Draft.title,
            first,
        )
        .join(Draft, Draft.id == PublishAttempt.draft_id)
        .where(
            PublishAttempt.tenant_id == tenant_id,
            Draft.tenant_id == tenant_id,
            PublishAttempt.mode == "publish",
            PublishAttempt.status == "succeeded",
            PublishAttempt.external_url.is_not(None),
            PublishAttempt.finished_at >= start,
            PublishAttempt.finished_at < end,
        )
        .order_by(PublishAttempt.finished_at.desc(), PublishAttempt.id.desc())
        .limit(limit)
    )
    return [
        (at, url, draft_id, title, bool(is_first))
        for at, url, draft_id, title, is_first in rows.tuples()
        if at is not None and url is not None  # both are, by the query: for the types
    ]


async def publications(
    session: AsyncSession, tenant_id: uuid.UUID, draft_ids: Sequence[uuid.UUID] | None, limit: int
) -> list[tuple[uuid.UUID, uuid.UUID, str, datetime | None]]:
    """(draft, connection, URL, first put there) of every target a draft was published on (a
    succeeded publish attempt with a URL), oldest first; of `draft_ids` only when given."""
    first = func.min(PublishAttempt.finished_at)
    statement = (
        select(
            PublishAttempt.draft_id,
            PublishAttempt.connection_id,
            PublishAttempt.external_url,
            first,
        )
        .where(
            PublishAttempt.tenant_id == tenant_id,
            PublishAttempt.mode == "publish",
            PublishAttempt.status == "succeeded",
            PublishAttempt.external_url.is_not(None),
        )
        .group_by(
            PublishAttempt.draft_id, PublishAttempt.connection_id, PublishAttempt.external_url
        )
        .order_by(first)
        .limit(limit)
    )
    if draft_ids is not None:
        statement = statement.where(PublishAttempt.draft_id.in_(list(draft_ids)))
    return [
        (draft, connection, str(url), at)
        for draft, connection, url, at in (await session.execute(statement)).all()
    ]
