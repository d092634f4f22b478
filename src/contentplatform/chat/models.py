"""Conversations and their messages."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, SoftDeleteMixin, TenantMixin, UTCDateTime


class Conversation(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    """A conversation of one user (`created_by`, the identity's subject): private to them."""

    __tablename__ = "chat_conversations"
    __table_args__ = (
        Index(
            "ix_chat_conversations_tenant_id_created_by_last_message_at",
            "tenant_id",
            "created_by",
            "last_message_at",
        ),
    )

    created_by: Mapped[str] = mapped_column(String(255), nullable=False)
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    pinned: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    # The documents retrieval is scoped to; [] is every ready document.
    document_ids: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    # Every message, questions and answers.
    message_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    last_message_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class ChatMessage(RecordMixin, TenantMixin, Base):
    """A question (`user`) or an answer (`assistant`) of a conversation.

    An answer is `streaming` until its producer (the `chat.answer` workflow) or the reconciler
    settles it: `completed`, `stopped` or `failed`; `terminal` then holds the stream's last event,
    appended to the log after that commit. `phase` says how far its workflow got (`generate`
    once it began, before its model is called; `retrieve` in answers begun by an earlier
    version), so a step run again after a crash knows it was interrupted."""

    __tablename__ = "chat_messages"
    __table_args__ = (
        # The same idempotency key of a tenant is always the same answer (questions have none).
        UniqueConstraint("tenant_id", "idempotency_key"),
        UniqueConstraint("conversation_id", "position"),
        Index("ix_chat_messages_status", "status"),
    )

    conversation_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("chat_conversations.id", ondelete="CASCADE"), nullable=False, index=True
    )
    # 1, 2, 3, ... within the conversation: the order of its messages.
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    role: Mapped[str] = mapped_column(String(10), nullable=False)  # user | assistant
    # An answer's question.
    reply_to: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    content: Mapped[str] = mapped_column(Text, nullable=False, default="")
    # streaming -> completed | stopped | failed (a question is completed when asked)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    phase: Mapped[str | None] = mapped_column(String(20))
    finish_reason: Mapped[str | None] = mapped_column(String(20))  # stop | length | stopped
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # {code, detail, retryable}
    retriever_resources: Mapped[list[dict[str, Any]]] = mapped_column(
        JSON, nullable=False, default=list
    )
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # input/output tokens, credits
    # The terminal event once settled: {"event": "message_end" | "error", "data": {...}}.
    terminal: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    reservation_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    # What was asked (query, conversationId, documentIds): a replay must ask the same.
    request: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    model: Mapped[str | None] = mapped_column(String(255))
    stop_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    feedback_rating: Mapped[str | None] = mapped_column(String(10))  # like | dislike
    feedback_comment: Mapped[str | None] = mapped_column(Text)
    feedback_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
