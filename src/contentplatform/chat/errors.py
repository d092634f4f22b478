"""What the chat domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, NotFound, RecordNotFound


class ConversationNotFound(RecordNotFound):
    """There is no such conversation of yours in this organization (another user's
    conversations are not yours to see)."""

    record = "conversation"


class MessageNotFound(RecordNotFound):
    """There is no such message in your conversations of this organization."""

    record = "message"


class EventsExpired(NotFound):
    """The message's events are no longer kept (24 hours after its end): read the final message
    with `chat.listMessages` instead."""


class NotAnAnswer(BadRequest):
    """The message is a question: only answers stream, stop and take feedback."""


class UnknownDocuments(BadRequest):
    """Some documentIds are not documents of this organization; `errors` names each."""


class MessageInFlight(Conflict):
    """The conversation is still answering another message: wait for it, or stop it."""


class IdempotencyKeyReused(Conflict):
    """The idempotencyKey was already used for a different request (or by someone else)."""


class CreditsSettled(Conflict):
    """The credits held under this idempotencyKey were already committed, released or expired."""
