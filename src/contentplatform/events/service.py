"""Emit events in the change's own transaction; fan them out to the listeners once it commits.

Domains call `emit` and know nothing of who listens. Listener domains (notifications,
webhooks) sit above the content domains and register with `listener(name)`; the dispatcher
(events/durable.py) hands each of them every new event, in one transaction with the stamp
that says the event was taken, so a crash before that commit hands the events out again and
none is handed to a listener twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic_core import to_jsonable_python
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Role
from contentplatform.core import actors
from contentplatform.events import catalog, repository, schemas
from contentplatform.events.errors import AuditNeedsAdmin
from contentplatform.events.models import Event
from contentplatform.kit import text
from contentplatform.kit.db import Database, after_commit, utcnow
from contentplatform.kit.schemas import window_of

log = logging.getLogger(__name__)

_WOKEN = "events.woken"
COALESCE_SECONDS = 0.02
# The dispatcher of each event loop, woken when a transaction that emitted commits on that loop.
# Per loop: an asyncio.Event belongs to one loop, and tests run several services (each its own
# loop and thread) in one process.
_wakes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Event] = (
    weakref.WeakKeyDictionary()
)


def emit(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    type_: str,
    *,
    resource_id: uuid.UUID | None,
    payload: dict[str, Any] | None = None,
    changes: dict[str, Any] | None = None,
    resource_type: str | None = None,
    actor: actors.Actor | None = None,
) -> Event:
    """Write one event of a declared type in this session's transaction (the outbox)."""
    kind = catalog.get(type_)
    who = actor or actors.current()
    event = Event(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        type=type_,
        scope=kind.scope,
        actor_type=who.type,
        actor_id=who.id,
        actor_name=who.display_name,
        impersonated_by=who.impersonated_by,
        resource_type=resource_type or kind.resource,
        resource_id=resource_id,
        # Every text an event carries out is plain text (a comment's excerpt, a remote's
        # error message, a filename): its receivers may show it as HTML.
        payload=text.sent_as_text(to_jsonable_python(payload or {})),
        changes=to_jsonable_python(changes) if changes is not None else None,
        ip=who.ip,
        user_agent=who.user_agent,
        request_id=who.request_id,
        created_at=utcnow(),
    )
    session.add(event)
    if not session.info.get(_WOKEN):
        session.info[_WOKEN] = True
        after_commit(session, wake_dispatcher)
    return event


def changes_between(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """`{field: {from, to}}` for each field whose value differs (settings diffs)."""
    return {
        key: {"from": before.get(key), "to": after.get(key)}
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    }


async def wake_dispatcher() -> None:
    """Wake the dispatcher of the running loop, to dispatch at once what was committed: each
    commit that emitted does; events committed on another loop of the process (a test's own)
    wake nothing by themselves."""
    wake = _wakes.get(asyncio.get_running_loop())
    if wake is not None:
        wake.set()


Listener = Callable[[AsyncSession, Sequence[Event]], Awaitable[None]]
_listeners: dict[str, Listener] = {}


def listener(name: str) -> Callable[[Listener], Listener]:
    """Register a domain's handler of new events (every type, every tenant: it picks its own).
    It runs inside the dispatcher's transaction: what it writes commits with the stamp."""

    def register(handler: Listener) -> Listener:
        _listeners[name] = handler
        return handler

    return register


async def dispatch_once(db: Database, batch: int = 200) -> int:
    """Hand the oldest new events to every listener; how many were taken.

    A batch a listener cannot take is retried one event per transaction, so one bad event
    holds back only itself (it stays new and is tried again on the next pass)."""
    try:
        async with db.unit_of_work() as session:
            events = await repository.claim_undispatched(session, batch)
            await _hand_out(session, events)
        return len(events)
    except Exception:
        log.exception("dispatching a batch of events failed; retrying them one by one")
    async with db.unit_of_work() as session:
        waiting = await repository.undispatched_ids(session, batch)
    taken = 0
    for event_id in waiting:
        try:
            async with db.unit_of_work() as session:
                events = await repository.claim_undispatched(session, 1, only=event_id)
                await _hand_out(session, events)
            taken += len(events)
        except Exception:
            log.exception("event %s could not be dispatched; it is tried again later", event_id)
    return taken


async def _hand_out(session: AsyncSession, events: Sequence[Event]) -> None:
    if not events:
        return
    for handler in _listeners.values():
        await handler(session, events)


async def dispatch_forever(db: Database, poll_seconds: float, batch: int = 200) -> None:
    """Dispatch whenever a local commit emitted, and every `poll_seconds` for other processes'."""
    wake = _wakes[asyncio.get_running_loop()] = asyncio.Event()
    while True:
        wake.clear()
        try:
            taken = await dispatch_once(db, batch)
        except Exception:
            log.exception("event dispatch pass failed")
            taken = 0
        if taken >= batch:
            continue
        if taken:
            # Events come in bursts (a tick's runs, a bulk action): a moment's wait lets the
            # next pass take the rest of the burst in one transaction instead of one each.
            await asyncio.sleep(COALESCE_SECONDS)
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), poll_seconds)


async def forget_older_than(db: Database, days: int) -> int:
    async with db.unit_of_work() as session:
        return await repository.delete_older_than(session, utcnow() - timedelta(days=days))


async def list_activity(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    role: Role,
    data: schemas.ListActivityInput,
) -> schemas.ActivityPage:
    audit = data.scope == "audit"
    if audit and not role.includes(Role.admin):
        raise AuditNeedsAdmin()
    rows, total = await repository.list_events(
        session,
        tenant_id,
        scopes=("activity", "audit") if audit else ("activity",),
        resource_type=data.resource_type,
        resource_id=data.resource_id,
        actor_id=data.actor_id,
        action=data.action,
        start=data.start_date,
        end=data.end_date,
        **window_of(data),
    )
    return schemas.ActivityPage(
        data=[_activity(row, audit=audit) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


async def activity_events(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    types: Sequence[str] | None,
    since: datetime | None,
    limit: int,
    offset: int,
) -> tuple[list[Event], int]:
    """The rows `activity.list` answers (scope activity, newest first), from its one query,
    for the dashboard's feed; `types` keeps only those event types."""
    return await repository.list_events(
        session,
        tenant_id,
        scopes=("activity",),
        resource_type=None,
        resource_id=None,
        actor_id=None,
        action=None,
        start=since,
        end=None,
        limit=limit,
        offset=offset,
        types=types,
    )


def _activity(event: Event, *, audit: bool) -> schemas.ActivityEvent:
    return schemas.ActivityEvent(
        id=event.id,
        action=event.type,
        resource_type=event.resource_type,
        resource_id=event.resource_id,
        actor=schemas.ActivityActor(
            type=event.actor_type,
            id=event.actor_id,
            display_name=event.actor_name,
        ),
        impersonated_by=event.impersonated_by,
        changes=event.changes,
        # Where a request came from is for the audit view only.
        ip=event.ip if audit else None,
        user_agent=event.user_agent if audit else None,
        request_id=event.request_id,
        created_at=event.created_at,
    )
