"""The sync runs: the API's reads, and the service every part runs its provider calls inside.
Never commits.

A run is queued -> running -> succeeded | partial | failed. Its `run_key` (kind:window, made by
the part that opens it) is unique per tenant, so opening the same run twice, even at once,
finds the first (`open_run`), and a crashed run is resumed rather than paid for twice. Once a
run has ended it stays as it ended: a late `mark_running` or `finish` (a workflow's step
replayed after a disconnect cancelled its run) changes nothing and returns it as it is.

How a part uses it:

    run, created = await sync_runs.open_run(session, tenant_id, kind="search_console",
        provider="google_search_console", run_key=f"search_console:{start}:{end}",
        trigger="manual", params={...}, property_id=..., created_by=subject)
    ... (its workflow) await sync_runs.mark_running(session, tenant_id, run.id)
    ... await sync_runs.record_progress(session, tenant_id, run.id, done=3, total=90, rows=2500)
    ... await sync_runs.finish(session, tenant_id, run.id, status="partial",
        error={"code": "quota_exceeded", "message": "...", "retryable": True, "items": [...]})
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit import durable
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.schemas import window_of
from contentplatform.seo.models import SeoSyncRun
from contentplatform.seo.sync_runs import repository, schemas
from contentplatform.seo.sync_runs.errors import SyncRunNotFound

log = logging.getLogger(__name__)

require = Required(repository.get, SyncRunNotFound)

# What another SEO part does when a run of a kind ends, in the transaction that ends it (the
# page inventory's figures after a Search Console sync): registered by that part, so that the
# parts running syncs need not import it.
Ended = Callable[[AsyncSession, SeoSyncRun], Awaitable[None]]
_when_ended: dict[str, list[Ended]] = {}


def when_ended(kind: str) -> Callable[[Ended], Ended]:
    """Register `handler(session, run)` to run when a run of `kind` ends (any ending)."""
    _one_of(kind, schemas.KINDS, "kind")

    def register(handler: Ended) -> Ended:
        _when_ended.setdefault(kind, []).append(handler)
        return handler

    return register


MAX_RUN_KEY = 200
# The message a run cancelled by a disconnect ends with.
CANCELLED = "The provider was disconnected before the run started."


def record(run: SeoSyncRun) -> schemas.SyncRun:
    """The run as the API shows it (for the trigger operations' answers too)."""
    return schemas.SyncRun(
        id=run.id,
        kind=run.kind,
        provider=run.provider,
        status=run.status,
        trigger=run.trigger,
        params=run.params,
        progress=schemas.SyncRunProgress(done=run.progress_done, total=run.progress_total),
        rows_written=run.rows_written,
        credits_reserved=run.credits_reserved,
        credits_used=run.credits_used,
        error=schemas.SyncRunError.model_validate(run.error) if run.error else None,
        created_by=run.created_by,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
    )


# --- the API's reads ------------------------------------------------------------------------


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListSyncRunsInput
) -> schemas.SyncRunPage:
    rows, total = await repository.page(
        session,
        tenant_id,
        kind=data.kind,
        provider=data.provider,
        status=data.status,
        **window_of(data),
    )
    return schemas.SyncRunPage(
        data=[record(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def get(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> schemas.SyncRun:
    return record(await require(session, tenant_id, run_id))


# --- the service the parts run their provider calls inside -----------------------------------


def _one_of(value: str, allowed: frozenset[str], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{value!r} is no sync-run {what} ({', '.join(sorted(allowed))})")


async def open_run(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    kind: str,
    provider: str,
    run_key: str,
    trigger: str,
    params: dict[str, Any],
    property_id: uuid.UUID | None = None,
    created_by: str | None = None,
) -> tuple[SeoSyncRun, bool]:
    """The tenant's run with `run_key` and False when there is one (whatever its status), else
    a new `queued` run and True. Safe under a concurrent second open: the unique index on
    (tenant, run_key) lets one insert through and the other finds its run."""
    _one_of(kind, schemas.KINDS, "kind")
    _one_of(provider, schemas.PROVIDERS, "provider")
    _one_of(trigger, schemas.TRIGGERS, "trigger")
    if not run_key or len(run_key) > MAX_RUN_KEY:
        raise ValueError(f"a run_key is 1 to {MAX_RUN_KEY} characters")
    now = utcnow()
    created = await repository.insert_new(
        session,
        tenant_id,
        id=uuid.uuid4(),
        kind=kind,
        provider=provider,
        status="queued",
        trigger=trigger,
        run_key=run_key,
        params=params,
        property_id=property_id,
        progress_done=0,
        progress_total=0,
        rows_written=0,
        credits_reserved=0,
        credits_used=0,
        created_by=created_by,
        created_at=now,
        updated_at=now,
    )
    return await repository.by_run_key(session, tenant_id, run_key), created


async def active_run(session: AsyncSession, tenant_id: uuid.UUID, kind: str) -> SeoSyncRun | None:
    """The tenant's newest run of `kind` still queued or running, None when there is none."""
    return await repository.active(session, tenant_id, kind)


async def mark_running(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> SeoSyncRun:
    """The run made `running` (locked while it is); `started_at` is set the first time only, so
    a resumed run keeps when it first started. A run that has ended is returned as it is."""
    run = await require(session, tenant_id, run_id, for_update=True)
    if run.status in schemas.ACTIVE:
        run.status = "running"
        if run.started_at is None:
            run.started_at = utcnow()
        await session.flush()
    return run


async def record_progress(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    *,
    done: int,
    total: int | None = None,
    rows: int = 0,
) -> None:
    """`done` and `total` are absolute (total None: unchanged); `rows` is ADDED to
    rows_written, in the database, so concurrent steps of one run never lose a count."""
    if done < 0 or rows < 0 or (total is not None and total < 0):
        raise ValueError("progress and rows are never negative")
    changed = await repository.add_progress(
        session, tenant_id, run_id, done=done, total=total, rows=rows
    )
    if not changed:
        raise SyncRunNotFound(run_id)


async def record_item_progress(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    counts: Mapping[str, int],
    *,
    rows: int = 0,
) -> None:
    """The progress of a run made of items (measurements, inspections, answers), from its
    items' `counts` by status: every item no longer `pending` is done; `rows` as above."""
    total = sum(counts.values())
    await record_progress(
        session, tenant_id, run_id, done=total - counts.get("pending", 0), total=total, rows=rows
    )


def _error(error: dict[str, Any]) -> dict[str, Any]:
    """An error as stored: {code, message, retryable, items[<= MAX_ERROR_ITEMS]}; an item that
    is not an object is kept as {item: its text}."""
    items = [
        item if isinstance(item, dict) else {"item": str(item)}
        for item in list(error.get("items") or [])[: schemas.MAX_ERROR_ITEMS]
    ]
    return schemas.SyncRunError(
        code=str(error.get("code") or "failed"),
        message=str(error.get("message") or ""),
        retryable=bool(error.get("retryable", False)),
        items=items,
    ).model_dump(mode="json")


async def finish(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    *,
    status: str,
    error: dict[str, Any] | None = None,
) -> SeoSyncRun:
    """The run ended `status` (succeeded, partial or failed) with `error` ({code, message,
    retryable, items}; items cut to the first 100). A run that has ended already is returned
    as it is."""
    _one_of(status, schemas.ENDINGS, "ending")
    run = await require(session, tenant_id, run_id, for_update=True)
    if run.status not in schemas.ACTIVE:
        return run
    run.status = status
    run.error = _error(error) if error is not None else None
    run.checkpoint = None
    run.finished_at = utcnow()
    await session.flush()
    for handler in _when_ended.get(run.kind, ()):
        # In a savepoint: a handler's failure is logged and ends the run all the same.
        try:
            async with session.begin_nested():
                await handler(session, run)
        except Exception:
            log.exception("a handler of the end of sync run %s failed", run_id)
    return run


async def record_refused(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    kind: str,
    provider: str,
    run_key: str,
    trigger: str,
    message: str,
) -> SeoSyncRun:
    """A scheduled run that could not hold its credits, kept as a failed run under its run key
    (code `insufficient_credits`, `message` saying why): what the organization sees of a run it
    could not pay for, and what keeps the same period from trying again."""
    run, created = await open_run(
        session,
        tenant_id,
        kind=kind,
        provider=provider,
        run_key=run_key,
        trigger=trigger,
        params={},
    )
    if created:
        await finish(
            session,
            tenant_id,
            run.id,
            status="failed",
            error={"code": "insufficient_credits", "message": message, "retryable": False},
        )
    return run


async def finish_by_items(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    *,
    completed: int,
    failed: int,
    failures: Callable[[], Awaitable[list[dict[str, Any]]]],
    code: str,
    noun: str,
) -> str:
    """A run of items (URLs inspected, measured) ended by what became of them: succeeded when
    none failed, failed when none completed, partial otherwise, its error `code` counting the
    failed `noun` and naming them (`failures()`, read only then)."""
    if not failed:
        await finish(session, tenant_id, run_id, status="succeeded")
        return "succeeded"
    status = "partial" if completed else "failed"
    error = {
        "code": code,
        "message": f"{failed} of {failed + completed} {noun} failed.",
        "retryable": True,
        "items": await failures(),
    }
    await finish(session, tenant_id, run_id, status=status, error=error)
    return status


async def keep_checkpoint(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, key: str, value: Any
) -> None:
    """`value` under `key` in the running run's checkpoint (see SeoSyncRun.checkpoint)."""
    run = await require(session, tenant_id, run_id, for_update=True)
    run.checkpoint = {**(run.checkpoint or {}), key: value}
    await session.flush()


async def cancel_queued(session: AsyncSession, tenant_id: uuid.UUID, provider: str) -> int:
    """The provider's queued runs ended `failed` with error code `cancelled` (a disconnect):
    how many. Running ones are left to end by themselves."""
    _one_of(provider, schemas.PROVIDERS, "provider")
    error = _error({"code": "cancelled", "message": CANCELLED, "retryable": False})
    return await repository.fail_queued(session, tenant_id, provider, error)


# A run's items still open given up: (session, tenant, run, code, message) -> the run's status.
GiveUp = Callable[[AsyncSession, uuid.UUID, uuid.UUID, str, str], Awaitable[str]]


def unfinished_item_runs(
    runs: Iterable[tuple[uuid.UUID, uuid.UUID, datetime]],
    *,
    workflow: durable.Workflow,
    workflow_id: Callable[[uuid.UUID], str],
    queue: str,
    give_up: GiveUp,
    stall_seconds: float,
    stalled: str,
    work: str,
) -> list[durable.Unfinished]:
    """The reconciler's view of runs made of items (PageSpeed measurements, URL inspections,
    rank tasks), each given as (tenant, run, when its items last moved): restarted under its
    workflow when that is missing, its open items given up when the workflow ended in error
    (failed: "{work} ended unexpectedly (reason)") or when nothing moved for `stall_seconds`
    (stalled: the `stalled` message)."""
    now = utcnow()

    def giver_up(tenant_id: uuid.UUID, run_id: uuid.UUID) -> Callable[..., Awaitable[None]]:
        async def give_up_run(session: AsyncSession, reason: str) -> None:
            if reason == "stalled":
                await give_up(session, tenant_id, run_id, "stalled", stalled)
            else:
                message = f"{work} ended unexpectedly ({reason})."
                await give_up(session, tenant_id, run_id, "failed", message)

        return give_up_run

    return [
        durable.Unfinished(
            workflow_id=workflow_id(run_id),
            restart=durable.restarter(
                workflow, workflow_id(run_id), str(tenant_id), str(run_id), queue=queue
            ),
            give_up=giver_up(tenant_id, run_id),
            stalled_reason="stalled" if (now - moved).total_seconds() > stall_seconds else None,
        )
        for tenant_id, run_id, moved in runs
    ]
