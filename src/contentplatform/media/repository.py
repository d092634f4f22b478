"""Every query on media assets and their attachments; the tenant always comes first. An
attachment counts while its draft is live (a soft-deleted draft's attachments are kept, unseen)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, delete, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Owned, cross_tenant, owned_by, page_of
from contentplatform.media.models import MediaAsset, MediaAttachment

EXPIRING_WITHIN = timedelta(days=30)

get = Owned(MediaAsset)


def _live(tenant_id: uuid.UUID) -> Select[MediaAsset]:
    return select(MediaAsset).where(
        MediaAsset.tenant_id == tenant_id, MediaAsset.deleted_at.is_(None)
    )


async def stored_bytes(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    total = await session.scalar(
        select(func.coalesce(func.sum(MediaAsset.size_bytes), 0)).where(
            MediaAsset.tenant_id == tenant_id,
            MediaAsset.deleted_at.is_(None),
            MediaAsset.storage == "internal",
        )
    )
    return int(total or 0)


@cross_tenant("the daily sweep of every tenant's licences ending")
async def licences_ending(session: AsyncSession, now: datetime, limit: int) -> list[MediaAsset]:
    """Live assets of every tenant used by a live draft whose licence has expired or expires
    within EXPIRING_WITHIN, the latest end first (those ahead, then the ones ended last): the
    ones a licence alert may be due for."""
    statement = (
        select(MediaAsset)
        .where(
            MediaAsset.deleted_at.is_(None),
            MediaAsset.license_expires_at.is_not(None),
            MediaAsset.license_expires_at <= now + EXPIRING_WITHIN,
            exists().where(
                MediaAttachment.tenant_id == MediaAsset.tenant_id,
                MediaAttachment.media_id == MediaAsset.id,
                Draft.id == MediaAttachment.draft_id,
                Draft.deleted_at.is_(None),
            ),
        )
        .order_by(MediaAsset.license_expires_at.desc())
        .limit(limit)
    )
    return list((await session.scalars(statement)).all())


async def claim_alert(
    session: AsyncSession, tenant_id: uuid.UUID, asset_id: uuid.UUID, marker: str
) -> bool:
    """Record `marker` as the asset's last licence alert unless it is already: whether this
    transaction is the one to tell it (another process may have raced it)."""
    claimed = await session.execute(
        update(MediaAsset)
        .where(
            MediaAsset.tenant_id == tenant_id,
            MediaAsset.id == asset_id,
            or_(MediaAsset.license_alerted.is_(None), MediaAsset.license_alerted != marker),
        )
        .values(license_alerted=marker)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(claimed, "rowcount", 0) == 1)


def _in_use(tenant_id: uuid.UUID) -> ColumnElement[bool]:
    """The asset is attached to a live draft of the tenant."""
    return exists().where(
        MediaAttachment.tenant_id == tenant_id,
        MediaAttachment.media_id == MediaAsset.id,
        Draft.id == MediaAttachment.draft_id,
        Draft.deleted_at.is_(None),
    )


def license_status_is(status: str, now: datetime) -> ColumnElement[bool]:
    """What `license_status` is computed from, as a condition (service.license_status says the
    same in Python): expired before unverified before expiring before valid."""
    expires = MediaAsset.license_expires_at
    expired = expires.is_not(None) & (expires <= now)
    if status == "expired":
        return expired
    verified = MediaAsset.license_verified.is_(True)
    if status == "unverified":
        return ~verified & ~expired
    expiring = expires.is_not(None) & (expires > now) & (expires <= now + EXPIRING_WITHIN)
    if status == "expiring":
        return verified & expiring
    return verified & (expires.is_(None) | (expires > now + EXPIRING_WITHIN))


@dataclass(frozen=True)
class Filters:
    search: str | None
    kind: str | None
    tags: list[str]
    source: str | None
    license_status: str | None
    unused: bool | None
    now: datetime


_SORTS: dict[str, Any] = {
    "created_at": MediaAsset.created_at,
    "filename": func.lower(MediaAsset.filename),
    "bytes": MediaAsset.size_bytes,
}


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    filters: Filters,
    *,
    sort_by: str,
    descending: bool,
    limit: int,
    offset: int,
) -> tuple[list[MediaAsset], int]:
    statement = _live(tenant_id)
    if filters.search:
        needle = filters.search.lower()
        statement = statement.where(
            or_(
                *(
                    func.lower(column).contains(needle, autoescape=True)
                    for column in (
                        MediaAsset.title,
                        MediaAsset.alt_text,
                        MediaAsset.caption,
                        MediaAsset.filename,
                        MediaAsset.tag_keys,
                    )
                )
            )
        )
    if filters.kind is not None:
        statement = statement.where(MediaAsset.kind == filters.kind)
    for tag in filters.tags:
        statement = statement.where(MediaAsset.tag_keys.contains(f"\n{tag}\n", autoescape=True))
    if filters.source is not None:
        statement = statement.where(MediaAsset.source == filters.source)
    if filters.license_status is not None:
        statement = statement.where(license_status_is(filters.license_status, filters.now))
    if filters.unused is not None:
        in_use = _in_use(tenant_id)
        statement = statement.where(~in_use if filters.unused else in_use)
    column = _SORTS[sort_by]
    ordered = column.desc().nulls_last() if descending else column.asc().nulls_last()
    tie = MediaAsset.id.desc() if descending else MediaAsset.id.asc()
    return await page_of(session, statement, ordered, tie, limit=limit, offset=offset)


async def by_content_hash(
    session: AsyncSession, tenant_id: uuid.UUID, content_hash: str
) -> MediaAsset | None:
    statement = _live(tenant_id).where(MediaAsset.content_hash == content_hash)
    return (await session.execute(statement.limit(1))).scalar_one_or_none()


async def by_storage_path(
    session: AsyncSession, tenant_id: uuid.UUID, storage_path: str
) -> MediaAsset | None:
    """The live asset whose file is at `storage_path`, if any."""
    statement = _live(tenant_id).where(MediaAsset.storage_path == storage_path)
    return (await session.execute(statement.limit(1))).scalar_one_or_none()


async def by_provider_asset(
    session: AsyncSession, tenant_id: uuid.UUID, provider: str, asset_id: str
) -> MediaAsset | None:
    statement = _live(tenant_id).where(
        MediaAsset.provider == provider, MediaAsset.provider_asset_id == asset_id
    )
    return (await session.execute(statement.limit(1))).scalar_one_or_none()


async def usage_counts(
    session: AsyncSession, tenant_id: uuid.UUID, media_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, int]:
    """How many live drafts each of these assets is attached to."""
    if not media_ids:
        return {}
    statement = (
        select(MediaAttachment.media_id, func.count(func.distinct(MediaAttachment.draft_id)))
        .join(Draft, Draft.id == MediaAttachment.draft_id)
        .where(
            MediaAttachment.tenant_id == tenant_id,
            MediaAttachment.media_id.in_(media_ids),
            Draft.deleted_at.is_(None),
        )
        .group_by(MediaAttachment.media_id)
    )
    return {media_id: count for media_id, count in (await session.execute(statement)).tuples()}


async def drafts_of(
    session: AsyncSession, tenant_id: uuid.UUID, media_id: uuid.UUID
) -> list[tuple[uuid.UUID, str]]:
    """(id, status) of every draft the asset is attached to, live or soft-deleted."""
    statement = (
        select(Draft.id, Draft.status, Draft.deleted_at)
        .join(MediaAttachment, MediaAttachment.draft_id == Draft.id)
        .where(MediaAttachment.tenant_id == tenant_id, MediaAttachment.media_id == media_id)
        .distinct()
    )
    return [
        (draft_id, status if deleted_at is None else "deleted")
        for draft_id, status, deleted_at in (await session.execute(statement)).tuples()
    ]


async def remove_attachments(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    media_id: uuid.UUID,
    *,
    draft_id: uuid.UUID | None = None,
    role: str | None = None,
) -> int:
    """Remove the asset's attachments (to one draft, of one role, when given); how many."""
    statement = delete(MediaAttachment).where(
        MediaAttachment.tenant_id == tenant_id, MediaAttachment.media_id == media_id
    )
    if draft_id is not None:
        statement = statement.where(MediaAttachment.draft_id == draft_id)
    if role is not None:
        statement = statement.where(MediaAttachment.role == role)
    result = await session.execute(statement.execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0)


async def attachment(
    session: AsyncSession, tenant_id: uuid.UUID, media_id: uuid.UUID, draft_id: uuid.UUID, role: str
) -> MediaAttachment | None:
    return await owned_by(
        session, MediaAttachment, tenant_id, media_id=media_id, draft_id=draft_id, role=role
    )


async def remove_featured(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, keep: uuid.UUID
) -> int:
    """Remove the draft's featured attachment unless it is asset `keep`'s; how many."""
    statement = delete(MediaAttachment).where(
        MediaAttachment.tenant_id == tenant_id,
        MediaAttachment.draft_id == draft_id,
        MediaAttachment.role == "featured",
        MediaAttachment.media_id != keep,
    )
    result = await session.execute(statement.execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0)


async def images(session: AsyncSession, tenant_id: uuid.UUID, limit: int) -> list[MediaAsset]:
    """The tenant's newest live images."""
    statement = (
        _live(tenant_id)
        .where(MediaAsset.kind == "image")
        .order_by(MediaAsset.created_at.desc(), MediaAsset.id)
        .limit(limit)
    )
    return list((await session.scalars(statement)).all())


async def inline_of(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID
) -> list[MediaAsset]:
    """The live images the draft shows in its body, in their attachments' order."""
    statement = (
        _live(tenant_id)
        .join(
            MediaAttachment,
            (MediaAttachment.media_id == MediaAsset.id)
            & (MediaAttachment.tenant_id == tenant_id)
            & (MediaAttachment.draft_id == draft_id)
            & (MediaAttachment.role == "inline"),
        )
        .where(MediaAsset.kind == "image")
        .order_by(MediaAttachment.position, MediaAttachment.attached_at)
    )
    return list((await session.scalars(statement)).all())


async def featured_of(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID
) -> MediaAsset | None:
    """The live asset the draft has as its featured image, if any."""
    statement = _live(tenant_id).join(
        MediaAttachment,
        (MediaAttachment.media_id == MediaAsset.id)
        & (MediaAttachment.tenant_id == tenant_id)
        & (MediaAttachment.draft_id == draft_id)
        & (MediaAttachment.role == "featured"),
    )
    found: MediaAsset | None = (await session.scalars(statement.limit(1))).first()
    return found


async def next_position(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, role: str
) -> int:
    """After the draft's last attachment of `role`."""
    statement = select(func.max(MediaAttachment.position)).where(
        MediaAttachment.tenant_id == tenant_id,
        MediaAttachment.draft_id == draft_id,
        MediaAttachment.role == role,
    )
    last = await session.scalar(statement)
    return 0 if last is None else int(last) + 1


async def usage_page(
    session: AsyncSession, tenant_id: uuid.UUID, media_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[Any], int]:
    """The asset's attachments to live drafts, newest first, with their draft's title, status
    and publication."""
    statement: Any = (
        select(
            MediaAttachment.draft_id,
            MediaAttachment.role,
            MediaAttachment.attached_at,
            Draft.title,
            Draft.status,
            Draft.published_url,
            Draft.published_at,
        )
        .join(Draft, Draft.id == MediaAttachment.draft_id)
        .where(
            MediaAttachment.tenant_id == tenant_id,
            MediaAttachment.media_id == media_id,
            Draft.tenant_id == tenant_id,
            Draft.deleted_at.is_(None),
        )
    )
    return await page_of(
        session,
        statement,
        MediaAttachment.attached_at.desc(),
        MediaAttachment.id,
        limit=limit,
        offset=offset,
    )


async def licence_figures(
    session: AsyncSession, tenant_id: uuid.UUID, now: datetime, limit: int
) -> tuple[int, int, list[MediaAsset]]:
    """The tenant's live assets: how many, how many need attention (licence unverified,
    expiring or expired), and up to `limit` of those a live draft uses whose licence has ended
    or ends within EXPIRING_WITHIN (the ones `media.license_*` alerts are told of)."""
    live = (MediaAsset.tenant_id == tenant_id, MediaAsset.deleted_at.is_(None))
    attention = or_(
        license_status_is("unverified", now),
        license_status_is("expiring", now),
        license_status_is("expired", now),
    )
    total, flagged = (
        await session.execute(
            select(func.count(), func.count().filter(attention))
            .select_from(MediaAsset)
            .where(*live)
        )
    ).one()
    ending = await session.scalars(
        select(MediaAsset)
        .where(
            *live,
            MediaAsset.license_expires_at.is_not(None),
            MediaAsset.license_expires_at <= now + EXPIRING_WITHIN,
            _in_use(tenant_id),
        )
        .order_by(MediaAsset.license_expires_at, MediaAsset.id)
        .limit(limit)
    )
    return int(total), int(flagged), list(ending.all())
