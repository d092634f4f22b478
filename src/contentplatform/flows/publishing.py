"""Publishing a draft by hand (drafts.publish): whether it may go, and where; and taking it
down again (drafts.unpublish, drafts.archive with unpublishRemote).

Approved drafts publish and published ones republish (anything else is 409); a published draft
cannot be sent as a target's draft. The connection is the one named, else the draft's job's (when
it still exists), else the organization's default; none is 400, a disabled one 409. The attempt
itself, its retries and what the target answers are the publishers domain's.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import publication as draft_publication
from contentplatform.drafts import schemas as draft_schemas
from contentplatform.drafts import service as drafts
from contentplatform.drafts.models import Draft
from contentplatform.jobs import service as jobs
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.media import service as media
from contentplatform.media.errors import LicenseForbidsUse
from contentplatform.publishers import publishing, schemas
from contentplatform.publishers import service as publishers
from contentplatform.publishers.errors import (
    BadScheduledAt,
    NoConnectionChosen,
    NothingToUnpublish,
    PublishedAsDraft,
    PublisherDisabled,
)
from contentplatform.publishers.models import PublisherConnection


async def publish(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.PublishDraftInput, *, by: str
) -> schemas.Published:
    """Record an attempt to publish the draft; its workflow starts once this commits. A request
    the target needs nothing for answers with the attempt that did it (publishers/publishing.py)."""
    draft = await drafts.require(session, tenant_id, data.id, for_update=True)
    draft_publication.check_publishable(draft)
    refused = (await media.draft_images(session, tenant_id, draft.id)).refused
    if refused is not None:
        raise LicenseForbidsUse(refused)
    if data.mode == "draft" and draft.status == "published":
        raise PublishedAsDraft("The draft is published; it cannot be sent to a target as a draft.")
    connection = await _connection_for(session, draft, data.publisher_connection_id)
    attempt = await publishing.start(
        session,
        draft,
        connection,
        data.mode,
        by=by,
        scheduled_at=_scheduled_at(data),
        force=data.force,
    )
    return schemas.Published(draft=draft, attempt=attempt)


async def unpublish(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UnpublishDraftInput, *, by: str
) -> schemas.Unpublished:
    """Take the draft down from the named connection, else from every connection it is live or
    scheduled on: unpublish attempts run as workflows once this commits, scheduled publishes are
    cancelled. The draft goes back to approved once no target keeps it live (at once when none
    reachable does: its copies were on connections since deleted). Nothing live nor scheduled
    there is 409."""
    draft = await drafts.require(session, tenant_id, data.id, for_update=True)
    connection = None
    if data.publisher_connection_id is not None:
        connection = await publishers.require(session, tenant_id, data.publisher_connection_id)
    attempts = await publishing.unpublish(session, draft, connection, by=by)
    if not attempts:
        if connection is not None or draft.status != "published":
            where = f"on the connection {connection.name!r}" if connection else "anywhere"
            raise NothingToUnpublish(f"The draft is neither live nor scheduled {where}.")
        drafts.mark_unpublished(session, draft)
    return schemas.Unpublished(draft=draft, attempts=attempts)


async def archive(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ArchiveDraftInput, *, by: str
) -> draft_schemas.Draft:
    """Archive the draft (any status but generating; it leaves the public blog at once) and
    cancel its scheduled publishes; with `unpublishRemote`, also take it down from every
    connection it is live on, as drafts.unpublish does."""
    draft = await drafts.archive(session, tenant_id, data.id, data.reason)
    await publishing.unpublish(session, draft, None, by=by, take_down=data.unpublish_remote)
    return drafts.to_schema(draft)


async def _connection_for(
    session: AsyncSession, draft: Draft, chosen: uuid.UUID | None
) -> PublisherConnection:
    """The connection named, else the draft's job's (when it still exists), else the default."""
    tenant_id = draft.tenant_id
    connection = None
    if chosen is not None:
        connection = await publishers.require(session, tenant_id, chosen)
    elif draft.job_id is not None:
        of_job = await jobs.publisher_of(session, tenant_id, draft.job_id)
        if of_job is not None:
            connection = await publishers.find(session, tenant_id, of_job)
    if connection is None:
        connection = await publishers.default_connection(session, tenant_id)
    if connection is None:
        raise NoConnectionChosen(
            "Say where to publish: the draft's job has no publisher connection and the "
            "organization has no default one.",
            errors=[FieldError("publisherConnectionId", "is required")],
        )
    if connection.status == "disabled":
        raise PublisherDisabled(f"The publisher connection {connection.name!r} is disabled.")
    return connection


def _scheduled_at(data: schemas.PublishDraftInput) -> datetime | None:
    if data.mode != "schedule":
        if data.scheduled_at is not None:
            raise BadScheduledAt(
                "scheduledAt is only for mode schedule.",
                errors=[FieldError("scheduledAt", "is only allowed with mode schedule")],
            )
        return None
    when = data.scheduled_at
    if when is None or when.tzinfo is None or when <= utcnow():
        raise BadScheduledAt(
            "Scheduling needs scheduledAt: a future instant with a time zone.",
            errors=[FieldError("scheduledAt", "must be a future instant with a time zone")],
        )
    return when
