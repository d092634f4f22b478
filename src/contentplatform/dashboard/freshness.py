"""When the dashboard's cached answers are retired: after any committed write to a tenant's rows.

The dashboard reads drafts, jobs, job instances, documents, media, credits, publishers,
generation runs, crawls, events and notifications. Not every write to those goes through the
events outbox (creating or pausing a job, uploading media, a credit debit, connecting a
publisher, editing a draft's score emit nothing), so "an event was recorded" would leave cards
stale for up to their 60 s. Every write does go through a session, though, and every row the
cards read is a tenant's (`TenantMixin.tenant_id`). So one tenant-wide scope,
`dashboard:<tenant>`, is retired once a transaction that wrote any row of the tenant commits:

- rows added, changed or deleted through the session (the unit of work's flush), by their
  `tenant_id`;
- bulk `insert`/`update`/`delete` statements, by the `tenant_id` they bind (every query takes
  the tenant first, house rule), e.g. the outbox's inserts or a licence alert's claim.

A no-op lock (kit.db.lock_rows: SQLite's `SET updated_at = updated_at`, which every credit
balance read takes) changes nothing and retires nothing. What it cannot see is retired by the
60 s expiry alone: cross-tenant sweeps that bind no tenant (credit holds expiring, the
scheduler's claim of due schedules), writes through a bare connection, and writes made by
another process while Redis is not configured (the cache is then per process anyway). A write
that rolls back retires nothing.

Where: through the cache of the runtime that serves dashboard reads on the write's database,
on its own loop; a write on another loop (a worker that never served a read, a test's own)
reaches Redis through a connection of its own, as kit/invalidation.py publishes.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections.abc import Iterable
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import ORMExecuteState, Session
from sqlalchemy.sql import visitors
from sqlalchemy.sql.elements import BinaryExpression, BindParameter, ColumnElement

from contentplatform.core import runtime as process
from contentplatform.core.runtime import Runtime
from contentplatform.kit.cache import ScopedCache
from contentplatform.kit.db import after_commit

log = logging.getLogger(__name__)

CACHE_SECONDS = 60.0
_CHANGED = "dashboard.changed_tenants"

# The runtime serving dashboard reads on each database, and the event loop its cache's Redis
# connections belong to, so a write retires entries where they are kept (tests run several
# services in one process, each with its own in-memory cache).
_served: weakref.WeakKeyDictionary[Engine, tuple[Runtime, asyncio.AbstractEventLoop]] = (
    weakref.WeakKeyDictionary()
)


def cache_scope(tenant_id: uuid.UUID) -> str:
    """Every cached dashboard answer of the tenant: retired by any write to its rows."""
    return f"dashboard:{tenant_id}"


def serving(runtime: Runtime) -> None:
    """Remember where this runtime caches the dashboard (called by each dashboard read)."""
    _served[runtime.db.engine.sync_engine] = (runtime, asyncio.get_running_loop())


def _runtime_for(session: Session) -> tuple[Runtime, asyncio.AbstractEventLoop | None] | None:
    try:
        bind = session.get_bind()
    except Exception:  # an unbound session writes nothing we cache
        return None
    engine = bind if isinstance(bind, Engine) else getattr(bind, "engine", None)
    if engine is not None and engine in _served:
        return _served[engine]
    # A process that never served a dashboard read (a worker) shares the cache only through
    # Redis, which the installed runtime's settings name.
    try:
        return process.current(), None
    except RuntimeError:
        return None


async def _retire(
    runtime: Runtime, loop: asyncio.AbstractEventLoop | None, tenant_ids: set[uuid.UUID]
) -> None:
    settings = runtime.settings
    if loop is asyncio.get_running_loop() or not settings.redis_url:
        # The serving loop's own connections, or an in-process cache.
        for tenant_id in tenant_ids:
            await runtime.cache.invalidate(cache_scope(tenant_id))
        return
    # Another loop than the one the cache's Redis connections belong to (a worker's, a test's
    # own): a connection of its own, as kit/invalidation.py publishes.
    own = ScopedCache(settings.redis_url, settings.redis_prefix)
    try:
        for tenant_id in tenant_ids:
            await own.invalidate(cache_scope(tenant_id))
    finally:
        await own.close()


def _note(session: Session, tenant_ids: Iterable[Any]) -> None:
    found = {value for value in tenant_ids if isinstance(value, uuid.UUID)}
    if not found:
        return
    changed: set[uuid.UUID] | None = session.info.get(_CHANGED)
    if changed is not None:
        changed.update(found)
        return
    changed = session.info[_CHANGED] = set(found)
    target = _runtime_for(session)
    if target is None:
        return

    async def retire() -> None:
        noted = session.info.pop(_CHANGED, changed)
        try:
            await _retire(*target, noted)
        except Exception:
            # The write has committed; a cache that cannot be reached keeps its entries at
            # most their 60 s.
            log.warning("could not retire the dashboard's cached answers", exc_info=True)

    # Last: an access invalidation registered later in the same transaction (a member removed)
    # must not wait for this one's Redis connection.
    after_commit(session, retire, last=True)


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: Any) -> None:
    rows = (*session.new, *session.dirty, *session.deleted)
    _note(session, (getattr(row, "tenant_id", None) for row in rows))


@event.listens_for(Session, "do_orm_execute")
def _on_execute(state: ORMExecuteState) -> None:
    if not (state.is_insert or state.is_update or state.is_delete):
        return
    try:
        _note(state.session, _bound_tenants(state))
    except Exception:  # never let the cache's bookkeeping fail a write
        log.exception("could not read the tenant of a bulk write")


def _bound_tenants(state: ORMExecuteState) -> list[Any]:
    statement = state.statement
    if state.is_update and _only_locks(statement):
        return []
    found: list[Any] = []
    for element in visitors.iterate(statement):  # type: ignore[arg-type]
        # `tenant_id == :x` or `tenant_id IN (:x)` in a WHERE, and an inserted `tenant_id`.
        if isinstance(element, BinaryExpression) and isinstance(element.right, BindParameter):
            if getattr(element.left, "key", None) == "tenant_id":
                found.extend(_values(element.right.effective_value))
        elif isinstance(element, BindParameter) and element.key == "tenant_id":
            found.extend(_values(element.effective_value))
    for column, value in (getattr(statement, "_values", None) or {}).items():
        if getattr(column, "key", column) == "tenant_id" and isinstance(value, BindParameter):
            found.extend(_values(value.effective_value))
    for rows in getattr(statement, "_multi_values", None) or ():  # insert().values([...])
        for row in rows:
            if isinstance(row, dict):
                found.extend(v for c, v in row.items() if getattr(c, "key", c) == "tenant_id")
    parameters = state.parameters
    rows = parameters if isinstance(parameters, list) else [parameters or {}]
    found.extend(row.get("tenant_id") for row in rows if isinstance(row, dict))
    return found


def _values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple | set | frozenset) else [value]


def _only_locks(statement: Any) -> bool:
    """An UPDATE that sets each column to itself (kit.db.lock_rows: SQLite's row lock) changes
    nothing: it must not retire what a read just cached (every credit balance read takes it)."""
    values = getattr(statement, "_values", None) or {}
    return bool(values) and all(
        getattr(value, "key", None) == getattr(column, "key", column)
        and isinstance(value, ColumnElement)
        and not isinstance(value, BindParameter)
        for column, value in values.items()
    )
