"""Conversations, asking, stopping, rating, and reading answers as they stream. Never commits.

A conversation is its creator's (the identity's subject): another user's, like another
tenant's, is not found. `chat.message` holds `chat_credit_hold` credits under its
idempotencyKey (402 when short) and starts the `chat.answer` workflow once it commits
(durable.py says how an answer is written, settled and priced). The answer's events are read
from its log (kit/streams/), by the request that asked, by `chat.streamEvents`, or by a replay
of the same key, in any process.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import StreamingResponse

from contentplatform.auth.context import TenantAccess
from contentplatform.chat import durable as chat_durable
from contentplatform.chat import repository, retrieval, schemas
from contentplatform.chat.errors import (
    ConversationNotFound,
    CreditsSettled,
    EventsExpired,
    IdempotencyKeyReused,
    MessageInFlight,
    MessageNotFound,
    NotAnAnswer,
)
from contentplatform.chat.models import ChatMessage, Conversation
from contentplatform.core.runtime import Runtime
from contentplatform.credits import service as credits
from contentplatform.credits.models import ReservationStatus
from contentplatform.kit import durable, streams
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError, require
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.kit.text import cleaned, without_brackets

KIND = "chat.message"
# How long `chat.stop` waits for the answer's producer to settle it, and how often it looks.
STOP_WAIT_SECONDS = 10.0
STOP_POLL_SECONDS = 0.1
UNTITLED = "New conversation"


def to_conversation(row: Conversation | dict[str, Any]) -> schemas.Conversation:
    return schemas.Conversation.model_validate(row)


def to_message(row: ChatMessage) -> schemas.ChatMessage:
    feedback = None
    if row.feedback_rating is not None:
        feedback = {"rating": row.feedback_rating, "comment": row.feedback_comment}
    return schemas.ChatMessage.model_validate(
        {
            "id": row.id,
            "conversation_id": row.conversation_id,
            "role": row.role,
            "content": row.content,
            "status": row.status,
            "error": row.error,
            "retriever_resources": row.retriever_resources,
            "usage": row.usage,
            "feedback": feedback,
            "created_at": row.created_at,
            "finished_at": row.finished_at,
        }
    )


def title_of(query: str) -> str:
    """A conversation's first title, from its first question: plain text on one line, at most
    MAX_TITLE characters (cut at a word, with an ellipsis)."""
    line = cleaned(query, len(query)) or cleaned(without_brackets(query), len(query))
    if not line:
        return UNTITLED
    if len(line) <= schemas.MAX_TITLE:
        return line
    cut = line[: schemas.MAX_TITLE - 1]
    if " " in cut[schemas.MAX_TITLE // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip() + "…"


# --- conversations ------------------------------------------------------------------------------


async def _conversation(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    owner: str,
    conversation_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> Conversation:
    found = await repository.conversation_of(
        session, tenant_id, owner, conversation_id, for_update=for_update
    )
    return require(found, ConversationNotFound, conversation_id)


async def list_conversations(
    session: AsyncSession, tenant_id: uuid.UUID, owner: str, data: schemas.ListConversationsInput
) -> schemas.ConversationPage:
    rows, total = await repository.conversations_page(
        session,
        tenant_id,
        owner,
        page=data.page,
        limit=data.limit,
        search=data.search,
        pinned=data.pinned,
    )
    return schemas.ConversationPage(
        data=[to_conversation(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def get_conversation(
    session: AsyncSession, tenant_id: uuid.UUID, owner: str, conversation_id: uuid.UUID
) -> schemas.ConversationDetail:
    conversation = await _conversation(session, tenant_id, owner, conversation_id)
    usage = {"credits": 0, "input_tokens": 0, "output_tokens": 0}
    for used in await repository.usages(session, tenant_id, conversation_id):
        for key in usage:
            usage[key] += int(used.get(key) or 0)
    flying = await repository.in_flight(session, tenant_id, conversation_id)
    return schemas.ConversationDetail(
        **to_conversation(conversation).model_dump(),
        usage=schemas.ConversationUsage(**usage),
        in_flight_message_id=None if flying is None else flying.id,
    )


async def update_conversation(
    session: AsyncSession, tenant: TenantAccess, owner: str, data: schemas.UpdateConversationInput
) -> schemas.Conversation:
    if data.document_ids:
        await retrieval.check_documents(session, tenant, data.document_ids)
    conversation = await _conversation(session, tenant.tenant_id, owner, data.id, for_update=True)
    if data.title is not None:
        conversation.title = data.title
    if data.pinned is not None:
        conversation.pinned = data.pinned
    if data.document_ids is not None:
        conversation.document_ids = [str(i) for i in dict.fromkeys(data.document_ids)]
    await session.flush()
    return to_conversation(conversation)


async def delete_conversation(
    session: AsyncSession, tenant_id: uuid.UUID, owner: str, conversation_id: uuid.UUID
) -> Success:
    """Soft-delete it; an answer still streaming is asked to stop first (its producer settles
    it, `stopped`, within a moment, and its stream ends as any stopped answer's)."""
    conversation = await _conversation(session, tenant_id, owner, conversation_id, for_update=True)
    flying = await repository.in_flight(session, tenant_id, conversation_id)
    now = utcnow()
    if flying is not None:
        await repository.request_stop(session, tenant_id, flying.id, now)
    conversation.deleted_at = now
    return SUCCESS


# --- messages -----------------------------------------------------------------------------------


async def list_messages(
    session: AsyncSession, tenant_id: uuid.UUID, owner: str, data: schemas.ListMessagesInput
) -> schemas.MessageList:
    await _conversation(session, tenant_id, owner, data.id)
    before = None
    if data.before is not None:
        cursor = await repository.get_message(session, tenant_id, data.before)
        if cursor is None or cursor.conversation_id != data.id:
            raise BadRequest(
                f"before ({data.before}) is not a message of this conversation.",
                errors=[FieldError("before", "is not a message of this conversation")],
            )
        before = cursor.position
    rows, total = await repository.messages_page(
        session, tenant_id, data.id, before=before, limit=data.limit
    )
    return schemas.MessageList(data=[to_message(row) for row in rows], total=total)


async def _answer_of(
    session: AsyncSession, tenant_id: uuid.UUID, owner: str, message_id: uuid.UUID
) -> ChatMessage:
    """One of the owner's answers: 404 when it is none of theirs, 400 when it is a question."""
    message = require(
        await repository.message_of(session, tenant_id, owner, message_id),
        MessageNotFound,
        message_id,
    )
    if message.role != "assistant":
        raise NotAnAnswer(f"Message {message_id} is a question: only answers can be used so.")
    return message


def _request_of(data: schemas.MessageInput) -> dict[str, Any]:
    """What a replay of the key must ask again (responseMode aside: a client may ask the same
    answer as a stream, then as JSON)."""
    return {
        "query": data.query,
        "conversationId": None if data.conversation_id is None else str(data.conversation_id),
        "documentIds": None if data.document_ids is None else [str(i) for i in data.document_ids],
    }


@dataclass(frozen=True)
class Posted:
    """The answer `post_message` made (`fresh`) or found under the idempotency key."""

    message: ChatMessage
    fresh: bool


async def post_message(
    session: AsyncSession,
    runtime: Runtime,
    tenant: TenantAccess,
    owner: str,
    data: schemas.MessageInput,
) -> Posted:
    """The question and its answer (`streaming`), its credits held, its conversation (a new
    one without `conversationId`), its stream made and its workflow started once this commits;
    or the answer already asked under this idempotency key."""
    tenant_id, settings = tenant.tenant_id, runtime.settings
    request = _request_of(data)
    found = await repository.message_by_key(session, tenant_id, data.idempotency_key)
    if found is not None:
        return Posted(await _replayed(session, tenant_id, owner, found, request), fresh=False)
    if data.conversation_id is not None:
        await _conversation(session, tenant_id, owner, data.conversation_id)
    if data.document_ids:
        await retrieval.check_documents(session, tenant, data.document_ids)
    conversation = None
    if data.conversation_id is not None:
        # Locked: two questions racing into one conversation agree on which is in flight.
        conversation = await _conversation(
            session, tenant_id, owner, data.conversation_id, for_update=True
        )
    hold = await credits.reserve(
        session,
        tenant_id,
        kind=KIND,
        idempotency_key=data.idempotency_key,
        amount=credits.price(KIND).amount,
        ttl_seconds=settings.credit_reservation_ttl_seconds,
        monthly_grant=settings.monthly_credit_grant,
    )
    # Under the tenant's credit lock now: a request with this key that raced this one has
    # committed its answer, which is this one's too.
    found = await repository.message_by_key(session, tenant_id, data.idempotency_key)
    if found is not None:
        return Posted(await _replayed(session, tenant_id, owner, found, request), fresh=False)
    if hold.status != ReservationStatus.held:
        raise CreditsSettled(
            f"The credits held under idempotencyKey {data.idempotency_key!r} are "
            f"{hold.status.value}; use a new key."
        )
    if conversation is not None:
        flying = await repository.in_flight(session, tenant_id, conversation.id)
        if flying is not None:
            raise MessageInFlight(
                f"Conversation {conversation.id} is still answering message {flying.id}; wait "
                "for its end or stop it (chat.stop) before asking the next question."
            )
    now = utcnow()
    if conversation is None:
        conversation = Conversation(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            created_by=owner,
            title=title_of(data.query),
            pinned=False,
            document_ids=[],
            message_count=0,
            created_at=now,
            updated_at=now,
        )
        session.add(conversation)
        await session.flush()  # before its messages, which refer to it
    position = conversation.message_count + 1
    question = ChatMessage(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        conversation_id=conversation.id,
        position=position,
        role="user",
        content=data.query,
        status="completed",
        retriever_resources=[],
        created_at=now,
        updated_at=now,
        finished_at=now,
    )
    answer = ChatMessage(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        conversation_id=conversation.id,
        position=position + 1,
        role="assistant",
        reply_to=question.id,
        content="",
        status=repository.STREAMING,
        retriever_resources=[],
        reservation_id=hold.id,
        idempotency_key=data.idempotency_key,
        request=request,
        model=runtime.model.model,
        created_at=now,
        updated_at=now,
    )
    conversation.message_count = position + 1
    conversation.last_message_at = now
    session.add_all([question, answer])
    await session.flush()

    # The log exists before its producer starts and before the answer's reader opens it: made
    # in this transaction when it is kept in the database, else first once this commits.
    await runtime.streams.create_in(session, chat_durable.stream_id(answer.id), tenant_id)
    durable.start_after_commit(
        session,
        chat_durable.answer,
        chat_durable.workflow_id(answer.id),
        str(tenant_id),
        str(answer.id),
    )
    return Posted(answer, fresh=True)


async def _replayed(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    owner: str,
    found: ChatMessage,
    request: dict[str, Any],
) -> ChatMessage:
    conversation = await repository.conversation_any(session, tenant_id, found.conversation_id)
    if conversation is None or conversation.created_by != owner or found.request != request:
        raise IdempotencyKeyReused(
            f"The idempotencyKey {found.idempotency_key!r} was already used for another "
            "request; use a new key for a new question."
        )
    if conversation.deleted_at is not None:
        raise ConversationNotFound(conversation.id)
    return found


# --- reading an answer --------------------------------------------------------------------------


async def answer_stream(
    runtime: Runtime, request: Request, tenant_id: uuid.UUID, posted: Posted
) -> EventSourceResponse:
    """The answer's events: from the start for a new answer (its log is made once the request
    commits, so it is opened then), else after the request's Last-Event-ID."""
    message_id = posted.message.id
    if not posted.fresh:
        return await _resumed(runtime, request, tenant_id, message_id, None)
    log, stream = runtime.streams, chat_durable.stream_id(message_id)
    slot = log.open_streams.take()

    async def events() -> AsyncIterator[streams.Event]:
        async for event in await log.read(stream, tenant_id, made=True):
            yield event

    return streams.sse_response(
        events(),
        slot=slot,
        ping_seconds=runtime.settings.stream_ping_seconds,
        id_prefix=str(message_id),
        seq_in_data=True,
    )


async def _resumed(
    runtime: Runtime,
    request: Request,
    tenant_id: uuid.UUID,
    message_id: uuid.UUID,
    last_event_id: str | None,
) -> EventSourceResponse:
    prefix = str(message_id)
    raw = request.headers.get("last-event-id") or last_event_id
    after = streams.event_number(raw, prefix) if raw else 0
    slot = runtime.streams.open_streams.take()
    try:
        events = await runtime.streams.read(
            chat_durable.stream_id(message_id), tenant_id, after=after
        )
    except streams.StreamNotFound:
        slot.release()
        raise EventsExpired(
            f"The events of message {message_id} are no longer kept; read the message with "
            "chat.listMessages instead."
        ) from None
    except BaseException:
        slot.release()
        raise
    return streams.sse_response(
        events,
        slot=slot,
        ping_seconds=runtime.settings.stream_ping_seconds,
        id_prefix=prefix,
        seq_in_data=True,
    )


def stream_of(message_id: uuid.UUID) -> str:
    """The name of an answer's event stream (what a stream token for it names)."""
    return chat_durable.stream_id(message_id)


async def readable_stream(
    session: AsyncSession, tenant_id: uuid.UUID, owner: str, message_id: uuid.UUID
) -> str:
    """The event stream of one of the owner's answers, for a stream URL: 404 when it is none of
    theirs, 400 when it is a question."""
    await _answer_of(session, tenant_id, owner, message_id)
    return stream_of(message_id)


async def stream_events(
    session: AsyncSession,
    runtime: Runtime,
    request: Request,
    tenant_id: uuid.UUID,
    owner: str,
    data: schemas.StreamEventsInput,
) -> EventSourceResponse:
    await _answer_of(session, tenant_id, owner, data.id)
    # The request's connection goes back to the pool before the log is opened: a crowd of
    # readers never holds one connection each while waiting for a second.
    await session.commit()
    return await _resumed(runtime, request, tenant_id, data.id, data.last_event_id)


def blocking_answer(
    runtime: Runtime, tenant_id: uuid.UUID, message: ChatMessage
) -> schemas.ChatMessage | StreamingResponse:
    """The finished answer as JSON: at once when it has ended; else a response that sends it
    when it does (the request's transaction has to commit before its workflow starts), with a
    space now and then meanwhile, which JSON readers skip, so no proxy times out the wait."""
    if message.status != repository.STREAMING:
        return to_message(message)
    message_id = message.id

    async def body() -> AsyncIterator[bytes]:
        waiting = asyncio.create_task(_until_settled(runtime, tenant_id, message_id))
        try:
            while not (await asyncio.wait({waiting}, timeout=runtime.settings.stream_ping_seconds))[
                0
            ]:
                yield b" "
            final = waiting.result()
        finally:
            waiting.cancel()
        yield to_message(final).model_dump_json().encode()

    return StreamingResponse(body(), media_type="application/json")


async def _until_settled(
    runtime: Runtime, tenant_id: uuid.UUID, message_id: uuid.UUID
) -> ChatMessage:
    """The answer once it has ended: after its terminal event (which follows the commit that
    ends it), or, with no log to follow, as soon as a look at it finds it ended."""
    try:
        async for event in await runtime.streams.read(
            chat_durable.stream_id(message_id), tenant_id
        ):
            if event.terminal:
                break
    except streams.StreamNotFound:
        pass
    while True:
        async with runtime.db.unit_of_work() as session:
            message = await repository.get_message(session, tenant_id, message_id)
        assert message is not None, "messages are never deleted but with their tenant"
        if message.status != repository.STREAMING:
            return message
        await asyncio.sleep(STOP_POLL_SECONDS)


async def stop(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    owner: str,
    message_id: uuid.UUID,
) -> schemas.StopResult | StreamingResponse:
    """Ask the answer to stop, then answer its status once its producer has settled it (at most
    STOP_WAIT_SECONDS later: the wait is the response's, after this request commits the ask)."""
    message = await _answer_of(session, tenant_id, owner, message_id)
    if message.status != repository.STREAMING:
        return schemas.StopResult(id=message.id, status=message.status)
    await repository.request_stop(session, tenant_id, message_id, utcnow())

    async def body() -> AsyncIterator[bytes]:
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        while True:
            async with runtime.db.unit_of_work() as reading:
                state = await repository.progress(reading, tenant_id, message_id)
            status = state[0] if state is not None else repository.STREAMING
            if status != repository.STREAMING or time.monotonic() >= deadline:
                break
            await asyncio.sleep(STOP_POLL_SECONDS)
        result = schemas.StopResult(id=message_id, status=status)
        yield result.model_dump_json().encode()

    return StreamingResponse(body(), media_type="application/json")


async def feedback(
    session: AsyncSession, tenant_id: uuid.UUID, owner: str, data: schemas.FeedbackInput
) -> schemas.FeedbackResult:
    message = await _answer_of(session, tenant_id, owner, data.id)
    message.feedback_rating = data.rating
    message.feedback_comment = data.comment if data.rating is not None else None
    message.feedback_updated_at = utcnow()
    return schemas.FeedbackResult(
        message_id=message.id,
        rating=data.rating,
        comment=message.feedback_comment,
        updated_at=message.feedback_updated_at,
    )


async def retrieve(
    session: AsyncSession, tenant: TenantAccess, data: schemas.RetrieveInput
) -> schemas.RetrieveResult:
    started = time.perf_counter()
    if data.document_ids:
        await retrieval.check_documents(session, tenant, data.document_ids)
    hits = await retrieval.search(
        session,
        tenant.tenant_id,
        data.query,
        document_ids=data.document_ids,
        limit=data.limit,
        min_score=data.min_score,
    )
    found = [
        schemas.RetrievedChunk(
            position=position,
            document_id=hit.document_id,
            document_name=hit.document_name,
            chunk_id=hit.chunk_id,
            ordinal=hit.ordinal,
            score=hit.score,
            content=hit.content,
            heading=hit.heading,
            char_start=hit.char_start,
            char_end=hit.char_end,
        )
        for position, hit in enumerate(hits, start=1)
    ]
    return schemas.RetrieveResult(
        query=data.query,
        data=found,
        total=len(found),
        took_ms=round((time.perf_counter() - started) * 1000),
    )
