"""A run's event stream, `run:<run id>` (kit/streams/): what generation.streamRun reads.

Every committed change of a run is announced once its transaction has committed (never what may
still roll back): a `progress` event with its status, step and percent; when the change ended the
run, that last `progress` and then the stream's one terminal event, in one append:
`run_finished` (succeeded or cancelled) or `error` (failed). The changes are seen where they are
made, through the run watchers (watchers.py), so every path that moves a run (the pipeline's
steps, cancelRun, the reconciler giving a run up) announces alike.

Announcing never fails what announced it: a stream that is down loses that `progress` (a reader
sees the next one), never the run. The terminal event is made durable three times over: by the
watcher after the commit that ended the run, by the workflow's last step (`generation.announce`,
retried, run again on recovery after a crash between that commit and the append), and by
streamRun, which appends it from the run row whenever it opens the stream of a finished run
(a run given up by the reconciler in a process that died before appending it, a run from before
streams, a log expired and purged). The terminal event is appended only to a stream that has none:
a second one is refused (StreamClosed) and taken as done.

A run's stream is made when the run is made (after its commit: `create_after_commit`), so a client
may open it before the first event; streamRun makes it too when it is missing (the scheduler's
runs, made thousands at a time, get theirs from their first event or their first reader).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from sse_starlette import EventSourceResponse
from starlette.requests import Request

from contentplatform.core import runtime
from contentplatform.core.runtime import Runtime
from contentplatform.drafts import service as drafts
from contentplatform.drafts.models import Draft
from contentplatform.generation import repository, watchers
from contentplatform.generation.errors import RunNotFound
from contentplatform.generation.models import GenerationRun
from contentplatform.kit import streams
from contentplatform.kit.db import after_commit, utc_text
from contentplatform.kit.errors import require
from contentplatform.kit.streams import Append, StreamClosed, StreamLog

log = logging.getLogger(__name__)

FINISHED = repository.FINISHED
# The runs a transaction changed, to announce once it commits (in the session's info).
_PENDING = "generation.events.pending"


def stream_of(run_id: uuid.UUID) -> str:
    return f"run:{run_id}"


def progress_of(run: GenerationRun) -> dict[str, Any]:
    # Ids as text: a PostgreSQL driver's UUID is no uuid.UUID the JSON encoder knows.
    return {
        "run_id": str(run.id),
        "status": run.status,
        "step": run.step,
        "percent": run.percent,
        "created_at": utc_text(),
    }


def ending(run: GenerationRun, draft: Draft | None) -> list[Append]:
    """What a finished run's stream ends with: its last `progress`, then its terminal event."""
    now = utc_text()
    last = Append("progress", progress_of(run))
    if run.status == "failed":
        error = run.error or {}
        data: dict[str, Any] = {
            "run_id": str(run.id),
            "code": error.get("code") or "INTERNAL_ERROR",
            "detail": error.get("message") or "Generation failed.",
            "retryable": bool(error.get("retryable", False)),
            "created_at": now,
        }
        return [last, Append("error", data, terminal=True)]
    seo_score = None
    if run.status == "succeeded" and draft is not None:
        written = draft.provenance or {}
        if written.get("run_id") == str(run.id):
            seo_score = written.get("seo_score_at_generation")
    data = {
        "run_id": str(run.id),
        "status": run.status,
        "draft_id": str(run.draft_id),
        "seo_score": seo_score,
        "credits_charged": run.credits_committed,
        "created_at": now,
    }
    return [last, Append("run_finished", data, terminal=True)]


async def _append(log_: StreamLog, run: GenerationRun, events: Sequence[Append]) -> None:
    """Append to the run's stream; a stream that has ended already takes nothing more."""
    with contextlib.suppress(StreamClosed):
        await log_.append_many(stream_of(run.id), run.tenant_id, events)


# --- announcing changes -------------------------------------------------------------------------


@watchers.watch_runs
async def announce_change(session: AsyncSession, run: GenerationRun) -> None:
    """Remember the run's change; it is announced once the transaction commits (the run as the
    transaction leaves it: one announcement per run and transaction)."""
    pending: dict[uuid.UUID, tuple[uuid.UUID, dict[str, Any], bool]] | None = session.info.get(
        _PENDING
    )
    if pending is None:
        pending = session.info[_PENDING] = {}
        changes = pending

        async def announce() -> None:
            await _announce(changes)

        after_commit(session, announce)
    pending[run.id] = (run.tenant_id, progress_of(run), run.status in FINISHED)


async def _announce(changes: dict[uuid.UUID, tuple[uuid.UUID, dict[str, Any], bool]]) -> None:
    for run_id, (tenant_id, progress, finished) in changes.items():
        try:
            if finished:
                await announce_end(tenant_id, run_id)
            else:
                await runtime.current().streams.append(
                    stream_of(run_id), tenant_id, "progress", progress
                )
        except StreamClosed:
            pass  # cancelled meanwhile: its stream has ended
        except Exception:
            log.warning("could not announce a change of run %s", run_id, exc_info=True)


async def announce_end(tenant_id: uuid.UUID, run_id: uuid.UUID) -> bool:
    """Append the finished run's ending to its stream, unless the stream has ended already;
    whether the run has finished. Reads the run as committed."""
    current = runtime.current()
    async with current.db.unit_of_work() as session:
        run = await repository.get(session, tenant_id, run_id)
        if run is None or run.status not in FINISHED:
            return False
        draft = await drafts.require_or_none(session, tenant_id, run.draft_id)
        events = ending(run, draft)
    await _append(current.streams, run, events)
    return True


def create_after_commit(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """Make the run's stream once this transaction commits, so it can be read before its first
    event. Best effort: a stream is also made by its first event and by its first reader."""

    async def create() -> None:
        try:
            await runtime.current().streams.create(stream_of(run_id), tenant_id)
        except Exception:
            log.warning("could not make the stream of run %s", run_id, exc_info=True)

    after_commit(session, create)


# --- reading ------------------------------------------------------------------------------------


async def open_stream(
    session: AsyncSession,
    current: Runtime,
    request: Request,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
) -> EventSourceResponse:
    """The run's stream for `request`, resumed after its Last-Event-ID: made when missing; for a
    finished run, ended from the run row when it has no terminal event (see the module)."""
    current.streams.open_streams.check()  # at the process's limit: 503 before any work
    run = require(await repository.get(session, tenant_id, run_id), RunNotFound, run_id)
    stream = stream_of(run.id)
    finished = run.status in FINISHED
    draft = await drafts.require_or_none(session, tenant_id, run.draft_id) if finished else None
    # The request's connection goes back to the pool before the log is written or opened: a
    # crowd of readers never holds one connection each while waiting for a second.
    await session.commit()
    if finished:
        await _append(current.streams, run, ending(run, draft))
    else:
        await current.streams.create(stream, tenant_id)
    return await streams.stream_response(
        current.streams,
        request,
        stream,
        tenant_id,
        ping_seconds=current.settings.stream_ping_seconds,
        id_prefix=str(run.id),
        seq_in_data=True,
    )
