"""The failed requests a support ticket may cite (issue 40): each request of an organization's
member that the service answered with a problem, logged after its answer, so staff read a cited
`x-request-id` as the operation, status and problem code it was (admin.getSupportTicket), and
forgotten after 30 days (durable.py).

Logged: a request made in an organization by its member (a user, an API key, an impersonation
session acting in it) answered with status 400 or more, except 429: a flood of refused requests
would write a flood of rows. A refusal before the caller is known as a member (401, a 403 for a
non-member, a superadmin's operation) names no organization and is not logged. kit/http.py
reports every failed request once its answer is sent (`Failure`); the composition root (app.py)
hands those here. Only the operation, method, status, code and time are kept: no input, no
detail, no user.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.http import Failure
from contentplatform.support import repository, schemas
from contentplatform.support.models import FailedRequest

log = logging.getLogger(__name__)

RETENTION = timedelta(days=30)
RATE_LIMITED = 429
# Failures are written together, at most this long after the first of them: a burst of refused
# requests is one transaction, not one each (SQLite takes one writer at a time).
WRITE_EVERY_SECONDS = 0.5
# Failures one event loop holds unwritten at most; past it, more are dropped (and logged).
MAX_PENDING = 5_000


@dataclass(frozen=True)
class _Noted:
    db: Database
    tenant_id: uuid.UUID
    operation: str
    failure: Failure


# The failures each event loop has noted and not yet written, and the writes under way (held so
# none is collected before it ends; `settled` waits for them).
_pending: dict[asyncio.AbstractEventLoop, list[_Noted]] = {}
_writing: set[asyncio.Task[None]] = set()


def note(db: Database, failure: Failure) -> None:
    """Log `failure` when it is one a ticket may cite, written with the others noted within
    WRITE_EVERY_SECONDS: the request never waits for the row, and never fails for it (a write
    that fails is logged, and dropped)."""
    tenant, operation = failure.context.get("tenant"), failure.context.get("operation")
    if failure.status < 400 or failure.status == RATE_LIMITED or not tenant or not operation:
        return
    loop = asyncio.get_running_loop()
    pending = _pending.setdefault(loop, [])
    if len(pending) >= MAX_PENDING:
        log.warning("failed request %s not logged: too many waiting", failure.request_id)
        return
    pending.append(_Noted(db, uuid.UUID(tenant), operation, failure))
    if len(pending) == 1:
        # The first since the last write: a writer comes for it and for what follows. A fresh
        # context: not the request's (its client is answered; its log lines are done).
        task = loop.create_task(_write_soon(loop), context=contextvars.Context())
        _writing.add(task)
        task.add_done_callback(_writing.discard)


async def _write_soon(loop: asyncio.AbstractEventLoop) -> None:
    await asyncio.sleep(WRITE_EVERY_SECONDS)
    noted = _pending.pop(loop, [])
    for db in {id(entry.db): entry.db for entry in noted}.values():
        mine = [entry for entry in noted if entry.db is db]
        try:
            async with db.unit_of_work() as session:
                for tenant_id in dict.fromkeys(entry.tenant_id for entry in mine):
                    await repository.add_failed_requests(
                        session,
                        tenant_id,
                        [_row(entry) for entry in mine if entry.tenant_id == tenant_id],
                    )
        except Exception:
            log.warning("could not log %d failed requests", len(mine), exc_info=True)


def _row(entry: _Noted) -> dict[str, object]:
    failure = entry.failure
    return {
        "request_id": failure.request_id,
        "operation": entry.operation,
        "method": failure.method,
        "status": failure.status,
        "code": failure.code,
        "created_at": failure.at,
    }


async def settled() -> None:
    """Once every failed request this event loop noted is written (or failed to be): the app
    waits for them before it closes its database."""
    loop = asyncio.get_running_loop()
    while pending := [task for task in _writing if task.get_loop() is loop]:
        await asyncio.gather(*pending, return_exceptions=True)


async def resolve(
    session: AsyncSession, tenant_id: uuid.UUID | None, request_ids: Sequence[str]
) -> list[schemas.CitedRequest]:
    """Each id, in order, as the tenant's log has it: the latest failure logged under it in the
    last 30 days, else not found (a contact message has no tenant: nothing is found)."""
    logged: dict[str, FailedRequest] = {}
    if tenant_id is not None and request_ids:
        since = utcnow() - RETENTION
        for row in await repository.failed_requests(session, tenant_id, request_ids, since=since):
            logged[row.request_id] = row  # oldest first: the latest stays
    return [_cited(request_id, logged.get(request_id)) for request_id in request_ids]


def _cited(request_id: str, row: FailedRequest | None) -> schemas.CitedRequest:
    if row is None:
        return schemas.CitedRequest(
            request_id=request_id,
            found=False,
            operation=None,
            method=None,
            status=None,
            code=None,
            at=None,
        )
    return schemas.CitedRequest(
        request_id=request_id,
        found=True,
        operation=row.operation,
        method=row.method,
        status=row.status,
        code=row.code,
        at=row.created_at,
    )


async def forget_old(db: Database) -> int:
    """Delete the failed requests older than 30 days (the maintenance pass, durable.py)."""
    async with db.unit_of_work() as session:
        return await repository.delete_failed_requests_before(session, utcnow() - RETENTION)
