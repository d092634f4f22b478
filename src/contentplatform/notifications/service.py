"""Notifications and watches: the caller's own, in the caller's tenant; and `notify`, which the
listener (durable.py) runs on each batch of new events, in the dispatcher's transaction.

A member's tenant watch is made with the defaults when they first list their watches (a row
with no chosen events: the defaults of their role at the time of each event); until then the
listener reads "no row" as those same defaults. Deleting it leaves the row, muted, so it is
never made again by itself: tenant-wide notifications stay off until watches.upsert asks for
the tenant watch again.
"""

from __future__ import annotations

import hashlib
import logging
import re
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.events import catalog
from contentplatform.events.models import Event
from contentplatform.jobs import service as jobs
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError, require
from contentplatform.kit.schemas import window_of
from contentplatform.mail import service as mail
from contentplatform.mail.errors import MailRefused
from contentplatform.notifications import repository, routing, schemas, texts
from contentplatform.notifications.errors import TooManyWatches, WatchNotFound
from contentplatform.notifications.models import Watch
from contentplatform.notifications.routing import EMAIL, IN_APP, TENANT
from contentplatform.publishers import service as publishers
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

# Notifications are kept this long (the retention deletes older ones; no list shows them).
RETENTION_DAYS = 90
# The most resources one member watches in one organization (watches.list is not paged).
MAX_WATCHES = 500


def _since() -> datetime:
    return utcnow() - timedelta(days=RETENTION_DAYS)


# --- notifications ----------------------------------------------------------------------------


async def list_notifications(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject: str,
    data: schemas.ListNotificationsInput,
) -> schemas.NotificationPage:
    since = _since()
    rows, total = await repository.notifications_page(
        session,
        tenant_id,
        subject,
        since=since,
        unread_only=data.unread_only,
        category=data.category,
        **window_of(data),
    )
    return schemas.NotificationPage(
        data=[schemas.Notification.model_validate(row) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
        unread_count=await repository.unread_count(session, tenant_id, subject, since),
    )


async def mark_read(
    session: AsyncSession, tenant_id: uuid.UUID, subject: str, data: schemas.MarkReadInput
) -> schemas.MarkReadResult:
    updated = await repository.mark_read(
        session,
        tenant_id,
        subject,
        utcnow(),
        ids=set(data.ids) if data.ids is not None else None,
        before=data.before,
    )
    unread = await repository.unread_count(session, tenant_id, subject, _since())
    return schemas.MarkReadResult(updated=updated, unread_count=unread)


async def latest_about(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject: str,
    keys: Collection[tuple[str, uuid.UUID]],
) -> dict[tuple[str, uuid.UUID], schemas.Notification]:
    """The subject's latest notification of each (event type, resource id), where one was made
    (the dashboard's alerts carry the one that raised them; reading it acknowledges them)."""
    rows = await repository.about(
        session,
        tenant_id,
        subject,
        {kind for kind, _ in keys},
        {resource_id for _, resource_id in keys},
        _since(),
    )
    wanted = set(keys)
    found: dict[tuple[str, uuid.UUID], schemas.Notification] = {}
    for row in rows:  # oldest first: the latest of each key is written last
        if row.resource_id is not None and (row.type, row.resource_id) in wanted:
            found[row.type, row.resource_id] = schemas.Notification.model_validate(row)
    return found


async def forget_old(session: AsyncSession) -> int:
    """Delete every notification older than RETENTION_DAYS; how many went."""
    return await repository.forget_older_than(session, _since())


# --- watches ----------------------------------------------------------------------------------


def _view(row: Watch) -> routing.WatchView:
    events = tuple(row.events) if isinstance(row.events, list) and row.events else None
    return routing.WatchView(
        subject=row.subject,
        resource_type=row.resource_type,
        resource_id=row.resource_id,
        events=events,
        channels=tuple(row.channels or ()),
        muted=row.muted_at is not None,
    )


def _watch(row: Watch, role: str) -> schemas.Watch:
    return schemas.Watch.model_validate(
        {
            "id": row.id,
            "resource_type": row.resource_type,
            "resource_id": None if row.resource_type == TENANT else row.resource_id,
            "events": list(_view(row).chosen(role)),
            "channels": list(row.channels),
            "created_at": row.created_at,
            "updated_at": row.updated_at,
        }
    )


async def _add_watch(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject: str,
    resource_type: str,
    resource_id: uuid.UUID,
) -> Watch:
    """The user's watch of the resource: theirs already (muted or not), or a new one with the
    defaults. Safe against a concurrent first write."""
    found = await repository.watch(session, tenant_id, subject, resource_type, resource_id)
    if found is not None:
        return found
    if resource_type != TENANT:
        watched = await repository.count_resource_watches(session, tenant_id, subject)
        if watched >= MAX_WATCHES:
            raise TooManyWatches(MAX_WATCHES)
    now = utcnow()
    await repository.add_watch(
        session,
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        subject=subject,
        resource_type=resource_type,
        resource_id=resource_id,
        events=None,
        channels=[IN_APP],
        muted_at=None,
        created_at=now,
        updated_at=now,
    )
    made = await repository.watch(session, tenant_id, subject, resource_type, resource_id)
    assert made is not None, "inserted, or inserted by a concurrent request"
    return made


async def list_watches(
    session: AsyncSession, access: TenantAccess, subject: str, data: schemas.ListWatchesInput
) -> schemas.WatchList:
    """The caller's watches, their tenant watch first (made with the defaults on first sight,
    unless they deleted it)."""
    tenant_id = access.tenant_id
    await _add_watch(session, tenant_id, subject, TENANT, tenant_id)
    rows = await repository.live_watches(
        session,
        tenant_id,
        subject,
        resource_type=data.resource_type,
        resource_id=data.resource_id,
    )
    found = [_watch(row, access.role.value) for row in rows]
    return schemas.WatchList(data=found, total=len(found))


async def _require_visible(
    session: AsyncSession, access: TenantAccess, resource_type: str, resource_id: uuid.UUID
) -> None:
    """The resource's own 404 unless it is the tenant's and not deleted."""
    if resource_type == "draft":
        await drafts.require(session, access.tenant_id, resource_id)
    elif resource_type == "job":
        await jobs.require(session, access.tenant_id, resource_id)
    elif resource_type == "publisher":
        await publishers.require(session, access.tenant_id, resource_id)
    elif resource_type == "document":
        await documents.require(session, access, resource_id)
    else:  # the input's Literal admits no other kind
        raise AssertionError(f"no watchable resource type {resource_type!r}")


async def upsert_watch(
    session: AsyncSession, access: TenantAccess, subject: str, data: schemas.UpsertWatchInput
) -> schemas.Watch:
    tenant_id = access.tenant_id
    if data.resource_type == TENANT:
        resource_id = tenant_id
    elif data.resource_id is None:
        reason = f"is required for a watch on a {data.resource_type}"
        raise BadRequest(f"resourceId {reason}.", errors=[FieldError("resourceId", reason)])
    else:
        resource_id = data.resource_id
        await _require_visible(session, access, data.resource_type, resource_id)
    row = await _add_watch(session, tenant_id, subject, data.resource_type, resource_id)
    now = utcnow()
    if row.muted_at is not None:  # the deleted tenant watch, made again on request
        row.muted_at = None
        row.created_at = now
    row.events = list(data.events) if data.events else None
    row.channels = list(dict.fromkeys(data.channels))
    row.updated_at = now
    await session.flush()
    return _watch(row, access.role.value)


async def delete_watch(
    session: AsyncSession, tenant_id: uuid.UUID, subject: str, watch_id: uuid.UUID
) -> None:
    """Stop watching; the tenant watch is muted (kept, so it is not made again by itself)."""
    found = require(
        await repository.watch_by_id(session, tenant_id, subject, watch_id), WatchNotFound, watch_id
    )
    if found.resource_type == TENANT:
        found.muted_at = found.updated_at = utcnow()
    else:
        await repository.delete_watch(session, found)


# --- the listener ---------------------------------------------------------------------------


async def notify(session: AsyncSession, events: Sequence[Event]) -> int:
    """Make the notifications of new events (every tenant's; each only from its own tenant's
    watches and members): one per recipient and event. How many were made."""
    by_tenant: dict[uuid.UUID, list[Event]] = {}
    for event in events:
        if event.type in routing.NOTIFYING:
            by_tenant.setdefault(event.tenant_id, []).append(event)
    rows: list[dict[str, Any]] = []
    for tenant_id, batch in by_tenant.items():
        rows += await _tell(session, tenant_id, batch)
    await repository.add_notifications(session, rows)
    return len(rows)


def _payload(event: Event) -> dict[str, Any]:
    return event.payload if isinstance(event.payload, dict) else {}


def _job_of(event: Event) -> uuid.UUID | None:
    if event.resource_type == "job" and event.resource_id is not None:
        return event.resource_id
    return routing.uuid_in(_payload(event), "job_id")


def _draft_of(event: Event) -> uuid.UUID | None:
    if event.resource_type == "draft" and event.resource_id is not None:
        return event.resource_id
    return routing.uuid_in(_payload(event), "draft_id")


# The types whose rules need the job's creator, and those whose rules or text need the draft's
# assignee or title.
_OF_A_JOB = {
    name for name, rules in routing.TENANT_RULES.items() if routing.Rule.job_owner in rules
}
_OF_A_DRAFT = {
    name for name, rules in routing.TENANT_RULES.items() if routing.Rule.assignee in rules
} | {"generation.run_failed"}
_DRAFT_FACTS = ("title", "assignee_id")


@dataclass(frozen=True)
class _Known:
    """An event as the rules and the text read it: its payload, with what it leaves out read
    from the resources it names (the payload wins), and the creator of its job."""

    payload: dict[str, Any]
    job_owner: str | None


async def _known(
    session: AsyncSession, tenant_id: uuid.UUID, batch: Sequence[Event]
) -> dict[uuid.UUID, _Known]:
    """Each event of the batch as the rules read it, each job and draft read once: the job's
    creator and name for the events of its runs (their payloads name the job only), the
    draft's title and assignee for events that name a draft without them (a failed publish
    attempt, a failed generation run). Deleted jobs and drafts add nothing."""
    job_ids = {j for e in batch if e.type in _OF_A_JOB and (j := _job_of(e)) is not None}
    draft_ids = {
        d
        for e in batch
        if e.type in _OF_A_DRAFT
        and not all(key in _payload(e) for key in _DRAFT_FACTS)
        and (d := _draft_of(e)) is not None
    }
    found_jobs: dict[uuid.UUID, tuple[str | None, dict[str, Any]]] = {}
    for job_id in job_ids:
        job = await jobs.find(session, tenant_id, job_id)
        if job is not None:
            found_jobs[job_id] = (job.created_by, {"job_name": job.name})
    found_drafts: dict[uuid.UUID, dict[str, Any]] = {}
    for draft_id in draft_ids:
        draft = await drafts.require_or_none(session, tenant_id, draft_id)
        if draft is not None:
            found_drafts[draft_id] = {"title": draft.title, "assignee_id": draft.assignee_id}
    known: dict[uuid.UUID, _Known] = {}
    for event in batch:
        owner: str | None = None
        facts: dict[str, Any] = {}
        its_job, its_draft = _job_of(event), _draft_of(event)
        if event.type in _OF_A_JOB and its_job in found_jobs:
            owner, job_facts = found_jobs[its_job]
            facts.update(job_facts)
        if event.type in _OF_A_DRAFT and its_draft in found_drafts:
            facts.update(found_drafts[its_draft])
        known[event.id] = _Known(payload={**facts, **_payload(event)}, job_owner=owner)
    return known


async def _tell(
    session: AsyncSession, tenant_id: uuid.UUID, batch: list[Event]
) -> list[dict[str, Any]]:
    members = await tenants.active_member_subjects(session, tenant_id)
    if not members:
        return []
    named = {event.id: routing.named_ids(event.resource_id, _payload(event)) for event in batch}
    stored = await repository.watches_of(session, tenant_id, set().union(*named.values()))
    tenant_watches: dict[str, routing.WatchView] = {}
    on_resource: dict[uuid.UUID, list[routing.WatchView]] = {}
    for row in stored:
        view = _view(row)
        if view.resource_type == TENANT:
            tenant_watches[view.subject] = view
        else:
            on_resource.setdefault(view.resource_id, []).append(view)
    known = await _known(session, tenant_id, batch)
    rows: list[dict[str, Any]] = []
    for event in batch:
        seen = known[event.id]
        chosen = routing.recipients(
            routing.EventView(
                type=event.type,
                actor_id=event.actor_id,
                resource_type=event.resource_type,
                resource_id=event.resource_id,
                payload=seen.payload,
                job_owner=seen.job_owner,
            ),
            members=members,
            resource_watches=[
                watch for key in named[event.id] for watch in on_resource.get(key, ())
            ],
            tenant_watches=tenant_watches,
        )
        emails = await tenants.active_member_emails(
            session, tenant_id, [subject for subject, ways in chosen.items() if EMAIL in ways]
        )
        for subject, channels in sorted(chosen.items()):
            told = texts.tell(
                event.type,
                recipient=subject,
                actor_type=event.actor_type,
                actor_name=event.actor_name,
                resource_type=event.resource_type,
                resource_id=event.resource_id,
                payload=seen.payload,
            )
            if subject in emails:
                await _mail(session, tenant_id, event, subject, emails[subject], told)
            if IN_APP not in channels:
                continue
            rows.append(
                {
                    "id": uuid.uuid4(),
                    "tenant_id": tenant_id,
                    "subject": subject,
                    "event_id": event.id,
                    "type": event.type,
                    "category": catalog.get(event.type).category,
                    "title": told.title,
                    "body": told.body,
                    "resource_type": event.resource_type,
                    "resource_id": event.resource_id,
                    "url": told.url,
                    "actor_id": event.actor_id,
                    "read_at": None,
                    "created_at": event.created_at,
                }
            )
    return rows


# Whitespace and control characters in a title become one space: a mail's subject is one line.
_NOT_ONE_LINE = re.compile(r"[\s\x00-\x1f\x7f]+")


async def _mail(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    event: Event,
    subject: str,
    address: str,
    told: texts.Told,
) -> None:
    """The email of one notification, queued in the dispatcher's transaction: once per event
    and recipient (the message id names both), however often the batch is handled."""
    recipient = hashlib.sha256(subject.encode()).hexdigest()[:24]
    title = _NOT_ONE_LINE.sub(" ", told.title).strip()[: mail.MAX_SUBJECT] or event.type
    text = (
        f"{told.body}\n\nIn the app: {told.url}\n\n"
        "You get this email because of your notification watches; change them in the app."
    )
    try:
        await mail.send(
            session,
            message_id=f"notification:{event.id}:{recipient}:email",
            to=address,
            subject=title,
            text=text[: mail.MAX_TEXT],
            kind="notification",
            tenant_id=tenant_id,
        )
    except MailRefused as refused:
        # An address the identity provider holds but no mail server takes: the in-app
        # notification still goes; the batch is never held up by one recipient.
        log.warning("notification mail not sent: %s", refused.detail)
