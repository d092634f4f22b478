"""Publish attempts: what each try of the publishing workflow records, and reading them back.

Each function runs in the transaction of one workflow step (or a request): a try begins (the
attempt running, what to send where), then succeeds (the draft published, the copy on the target
remembered) or fails (for now, or for good). Never commits.

An unpublish attempt (mode `unpublish`, drafts.unpublish) runs the same way and takes the copy
down: once no target keeps the draft live, the draft goes back from published to approved.
Events: `draft.unpublished` per copy taken down (drafts.service.mark_published tells
`draft.published`), `publish_attempt.failed` when an attempt of either kind fails for good.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.drafts import html
from contentplatform.drafts import publication as draft_publication
from contentplatform.drafts import service as drafts
from contentplatform.drafts.models import Draft
from contentplatform.events import service as events
from contentplatform.kit.db import utcnow
from contentplatform.kit.schemas import offset_of
from contentplatform.media import service as media
from contentplatform.publishers import repository, schemas
from contentplatform.publishers.models import Publication, PublishAttempt, PublisherConnection
from contentplatform.publishers.service import require
from contentplatform.publishers.strategies.base import (
    Article,
    AuthFailed,
    Credit,
    Invalid,
    Picture,
    PublishError,
    Remote,
    Result,
)
from contentplatform.storage.store import ObjectMissing, ObjectStore

IN_FLIGHT = ("pending", "running")
# How long the signed URL of a featured image handed to a target works: the target fetches it
# while the try runs (Shopify, Webflow), a webhook receiver when the event arrives.
PICTURE_URL_SECONDS = 3600


async def draft_attempts(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.DraftAttemptsInput
) -> schemas.DraftAttemptPage:
    await drafts.require(session, tenant_id, data.id)
    rows, total = await _page(session, tenant_id, data.page, data.limit, draft_id=data.id)
    return schemas.DraftAttemptPage(data=rows, total=total)


async def connection_attempts(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListAttemptsInput
) -> schemas.AttemptPage:
    await require(session, tenant_id, data.id)
    rows, total = await _page(
        session, tenant_id, data.page, data.limit, connection_id=data.id, status=data.status
    )
    return schemas.AttemptPage(data=rows, total=total, page=data.page, limit=data.limit)


async def _page(
    session: AsyncSession, tenant_id: uuid.UUID, page: int, limit: int, **filters: Any
) -> tuple[list[PublishAttempt], int]:
    """Page `page` of the tenant's attempts matching `filters`, newest first."""
    offset = offset_of(page, limit)
    return await repository.attempts(session, tenant_id, limit=limit, offset=offset, **filters)


async def success_rate(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> float:
    """Of a job's drafts' finished publish attempts, the share that succeeded (0 with none)."""
    succeeded, finished = await repository.job_attempt_outcomes(session, tenant_id, job_id)
    return round(succeeded / finished, 4) if finished else 0.0


async def jobs_outcomes(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    job_ids: list[uuid.UUID] | None,
    start: datetime,
    end: datetime,
) -> tuple[int, int]:
    """(succeeded, finished) publish attempts of job drafts (these jobs', or any job's when
    None) that finished in [start, end)."""
    return await repository.jobs_attempt_outcomes(session, tenant_id, job_ids, start, end)


async def begin_try(
    session: AsyncSession, tenant_id: uuid.UUID, attempt_id: uuid.UUID
) -> (
    tuple[PublishAttempt, PublisherConnection, Article, Remote | None, media.DraftImages | None]
    | None
):
    """Start one try: the attempt running with one more try, and what to send where. None
    when there is nothing to do (the attempt finished or was cancelled); a draft that can no
    longer be published fails the attempt here, and so does a featured image whose licence
    forbids it now (expired since it was attached, say)."""
    attempt = await repository.attempt(session, tenant_id, attempt_id, for_update=True)
    if attempt is None or attempt.status not in ("scheduled", *IN_FLIGHT):
        return None
    now = utcnow()
    failure = None
    draft = await drafts.require_or_none(session, tenant_id, attempt.draft_id, for_update=True)
    connection = await repository.connection(session, tenant_id, attempt.connection_id)
    publication = None
    if draft is not None and connection is not None:
        publication = await repository.publication(session, tenant_id, draft.id, connection.id)
    if draft is None:
        failure = "The draft was deleted."
    elif connection is None:
        failure = "The publisher connection was deleted."
    elif connection.status == "disabled":
        failure = f"The publisher connection {connection.name!r} is disabled."
    elif attempt.mode == "unpublish":
        # Taking a copy down needs the copy, whatever the draft's status (archived included).
        if publication is None:
            failure = "The draft has no copy on that connection to take down."
    elif draft.status not in ("approved", "published"):
        failure = f"The draft is {draft.status} now; it needs approving before it is published."
    featured = None
    if failure is None and draft is not None and attempt.mode != "unpublish":
        featured = await media.draft_images(session, tenant_id, draft.id)
        failure = featured.refused
    if failure is not None or draft is None or connection is None:
        fail(session, attempt, {"code": "invalid", "message": failure, "retryable": False})
        return None
    attempt.status = "running"
    attempt.tries += 1
    attempt.started_at = attempt.started_at or now
    attempt.draft_version = draft.version
    attempt.updated_at = now
    remote = None
    if publication is not None:
        remote = Remote(
            publication.external_id, publication.remote_version, publication.external_url
        )
    return attempt, connection, article_of(draft), remote, featured


async def with_featured_image(
    article: Article, images: media.DraftImages | None, store: ObjectStore, settings: Settings
) -> Article:
    """`article` with its featured and inline images as the targets take them: our file read
    from storage, with a signed URL (an hour) for the targets that fetch it themselves; a
    hotlinked stock image by its provider's URL alone. Read outside any transaction."""
    if images is None:
        return article
    featured = None
    if images.featured is not None:
        featured = await _picture(images.featured, "featured", store, settings)
    inline = [await _picture(image, "inline", store, settings) for image in images.inline]
    return replace(article, featured_image=featured, inline_images=inline)


async def _picture(
    featured: media.FeaturedImage, role: str, store: ObjectStore, settings: Settings
) -> Picture:
    attribution = featured.license.attribution
    credit = None
    if attribution.required and attribution.text:
        credit = Credit(
            text=attribution.text,
            author_name=attribution.author_name,
            author_url=attribution.author_url,
            source_name=featured.license.source_name,
            source_url=featured.license.source_url,
        )
    data, url = None, featured.hotlink_url or ""
    if featured.storage_path is not None:
        try:
            data = await store.get(featured.storage_path)
        except ObjectMissing:
            raise Invalid(
                f"The {role} image's file ({featured.filename}) is gone from storage; "
                "attach another."
            ) from None
        url = await store.download_url(
            featured.storage_path, expires_in=PICTURE_URL_SECONDS, base_url=settings.public_base_url
        )
    return Picture(
        url=url,
        alt=featured.alt_text,
        filename=featured.filename,
        mime_type=featured.mime_type,
        content_hash=featured.content_hash,
        data=data,
        caption=featured.caption,
        credit=credit,
    )


def article_of(draft: Draft) -> Article:
    """The draft as every target receives it. A Sources list naming the tenant's files (drafts
    generated before citations moved to the provenance) never leaves."""
    meta = draft.seo_meta
    keywords = meta.get("focus_keywords")
    return Article(
        draft_id=draft.id,
        version=draft.version,
        title=draft.title,
        html=html.without_private_citations(draft.content),
        excerpt=draft.excerpt,
        slug=draft_publication.slug_of(draft),
        seo_title=_text(meta.get("seo_title")),
        meta_description=_text(meta.get("meta_description")),
        tags=[k for k in keywords if isinstance(k, str)] if isinstance(keywords, list) else [],
        canonical_url=_text(meta.get("canonical_url")),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


async def record_success(
    session: AsyncSession, tenant_id: uuid.UUID, attempt_id: uuid.UUID, result: Result
) -> None:
    attempt = await repository.attempt(session, tenant_id, attempt_id, for_update=True)
    if attempt is None:
        return
    attempt.external_id = result.external_id
    attempt.external_url = result.external_url
    attempt.error = None
    _finish(attempt, "succeeded", None)
    publication = await repository.publication(
        session, tenant_id, attempt.draft_id, attempt.connection_id
    )
    if publication is None:
        publication = Publication(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            draft_id=attempt.draft_id,
            connection_id=attempt.connection_id,
        )
        session.add(publication)
    # Where the copy was live, for the event of its taking down.
    was_at = publication.external_url
    publication.external_id = result.external_id
    publication.external_url = result.external_url
    publication.remote_version = result.remote_version
    publication.remote_status = result.status
    publication.published_at = result.published_at
    publication.updated_at = utcnow()
    connection = await repository.connection(session, tenant_id, attempt.connection_id)
    if connection is not None and connection.status == "error":
        connection.status, connection.last_error = "active", None
    # Locked after the publication is written: of two copies taken down at once, the second
    # to get here sees the first one down.
    draft = await drafts.require_or_none(session, tenant_id, attempt.draft_id, for_update=True)
    if draft is None:
        return
    if result.status == "published":
        # An archived draft's copy may still go live (a try under way when it was archived):
        # the copy is recorded, the draft stays archived. mark_published tells `draft.published`.
        if draft.status in ("approved", "published"):
            await draft_publication.mark_published(
                session, draft, result.external_url, result.published_at
            )
    elif attempt.mode == "unpublish":
        live = await repository.live_connection_ids(session, tenant_id, draft.id)
        if draft.status == "published" and not live:
            drafts.mark_unpublished(session, draft)
        events.emit(
            session,
            tenant_id,
            "draft.unpublished",
            resource_id=draft.id,
            payload={
                **drafts.event_payload(draft),
                "publisher_connection_id": attempt.connection_id,
                "attempt_id": attempt.id,
                "external_id": attempt.external_id,
                # Where the copy was live.
                "external_url": was_at,
            },
        )


async def record_failure(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    attempt_id: uuid.UUID,
    error: PublishError,
    *,
    final: bool,
) -> None:
    """Keep the error on the attempt; `final` fails it (else it waits for its next try). The
    draft keeps its status. A refusal of our credentials marks the connection `error`."""
    attempt = await repository.attempt(session, tenant_id, attempt_id, for_update=True)
    if attempt is None:
        return
    attempt.error = error.as_json()
    attempt.updated_at = utcnow()
    if final:
        fail(session, attempt, error.as_json())
    if isinstance(error, AuthFailed):
        connection = await repository.connection(session, tenant_id, attempt.connection_id)
        if connection is not None and connection.status == "active":
            connection.status, connection.last_error = "error", error.message


async def give_up(
    session: AsyncSession, tenant_id: uuid.UUID, attempt_id: uuid.UUID, reason: str
) -> None:
    attempt = await repository.attempt(session, tenant_id, attempt_id, for_update=True)
    if attempt is not None and attempt.status in ("scheduled", *IN_FLIGHT):
        error = {"code": "transient", "message": reason, "retryable": True}
        fail(session, attempt, error)


def fail(session: AsyncSession, attempt: PublishAttempt, error: dict[str, Any]) -> None:
    """The attempt failed for good: finished with `error`, and `publish_attempt.failed` told."""
    _finish(attempt, "failed", error)
    events.emit(
        session,
        attempt.tenant_id,
        "publish_attempt.failed",
        resource_id=attempt.draft_id,
        payload={
            "attempt_id": attempt.id,
            "draft_id": attempt.draft_id,
            "publisher_connection_id": attempt.connection_id,
            "mode": attempt.mode,
            "tries": attempt.tries,
            "error": error,
        },
    )


def _finish(attempt: PublishAttempt, status: str, error: dict[str, Any] | None) -> None:
    attempt.status = status
    attempt.error = error
    attempt.finished_at = attempt.updated_at = utcnow()
