"""The Chat operations: declarations only; the rules live in service.py and durable.py.

Every operation is the member's (chat is for every role) and acts on the caller's own
conversations: another user's, like another organization's, is 404.
"""

from __future__ import annotations

from sse_starlette import EventSourceResponse
from starlette.responses import StreamingResponse

from contentplatform.auth.context import Access
from contentplatform.chat import schemas, service
from contentplatform.chat.errors import (
    ConversationNotFound,
    CreditsSettled,
    EventsExpired,
    IdempotencyKeyReused,
    MessageInFlight,
    MessageNotFound,
    NotAnAnswer,
    UnknownDocuments,
)
from contentplatform.core import stream_urls
from contentplatform.core.procedures import Context, EventStream, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits, ReservationSettled
from contentplatform.kit.schemas import Success

router = ProcedureRouter("chat", tag="Chat", feature="chat")

ANSWER_EVENTS = EventStream(
    events={
        "message_start": schemas.MessageStart,
        "retrieval": schemas.Retrieval,
        "conversation_title": schemas.ConversationTitle,
        "message_delta": schemas.MessageDelta,
        "message_end": schemas.MessageEnd,
        "error": schemas.StreamError,
    },
    terminal=["message_end", "error"],
)
EVENTS_PATH = "/v1/chat/messages/{id}/events"


@router.get("listConversations", "/v1/chat/conversations", access=Access.member)
async def list_conversations(
    ctx: Context, data: schemas.ListConversationsInput
) -> schemas.ConversationPage:
    """Your conversations, the latest active first.

    Conversations are private to their creator. `search` matches part of the title."""
    return await service.list_conversations(
        ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data
    )


@router.get(
    "getConversation",
    "/v1/chat/conversations/{id}",
    access=Access.member,
    errors=[ConversationNotFound],
)
async def get_conversation(
    ctx: Context, data: schemas.ConversationIdInput
) -> schemas.ConversationDetail:
    """One of your conversations, with its usage totals and the answer still streaming."""
    return await service.get_conversation(
        ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data.id
    )


@router.patch(
    "updateConversation",
    "/v1/chat/conversations/{id}",
    access=Access.member,
    errors=[ConversationNotFound, UnknownDocuments],
)
async def update_conversation(
    ctx: Context, data: schemas.UpdateConversationInput
) -> schemas.Conversation:
    """Rename or pin a conversation, or scope its retrieval to chosen documents.

    Only the fields sent change. `documentIds: []` searches every ready document again; an id
    that is not a document of the organization is 400, naming it."""
    return await service.update_conversation(ctx.session, ctx.tenant, ctx.identity.subject, data)


@router.delete(
    "deleteConversation",
    "/v1/chat/conversations/{id}",
    access=Access.member,
    errors=[ConversationNotFound],
)
async def delete_conversation(ctx: Context, data: schemas.ConversationIdInput) -> Success:
    """Delete a conversation (soft). An answer still streaming is stopped first."""
    return await service.delete_conversation(
        ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data.id
    )


@router.get(
    "listMessages",
    "/v1/chat/conversations/{id}/messages",
    access=Access.member,
    errors=[ConversationNotFound],
)
async def list_messages(ctx: Context, data: schemas.ListMessagesInput) -> schemas.MessageList:
    """The messages of a conversation, newest first.

    `before` (a message id) pages back. An answer still streaming shows its content so far
    (saved about every second) and status `streaming`."""
    return await service.list_messages(
        ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data
    )


@router.post(
    "message",
    "/v1/chat/messages",
    access=Access.member,
    events=ANSWER_EVENTS,
    errors=[
        ConversationNotFound,
        UnknownDocuments,
        InsufficientCredits,
        MessageInFlight,
        IdempotencyKeyReused,
        CreditsSettled,
        ReservationSettled,
        EventsExpired,
    ],
)
async def message(
    ctx: Context, data: schemas.MessageInput
) -> schemas.ChatMessage | EventSourceResponse | StreamingResponse:
    """Ask a question over the organization's knowledge; the answer streams over SSE.

    The answer is retrieved from the ready documents (the conversation's or this turn's
    `documentIds`; the primary knowledge document is always searched) and written token by
    token: `message_start`, `retrieval`, `conversation_title` (a new conversation's first turn),
    `message_delta`s, then exactly one `message_end` or `error`. Credits (`chat.message`) are
    held before the stream opens (402 when short) and the actual cost committed at the end: 1
    credit per started 1,000 model tokens, at most the hold. Everything refused before the
    stream opens is problem+json (400, 402, 404, 409 while the conversation answers another
    question, 429). The same `idempotencyKey` with the same request replays the same answer
    (its stream after `Last-Event-ID`, or its final JSON), never holding credits twice.
    Disconnecting does not stop the answer: `chat.stop` does. `responseMode: blocking` answers
    the finished message as JSON instead."""
    if data.response_mode != "blocking":
        # At the process's limit of open streams: refused before the question is taken.
        ctx.runtime.streams.open_streams.check()
    posted = await service.post_message(
        ctx.session, ctx.runtime, ctx.tenant, ctx.identity.subject, data
    )
    if data.response_mode == "blocking":
        return service.blocking_answer(ctx.runtime, ctx.tenant.tenant_id, posted.message)
    return await service.answer_stream(ctx.runtime, ctx.request, ctx.tenant.tenant_id, posted)


@router.get(
    "streamEvents",
    EVENTS_PATH,
    access=Access.member,
    events=ANSWER_EVENTS,
    errors=[MessageNotFound, NotAnAnswer, EventsExpired],
    stream_token=lambda data: service.stream_of(data.id),
)
async def stream_events(ctx: Context, data: schemas.StreamEventsInput) -> EventSourceResponse:
    """Resume an answer's stream after a disconnect.

    Replays the events after `Last-Event-ID` (header, or `lastEventId`), then follows the live
    ones to the terminal event; a finished answer replays and closes. Events are kept 24 hours
    after the answer ends; after that this is 404 and the message is read with `listMessages`.
    A browser's EventSource opens it with the URL of chat.createStreamUrl instead of the
    Authorization header."""
    return await service.stream_events(
        ctx.session, ctx.runtime, ctx.request, ctx.tenant.tenant_id, ctx.identity.subject, data
    )


@router.post(
    "createStreamUrl",
    "/v1/chat/messages/{id}/stream-url",
    access=Access.member,
    api_keys=False,
    errors=[MessageNotFound, NotAnAnswer],
)
async def create_stream_url(ctx: Context, data: schemas.MessageIdInput) -> stream_urls.StreamUrl:
    """A short-lived URL that opens an answer's event stream, for a browser's EventSource.

    EventSource cannot send an Authorization header: the URL is chat.streamEvents of this answer
    with a token (`streamToken`) that opens that stream alone, as you, for
    `STREAM_TOKEN_TTL_SECONDS` (5 minutes by default); every other operation refuses it. While
    it is valid EventSource reconnects to it by itself, sending `Last-Event-ID`; after
    `expires_at`, make a new one and open it with `&lastEventId=<last id seen>`. A stream
    already open runs to its end. API keys cannot make one: a server reads the stream with its
    key."""
    stream = await service.readable_stream(
        ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data.id
    )
    return stream_urls.issue(ctx, EVENTS_PATH.format(id=data.id), stream)


@router.post(
    "stop",
    "/v1/chat/messages/{id}/stop",
    access=Access.member,
    errors=[MessageNotFound, NotAnAnswer],
)
async def stop(
    ctx: Context, data: schemas.MessageIdInput
) -> schemas.StopResult | StreamingResponse:
    """Stop writing an answer.

    Idempotent. Waits (up to 10 seconds) for the answer to end and answers its status: the
    stream ends with `message_end` and `finish_reason: stopped`, the partial answer is kept and
    only the tokens used are charged. An answer that had already ended answers its status."""
    return await service.stop(
        ctx.session, ctx.runtime, ctx.tenant.tenant_id, ctx.identity.subject, data.id
    )


@router.procedure(
    "feedback",
    "PUT",
    "/v1/chat/messages/{id}/feedback",
    access=Access.member,
    errors=[MessageNotFound, NotAnAnswer],
)
async def feedback(ctx: Context, data: schemas.FeedbackInput) -> schemas.FeedbackResult:
    """Rate an answer (like or dislike, with an optional comment); null takes the rating back."""
    return await service.feedback(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.post("retrieve", "/v1/chat/retrieve", access=Access.member, errors=[UnknownDocuments])
async def retrieve(ctx: Context, data: schemas.RetrieveInput) -> schemas.RetrieveResult:
    """Search the knowledge index as chat and generation would retrieve from it.

    Only ready, unarchived, undeleted documents; the primary knowledge document is always
    searched and its best chunks kept. No credits."""
    return await service.retrieve(ctx.session, ctx.tenant, data)
