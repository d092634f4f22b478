"""Inbound provider events: what a provider tells us (a payment provider's, an identity
provider's; next, SEO and analytics sources), kept and applied exactly once.

An event the receiving route has verified is stored once per (source, event id) in the request's
transaction (`InboundEvents.record`: a provider's retry finds it and stores nothing), then
applied by a durable workflow whose id is the event's, so a second start is a no-op. Applying
takes the event's row lock and checks its status first (`for_update`): received -> processed |
ignored | failed. `reconcile` registers the reconciler's source: an event still `received` a
while after it arrived lost its workflow (a crash between the commit and the start) and is
started again; one whose workflow failed is marked failed, with the reason, for an operator.

A domain gives its table the columns of `InboundEventColumns`, keeps an `InboundEvents` of it in
its repository, and calls `reconcile` from its durable module.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from sqlalchemy import JSON, ColumnElement, Select, String, Text, UniqueConstraint, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, declared_attr, mapped_column

from contentplatform.kit import durable
from contentplatform.kit.db import UTCDateTime, insert_ignoring_conflicts, lock_rows, utcnow

RECEIVED, PROCESSED, IGNORED, FAILED = "received", "processed", "ignored", "failed"
# Events the reconciler looks at in one pass (the next pass takes the rest).
RECONCILE_BATCH = 1000
# How much of a failure's reason is kept.
REASON_LENGTH = 2000


class InboundEventColumns:
    """One provider event, stored once per (source, event id). Not a tenant's row: an event
    may name no tenant at all (a price changed, a user signed up nowhere yet)."""

    @declared_attr.directive
    def __table_args__(cls) -> tuple[Any, ...]:
        return (UniqueConstraint("source", "event_id"),)

    source: Mapped[str] = mapped_column(String(40), nullable=False)
    event_id: Mapped[str] = mapped_column(String(255), nullable=False)
    type: Mapped[str] = mapped_column(String(100), nullable=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    # received -> processed | failed | ignored
    status: Mapped[str] = mapped_column(String(20), nullable=False, index=True)
    error: Mapped[str | None] = mapped_column(Text)
    processed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


EventT = TypeVar("EventT", bound=Any)


class InboundEvents(Generic[EventT]):
    """The queries of one table of inbound events (a model with InboundEventColumns and an
    `id`)."""

    def __init__(self, model: type[EventT]) -> None:
        self.model = model

    async def record(
        self, session: AsyncSession, source: str, event_id: str, type: str, payload: dict[str, Any]
    ) -> uuid.UUID | None:
        """Store the event once; its row id, or None when (source, event id) is stored already."""
        result = await session.execute(
            insert_ignoring_conflicts(
                session,
                self.model,
                id=uuid.uuid4(),
                source=source,
                event_id=event_id,
                type=type,
                payload=payload,
                status=RECEIVED,
            ).returning(self.model.id)
        )
        return result.scalar_one_or_none()

    async def for_update(self, session: AsyncSession, event_id: uuid.UUID) -> EventT | None:
        """The event, locked for this transaction (on SQLite too), as it is now."""
        await lock_rows(session, self.model, self.model.id == event_id)
        result = await session.execute(
            select(self.model)
            .where(self.model.id == event_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        return result.scalar_one_or_none()

    async def fail(self, session: AsyncSession, event_id: uuid.UUID, reason: str) -> None:
        """Mark a still unapplied event failed, saying why."""
        event = await self.for_update(session, event_id)
        if event is not None and event.status == RECEIVED:
            event.status, event.error, event.processed_at = FAILED, reason[:REASON_LENGTH], utcnow()

    async def reset(self, session: AsyncSession, event_id: uuid.UUID) -> bool:
        """Set the event back to `received` (its error and processing time cleared) so that it
        is applied again (an operator's replay); False when there is no such event."""
        event = await self.for_update(session, event_id)
        if event is None:
            return False
        event.status, event.error, event.processed_at = RECEIVED, None, None
        await session.flush()
        return True

    def listing(self, tenant_id: ColumnElement[Any]) -> Select[Any]:
        """Every stored event, one row each: `id`, `provider_event_id`, `type`, `tenant_id` (the
        expression given, of the event's columns: the tenant it names, null for none),
        `status`, `error`, `received_at`, `processed_at`. A statement to filter and run (an
        operator's list of every source's events)."""
        model = self.model
        return select(
            model.id.label("id"),
            model.event_id.label("provider_event_id"),
            model.type.label("type"),
            tenant_id.label("tenant_id"),
            model.status.label("status"),
            model.error.label("error"),
            model.created_at.label("received_at"),
            model.processed_at.label("processed_at"),
        )

    async def unprocessed(self, session: AsyncSession, before: datetime) -> list[uuid.UUID]:
        """Events still `received` that arrived before `before`: what the reconciler restarts."""
        result = await session.execute(
            select(self.model.id)
            .where(self.model.status == RECEIVED, self.model.created_at < before)
            .limit(RECONCILE_BATCH)
        )
        return list(result.scalars())


def start_processing(
    session: AsyncSession,
    stored: uuid.UUID | None,
    process: durable.Workflow,
    workflow_id: Callable[[uuid.UUID], str],
) -> bool:
    """After `events.record`: a new event (`stored`, its row id) is processed by
    `process(<event id>)` under `workflow_id(event id)` once the session commits, and True says
    it was new; None (stored before, a provider's retry) starts nothing and is False."""
    if stored is None:
        return False
    durable.start_after_commit(session, process, workflow_id(stored), str(stored))
    return True


def reconcile(
    name: str,
    events: InboundEvents[Any],
    process: durable.Workflow,
    workflow_id: Callable[[uuid.UUID], str],
    *,
    restart_after: timedelta = timedelta(seconds=30),
) -> None:
    """Register the reconciler's source `name` for `events`: each one still `received`
    `restart_after` after it arrived is started again with `process(<event id>)` under
    `workflow_id(event id)`, or failed (`events.fail`) when that workflow failed."""

    async def unprocessed(session: AsyncSession) -> list[durable.Unfinished]:
        ids = await events.unprocessed(session, utcnow() - restart_after)
        return [
            durable.Unfinished(
                workflow_id=workflow_id(event_id),
                restart=durable.restarter(process, workflow_id(event_id), str(event_id)),
                give_up=_giver_up(events.fail, event_id),
            )
            for event_id in ids
        ]

    # The source belongs with the workflow it restarts: the domain's durable module, which its
    # manifest lists (tests/test_domains.py finds durable work by module).
    unprocessed.__module__ = process.__module__
    unprocessed.__qualname__ = f"reconcile[{name}]"
    durable.reconcile_source(name)(unprocessed)


def _giver_up(
    fail: Callable[[AsyncSession, uuid.UUID, str], Awaitable[None]], event_id: uuid.UUID
) -> Callable[[AsyncSession, str], Awaitable[None]]:
    async def give_up(session: AsyncSession, reason: str) -> None:
        await fail(session, event_id, reason)

    return give_up
