"""Inputs, records and stream events of the chat operations."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page, Record
from contentplatform.kit.text import Identifier, MultiLine, PlainMultiLine, PlainText

MAX_TITLE = 200
MAX_QUERY = 8000
MAX_RETRIEVE_QUERY = 2000
MAX_DOCUMENTS = 50
MAX_COMMENT = 2000

Role = Literal["user", "assistant"]
MessageStatus = Literal["streaming", "completed", "stopped", "failed"]
FinishReason = Literal["stop", "length", "stopped"]
Rating = Literal["like", "dislike"]
ResponseMode = Literal["streaming", "blocking"]

QUESTION = "How often should I water tomatoes in a dry summer?"


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


# --- inputs -----------------------------------------------------------------------------------


class ListConversationsInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    search: str | None = Field(None, max_length=255, description="Part of the title.")
    pinned: bool | None = Field(None, description="Only pinned (true) or unpinned (false) ones.")


class ConversationIdInput(Input):
    id: uuid.UUID


class UpdateConversationInput(Input):
    id: uuid.UUID
    title: PlainText | None = Field(
        None, min_length=1, max_length=MAX_TITLE, description="Plain text: markup is stripped."
    )
    pinned: bool | None = None
    document_ids: list[uuid.UUID] | None = Field(
        None,
        max_length=MAX_DOCUMENTS,
        description="Scope retrieval to these documents of the organization ([]: every ready "
        "document). An unknown one is 400, naming it.",
    )

    @field_validator("title")
    @classmethod
    def _title_not_blank(cls, value: str | None) -> str | None:
        return None if value is None else _not_blank(value)


class ListMessagesInput(Input):
    id: uuid.UUID
    before: uuid.UUID | None = Field(
        None, description="A message of the conversation: only the ones older than it."
    )
    limit: int = Field(20, ge=1, le=100)


class MessageInput(Input):
    query: MultiLine = Field(
        min_length=1, max_length=MAX_QUERY, examples=[QUESTION], description="The question."
    )
    conversation_id: uuid.UUID | None = Field(
        None, description="A conversation of yours; absent: a new conversation."
    )
    document_ids: list[uuid.UUID] | None = Field(
        None,
        max_length=MAX_DOCUMENTS,
        description="Search only these documents for this turn ([]: every ready document); "
        "absent: the conversation's scope. The primary knowledge document is always searched.",
    )
    idempotency_key: Identifier = Field(
        min_length=1,
        max_length=255,
        examples=["chat-7f3a9c2e"],
        description="The same key with the same request replays the same answer (its stream, "
        "resumed after Last-Event-ID) and never holds credits twice; with another request, 409.",
    )
    response_mode: ResponseMode = Field(
        "streaming",
        description="`streaming`: text/event-stream. `blocking`: the finished answer as JSON "
        "(the body may begin with spaces while the answer is written).",
    )

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        return _not_blank(value)


class MessageIdInput(Input):
    id: uuid.UUID


class StreamEventsInput(Input):
    id: uuid.UUID
    last_event_id: str | None = Field(
        None,
        max_length=64,
        description="The last event id seen (`<message id>:<seq>` or `<seq>`); the "
        "`Last-Event-ID` header wins when both are sent.",
    )


class FeedbackInput(Input):
    id: uuid.UUID
    rating: Rating | None = Field(description="like, dislike, or null to take a rating back.")
    comment: PlainMultiLine | None = Field(None, max_length=MAX_COMMENT)


class RetrieveInput(Input):
    query: MultiLine = Field(min_length=1, max_length=MAX_RETRIEVE_QUERY, examples=[QUESTION])
    document_ids: list[uuid.UUID] | None = Field(
        None,
        max_length=MAX_DOCUMENTS,
        description="Only these documents (the primary knowledge document is always searched).",
    )
    limit: int = Field(8, ge=1, le=50)
    min_score: float | None = Field(None, ge=0, le=1)

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        return _not_blank(value)


# --- records ----------------------------------------------------------------------------------


class Conversation(Record):
    id: uuid.UUID
    title: str
    pinned: bool
    document_ids: list[uuid.UUID]
    message_count: int
    last_message_at: datetime | None
    created_by: str
    created_at: datetime


class ConversationUsage(BaseModel):
    credits: int
    input_tokens: int
    output_tokens: int


class ConversationDetail(Conversation):
    usage: ConversationUsage
    in_flight_message_id: uuid.UUID | None


class ConversationPage(Page[Conversation]):
    """A page of conversations."""


class RetrieverResource(BaseModel):
    position: int
    document_id: uuid.UUID
    document_name: str
    chunk_id: uuid.UUID
    score: float
    content: str


class MessageUsage(BaseModel):
    input_tokens: int
    output_tokens: int
    credits: int


class Feedback(BaseModel):
    rating: Rating
    comment: str | None


class MessageError(BaseModel):
    code: str
    detail: str
    retryable: bool


class ChatMessage(BaseModel):
    id: uuid.UUID
    conversation_id: uuid.UUID
    role: Role
    content: str
    status: MessageStatus
    error: MessageError | None
    retriever_resources: list[RetrieverResource]
    usage: MessageUsage | None
    feedback: Feedback | None
    created_at: datetime
    finished_at: datetime | None


class MessageList(Listing[ChatMessage]):
    """Messages, newest first, and how many the conversation has."""


class StopResult(BaseModel):
    id: uuid.UUID
    status: MessageStatus = Field(
        description="`streaming` only when the answer's producer did not settle within 10 "
        "seconds; the stop stays asked and it ends `stopped` once the producer sees it."
    )


class FeedbackResult(BaseModel):
    message_id: uuid.UUID
    rating: Rating | None
    comment: str | None
    updated_at: datetime


class RetrievedChunk(BaseModel):
    position: int
    document_id: uuid.UUID
    document_name: str
    chunk_id: uuid.UUID
    ordinal: int
    score: float
    content: str
    # The path of the headings the chunk's text is under in its document ("Guide > Install"),
    # None when it is under none.
    heading: str | None
    char_start: int
    char_end: int


class RetrieveResult(BaseModel):
    query: str
    data: list[RetrievedChunk]
    total: int
    took_ms: int


# --- stream events (each data object; `seq` is the event's id) -------------------------------


class EventData(BaseModel):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    seq: int
    created_at: datetime


class MessageStart(EventData):
    user_message_id: uuid.UUID
    reservation_id: uuid.UUID | None
    model: str


class Retrieval(EventData):
    resources: list[RetrieverResource]


class MessageDelta(EventData):
    text: str


class ConversationTitle(EventData):
    title: str


class EndUsage(BaseModel):
    input_tokens: int
    output_tokens: int
    credits_charged: int


class CitedSource(BaseModel):
    position: int
    document_id: uuid.UUID
    document_name: str
    chunk_id: uuid.UUID


class MessageEnd(EventData):
    finish_reason: FinishReason
    usage: EndUsage
    balance_after: int
    sources: list[CitedSource]


class StreamError(EventData):
    code: str
    detail: str
    retryable: bool
