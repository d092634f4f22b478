"""Answering a message: generate (retrieving first) -> settle, then the terminal event.

A DBOS workflow per answer (`chat:<message id>`), started at once after the request commits (no
queue: time to first token matters). Its events go to the message's log (`chat:<message id>`,
kit/streams/), whoever reads it and whenever:

- `generate` begins with one transaction (`_retrieve`) that marks the answer begun *before* the
  model is called, extends its credit hold, searches the knowledge index (the conversation's or
  the turn's scope, the primary knowledge document always) and appends `message_start`,
  `retrieval` and, on a conversation's first turn, `conversation_title` (in that transaction
  when the log is kept in the database, else right after it): the first token waits on as few
  commits as it can. It then streams the model's tokens as `message_delta` events in small
  batches (the first at once, then every BATCH_SECONDS or BATCH_TOKENS), is woken when it is
  stopped (the process's answers are watched together, one statement every STOP_CHECK_SECONDS)
  and keeps the answer so far in the message every SAVE_SECONDS (what `listMessages` shows
  while it streams);
- `settle` ends the message in one transaction: `completed` or `stopped` with its content and
  usage, the actual cost committed and the rest of the hold released (or, on a provider failure,
  `failed`, the partial answer kept and the hold released), and the terminal event to send;
- `announce` appends that terminal event after the commit (`StreamClosed`: it was already).

`generate` run again after a crash finds its mark and fails the answer visibly (`INTERRUPTED`)
rather than stream a second answer into the same log. Every answer ends with exactly one
terminal event; the reconciler fails an answer whose workflow is missing-and-unstartable,
failed, or running longer than `chat_stall_seconds`, so nothing stays `streaming`.

Pricing: 1 credit per started 1,000 model tokens (prompt and answer), at least 1 once the model
was called, never more than the hold (`chat_credit_hold`); a stopped answer pays for the tokens
it used (counted with ai/tokens.py), one stopped before the model was called pays nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
import weakref
from datetime import timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.ai.base import (
    CompletionRequest,
    ProviderError,
    ProviderUnavailable,
    StreamChunk,
)
from contentplatform.ai.tokens import count_tokens
from contentplatform.chat import prompts, repository, retrieval
from contentplatform.chat.models import ChatMessage
from contentplatform.core import runtime
from contentplatform.core.runtime import Runtime
from contentplatform.credits import service as credits
from contentplatform.kit import durable
from contentplatform.kit.db import Database, after_commit, utc_text, utcnow
from contentplatform.kit.errors import Conflict
from contentplatform.kit.streams import Append, StreamClosed, StreamLog

log = logging.getLogger(__name__)

SEARCH_LIMIT = 8
HISTORY_LIMIT = prompts.HISTORY_MESSAGES
# Tokens are appended in batches: the first at once, then when this many wait or the oldest
# has waited this long.
BATCH_TOKENS = 16
BATCH_SECONDS = 0.04
STOP_CHECK_SECONDS = 0.25
SAVE_SECONDS = 1.0
STALLED = "The answer took too long and was stopped."
INTERRUPTED = "The answer was interrupted (the service stopped while writing it); ask again."
_CITATION = re.compile(r"\[(\d+)\]")


def workflow_id(message_id: uuid.UUID) -> str:
    return f"chat:{message_id}"


def stream_id(message_id: uuid.UUID) -> str:
    return f"chat:{message_id}"


def cost_of(tokens: int) -> int:
    """The credits' price table for the answer's tokens, at least 1."""
    return max(1, credits.tokens_charge(tokens))


def now_text() -> str:
    """Now, as pydantic writes an instant."""
    return utc_text()


def event_data(message: ChatMessage | dict[str, Any], **fields: Any) -> dict[str, Any]:
    """An event's data: the message, its conversation and when, then `fields`."""
    if isinstance(message, ChatMessage):
        ids = {"message_id": str(message.id), "conversation_id": str(message.conversation_id)}
    else:
        ids = {"message_id": message["message_id"], "conversation_id": message["conversation_id"]}
    return {**ids, "created_at": now_text(), **fields}


class Interrupted(Exception):
    """A step found its own mark: it ran before, in a process that died."""


class HoldExpired(Exception):
    """The credits held for the answer are no longer held."""


# --- the workflow -------------------------------------------------------------------------------


@DBOS.workflow(name="chat.answer")
async def answer(tenant_id: str, message_id: str) -> str:
    ids = (uuid.UUID(tenant_id), uuid.UUID(message_id))
    try:
        outcome = await generate(*ids)
        if outcome["kind"] != "superseded":
            await settle(*ids, outcome)
    except Exception as error:
        await fail(*ids, error_of(error))
    return await announce(*ids)


def error_of(error: Exception) -> dict[str, Any]:
    """The `error` event's {code, detail, retryable} for what ended an answer."""
    if isinstance(error, Interrupted):
        return {"code": "INTERRUPTED", "detail": INTERRUPTED, "retryable": True}
    if isinstance(error, HoldExpired):
        detail = (
            "The credits held for this answer were released before it was written (it was "
            "interrupted for longer than the hold lasts); ask again."
        )
        return {"code": "CREDITS_EXPIRED", "detail": detail, "retryable": True}
    if isinstance(error, ProviderUnavailable):
        detail = f"The language model is unavailable: {error.message}"
        return {"code": "PROVIDER_UNAVAILABLE", "detail": detail, "retryable": True}
    if isinstance(error, ProviderError):
        detail = f"The language model refused the request: {error.message}"
        return {"code": "PROVIDER_ERROR", "detail": detail, "retryable": False}
    log.error("chat answer failed", exc_info=error)
    detail = f"The answer failed unexpectedly ({type(error).__name__}); ask again."
    return {"code": "INTERNAL_ERROR", "detail": detail, "retryable": True}


# --- steps --------------------------------------------------------------------------------------


@DBOS.step(name="chat.generate")
async def generate(tenant_id: uuid.UUID, message_id: uuid.UUID) -> dict[str, Any]:
    """Retrieve the answer's sources, then stream the model's answer into the log; what it came
    to (see `settle`)."""
    current = runtime.current()
    context = await _retrieve(current, tenant_id, message_id)
    if context is None:
        return {"kind": "superseded"}  # ended already
    if context["stopped"]:  # before the model was called: nothing used, nothing to pay
        return _ended("", "stopped", 0, 0, current.model.model)
    history = [(str(role), str(text)) for role, text in context["history"]]
    request = prompts.answer(context["question"], history, prompts.sources_of(context["resources"]))
    return await _stream(current, tenant_id, message_id, context["ids"], request)


async def _retrieve(
    current: Runtime, tenant_id: uuid.UUID, message_id: uuid.UUID
) -> dict[str, Any] | None:
    """In one transaction: mark the answer begun (before the model is called), extend its hold,
    find its sources, and append `message_start`, `retrieval` (and `conversation_title`) when
    the log is kept in the database (after the commit otherwise). What the model is asked; None
    when the answer has ended already."""
    stream = stream_id(message_id)
    try:
        async with current.db.unit_of_work() as session:
            message = await repository.get_message(session, tenant_id, message_id, for_update=True)
            if message is None or message.status != repository.STREAMING:
                return None
            if message.phase is not None:
                raise Interrupted()
            message.phase = "generate"
            message.model = current.model.model
            conversation = await repository.conversation_any(
                session, tenant_id, message.conversation_id
            )
            assert conversation is not None, "a message's conversation is only ever soft-deleted"
            request = message.request or {}
            question = str(request.get("query", ""))
            scope = request.get("documentIds")
            if scope is None:
                scope = conversation.document_ids
            earlier = await repository.history(
                session,
                tenant_id,
                message.conversation_id,
                before=message.position - 1,
                limit=HISTORY_LIMIT,
            )
            hits = await retrieval.search(
                session,
                tenant_id,
                question,
                document_ids=[uuid.UUID(str(i)) for i in scope],
                limit=SEARCH_LIMIT,
            )
            resources = [
                {
                    "position": position,
                    "document_id": str(hit.document_id),
                    "document_name": hit.document_name,
                    "chunk_id": str(hit.chunk_id),
                    "score": hit.score,
                    "content": hit.content,
                }
                for position, hit in enumerate(hits, start=1)
            ]
            message.retriever_resources = resources
            expired = False
            if message.reservation_id is not None:
                try:
                    await credits.extend(session, tenant_id, message.reservation_id)
                except Conflict:
                    expired = True  # failed once its sources are announced
            stopped = message.stop_requested_at is not None
            events = [
                Append(
                    "message_start",
                    event_data(
                        message,
                        user_message_id=str(message.reply_to),
                        reservation_id=None
                        if message.reservation_id is None
                        else str(message.reservation_id),
                        model=current.model.model,
                    ),
                ),
                Append("retrieval", event_data(message, resources=resources)),
            ]
            if message.position == 2:  # the conversation's first answer
                events.append(
                    Append("conversation_title", event_data(message, title=conversation.title))
                )
            ids = event_data(message)
            # Last, so that the stream's row is locked for the shortest time.
            appended = await current.streams.append_in(session, stream, tenant_id, events)
        if not appended:
            await current.streams.append_many(stream, tenant_id, events)
    except StreamClosed:
        return None  # ended meanwhile (the reconciler gave up on it)
    if expired:
        raise HoldExpired()
    return {
        "ids": {"message_id": ids["message_id"], "conversation_id": ids["conversation_id"]},
        "question": question,
        "history": [
            [row.role, row.content]
            for row in earlier
            if row.role == "user" or row.status in ("completed", "stopped")
        ],
        "resources": [
            {**resource, "heading": hit.heading}
            for resource, hit in zip(resources, hits, strict=True)
        ],
        "stopped": stopped,
    }


def _ended(
    text: str, finish_reason: str, input_tokens: int, output_tokens: int, model: str
) -> dict[str, Any]:
    return {
        "kind": "ended",
        "text": text,
        "finish_reason": finish_reason,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "model": model,
    }


async def _stream(
    current: Runtime,
    tenant_id: uuid.UUID,
    message_id: uuid.UUID,
    ids: dict[str, str],
    request: CompletionRequest,
) -> dict[str, Any]:
    """The model's tokens into the log as they come; the outcome."""
    streams, stream = current.streams, stream_id(message_id)
    # The model is read by a task of its own into this queue, so that batches go out on time;
    # the process's watch of its answers puts `_Changed` in it when the answer is stopped or
    # ended elsewhere. Nothing else wakes an answer waiting on its model.
    queue: asyncio.Queue[StreamChunk | Exception | _Changed | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for chunk in current.model.stream(request):
                queue.put_nowait(chunk)
        except Exception as error:
            queue.put_nowait(error)
        else:
            queue.put_nowait(None)

    reading = asyncio.create_task(pump())
    watch = _watch_of(current.db)
    watch.add(tenant_id, message_id, queue)
    parts: list[str] = []
    pending: list[str] = []
    pending_since = 0.0
    completion = None
    failure: Exception | None = None
    finish: str | None = None
    sent = False
    last_save = time.monotonic()
    saved = 0

    async def flush() -> None:
        nonlocal pending, sent
        if pending:
            await streams.append_many(
                stream,
                tenant_id,
                [Append("message_delta", event_data(ids, text=text)) for text in pending],
            )
            pending, sent = [], True

    try:
        while True:
            now = time.monotonic()
            wait: float | None = None  # until the model or the watch says something
            if pending:
                wait = BATCH_SECONDS - (now - pending_since)
            elif len(parts) > saved:
                wait = SAVE_SECONDS - (now - last_save)
            items: list[StreamChunk | Exception | _Changed | None] = []
            try:
                async with asyncio.timeout(None if wait is None else max(wait, 0.0)):
                    items.append(await queue.get())
            except TimeoutError:
                pass
            while items and not queue.empty() and len(items) < BATCH_TOKENS:
                items.append(queue.get_nowait())
            done = False
            changed: _Changed | None = None
            for item in items:
                if item is None:
                    done = True
                elif isinstance(item, _Changed):
                    changed = item
                elif isinstance(item, Exception):
                    failure, done = item, True
                else:
                    if item.completion is not None:
                        completion = item.completion
                    if item.text:
                        if not pending:
                            pending_since = time.monotonic()
                        pending.append(item.text)
                        parts.append(item.text)
            now = time.monotonic()
            if pending and (
                done
                or changed is not None
                or not sent
                or len(pending) >= BATCH_TOKENS
                or now - pending_since >= BATCH_SECONDS
            ):
                await flush()
            if done:
                break
            if changed is not None:
                if changed.status != repository.STREAMING:
                    return {"kind": "superseded"}
                finish = "stopped"
                break
            if now - last_save >= SAVE_SECONDS and len(parts) > saved:
                last_save, saved = now, len(parts)
                async with current.db.unit_of_work() as session:
                    await repository.save_content(session, tenant_id, message_id, "".join(parts))
    except StreamClosed:
        return {"kind": "superseded"}  # ended by someone else (the reconciler)
    finally:
        watch.discard(message_id)
        reading.cancel()
        with contextlib.suppress(BaseException):
            await reading
    text = "".join(parts)
    input_tokens = sum(count_tokens(m.content) for m in request.messages)
    if failure is not None:
        return {"kind": "failed", "error": error_of(failure), "text": text}
    if finish == "stopped":
        return _ended(text, "stopped", input_tokens, count_tokens(text), current.model.model)
    if completion is None:  # a stream without its final chunk: counted ourselves
        return _ended(text, "stop", input_tokens, count_tokens(text), current.model.model)
    reason = "length" if completion.finish_reason == "length" else "stop"
    usage = completion.usage
    return _ended(text, reason, usage.input_tokens, usage.output_tokens, completion.model)


class _Changed:
    """What the watch found of an answer: stopped (`status` still streaming) or ended
    elsewhere (any other status)."""

    def __init__(self, status: str) -> None:
        self.status = status


def _watch_of(db: Database) -> _Watch:
    watch = _watches.get(db)
    if watch is None:
        watch = _watches[db] = _Watch(db)
    return watch


# The answers read at a time by one statement of the watch.
WATCH_CHUNK = 500


class _Watch:
    """The answers this process writes, watched together: every STOP_CHECK_SECONDS one statement
    (per WATCH_CHUNK answers) reads their status and stop flag, and only an answer stopped or
    ended elsewhere is woken, through its queue. A thousand answers waiting on their model cost
    a few statements a second and no wake-up of their own."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.answers: dict[uuid.UUID, tuple[uuid.UUID, asyncio.Queue[Any]]] = {}
        self.task: asyncio.Task[None] | None = None

    def add(self, tenant_id: uuid.UUID, message_id: uuid.UUID, queue: asyncio.Queue[Any]) -> None:
        self.answers[message_id] = (tenant_id, queue)
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run(), name="watch chat answers")

    def discard(self, message_id: uuid.UUID) -> None:
        self.answers.pop(message_id, None)

    async def _run(self) -> None:
        while self.answers:
            await asyncio.sleep(STOP_CHECK_SECONDS)
            watched = list(self.answers.items())
            for start in range(0, len(watched), WATCH_CHUNK):
                chunk = watched[start : start + WATCH_CHUNK]
                try:
                    async with self.db.unit_of_work() as session:
                        found = await repository.stopped_or_ended(
                            session,
                            [(tenant_id, message_id) for message_id, (tenant_id, _) in chunk],
                        )
                except Exception:
                    log.warning("reading the chat answers' progress failed", exc_info=True)
                    continue
                for message_id, status in found.items():
                    answer = self.answers.pop(message_id, None)
                    if answer is not None:
                        answer[1].put_nowait(_Changed(status))


_watches: weakref.WeakKeyDictionary[Database, _Watch] = weakref.WeakKeyDictionary()


@DBOS.step(name="chat.settle")
async def settle(tenant_id: uuid.UUID, message_id: uuid.UUID, outcome: dict[str, Any]) -> None:
    """End the answer as `generate` left it, credits and all, in one transaction."""
    if outcome["kind"] == "superseded":
        return
    current = runtime.current()
    async with current.db.unit_of_work() as session:
        message = await repository.get_message(session, tenant_id, message_id, for_update=True)
        if message is None or message.status != repository.STREAMING:
            return  # settled already (this step ran before, and its commit went through)
        if outcome["kind"] == "failed":
            await mark_failed(session, message, outcome["error"], content=outcome["text"])
            return
        stopped = outcome["finish_reason"] == "stopped"
        tokens = outcome["input_tokens"] + outcome["output_tokens"]
        charged = 0
        if message.reservation_id is not None:
            if tokens == 0:
                await credits.release(session, tenant_id, message.reservation_id)
            else:
                held = await credits.get_reservation(session, tenant_id, message.reservation_id)
                charged = min(cost_of(tokens), held.amount)
                try:
                    spent = credits.Spent(
                        outcome["input_tokens"],
                        outcome["output_tokens"],
                        "conversation",
                        str(message.conversation_id),
                        model=outcome["model"],
                    )
                    await credits.commit(
                        session, tenant_id, message.reservation_id, charged, spent=spent
                    )
                except Conflict:
                    log.warning("chat answer %s outlived its credit hold", message_id)
                    charged = 0
        balance = await credits.balance(
            session, tenant_id, monthly_grant=current.settings.monthly_credit_grant
        )
        message.status = "stopped" if stopped else "completed"
        message.finish_reason = outcome["finish_reason"]
        message.content = outcome["text"]
        message.model = outcome["model"]
        message.usage = {
            "input_tokens": outcome["input_tokens"],
            "output_tokens": outcome["output_tokens"],
            "credits": charged,
        }
        message.finished_at = utcnow()
        message.terminal = {
            "event": "message_end",
            "data": event_data(
                message,
                finish_reason=outcome["finish_reason"],
                usage={
                    "input_tokens": outcome["input_tokens"],
                    "output_tokens": outcome["output_tokens"],
                    "credits_charged": charged,
                },
                balance_after=balance.available,
                sources=cited(message.retriever_resources, outcome["text"]),
            ),
        }


def cited(resources: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The resources the answer cites as [n], in the order of their positions."""
    numbers = {int(n) for n in _CITATION.findall(text)}
    return [
        {key: resource[key] for key in ("position", "document_id", "document_name", "chunk_id")}
        for resource in resources
        if resource["position"] in numbers
    ]


@DBOS.step(name="chat.fail")
async def fail(tenant_id: uuid.UUID, message_id: uuid.UUID, error: dict[str, Any]) -> None:
    async with runtime.current().db.unit_of_work() as session:
        message = await repository.get_message(session, tenant_id, message_id, for_update=True)
        if message is not None and message.status == repository.STREAMING:
            await mark_failed(session, message, error)


@DBOS.step(name="chat.announce")
async def announce(tenant_id: uuid.UUID, message_id: uuid.UUID) -> str:
    """Append the answer's terminal event, once it is settled; its status."""
    current = runtime.current()
    async with current.db.unit_of_work() as session:
        message = await repository.get_message(session, tenant_id, message_id)
        if message is None:
            return "missing"
        status, terminal = message.status, message.terminal
    if terminal is not None:
        await send_terminal(current.streams, tenant_id, message_id, terminal)
    return status


async def send_terminal(
    streams: StreamLog, tenant_id: uuid.UUID, message_id: uuid.UUID, terminal: dict[str, Any]
) -> None:
    """Append the terminal event; nothing when the stream has ended already."""
    with contextlib.suppress(StreamClosed):
        await streams.append(
            stream_id(message_id), tenant_id, terminal["event"], terminal["data"], terminal=True
        )


async def mark_failed(
    session: AsyncSession,
    message: ChatMessage,
    error: dict[str, Any],
    *,
    content: str | None = None,
) -> None:
    """Fail a streaming answer: the hold released, the partial answer kept (`content`, else what
    was saved), the terminal `error` event to send."""
    if message.reservation_id is not None:
        await credits.release(session, message.tenant_id, message.reservation_id)
    if content is not None:
        message.content = content
    message.status = "failed"
    message.error = error
    message.finished_at = utcnow()
    message.terminal = {"event": "error", "data": event_data(message, **error)}


# --- recovery -----------------------------------------------------------------------------------


@durable.reconcile_source("chat.answer")
async def unfinished_answers(session: AsyncSession) -> list[durable.Unfinished]:
    """Answers still streaming: restarted when their workflow is missing, failed when it failed
    or when they outlast `chat_stall_seconds`."""
    stall_after = timedelta(seconds=runtime.current().settings.chat_stall_seconds)
    now = utcnow()
    return [
        durable.Unfinished(
            workflow_id=workflow_id(message.id),
            restart=durable.restarter(
                answer, workflow_id(message.id), str(message.tenant_id), str(message.id)
            ),
            give_up=_giver_up(message.tenant_id, message.id),
            stalled_reason=STALLED if now - message.created_at > stall_after else None,
        )
        for message in await repository.unfinished(session)
    ]


def _giver_up(tenant_id: uuid.UUID, message_id: uuid.UUID) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        message = await repository.get_message(session, tenant_id, message_id, for_update=True)
        if message is None or message.status != repository.STREAMING:
            return
        code = "STALLED" if reason == STALLED else "INTERNAL_ERROR"
        await mark_failed(session, message, {"code": code, "detail": reason, "retryable": True})
        terminal = message.terminal
        assert terminal is not None

        async def announce_after_commit() -> None:
            await send_terminal(runtime.current().streams, tenant_id, message_id, terminal)

        after_commit(session, announce_after_commit)

    return give_up
