"""Every query on conversations and messages; the tenant always comes first, but for the
reconciler. A conversation is its creator's: the queries a caller reaches take the owner too."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Update, Uuid, and_, cast, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.chat.models import ChatMessage, Conversation
from contentplatform.kit.db import (
    Owned,
    cross_tenant,
    get_owned,
    json_items,
    owned_by,
    page_of,
    plain,
)
from contentplatform.kit.schemas import offset_of

STREAMING = "streaming"

get_message = Owned(ChatMessage)
get_conversation = Owned(Conversation)


async def conversation_of(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    owner: str,
    conversation_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> Conversation | None:
    """The owner's live conversation (None when absent, deleted, another tenant's or user's)."""
    found = await get_owned(
        session, Conversation, tenant_id, conversation_id, for_update=for_update
    )
    return found if found is not None and found.created_by == owner else None


def _owned(tenant_id: uuid.UUID, owner: str) -> Select[Conversation]:
    return select(Conversation).where(
        Conversation.tenant_id == tenant_id,
        Conversation.created_by == owner,
        Conversation.deleted_at.is_(None),
    )


async def conversations_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    owner: str,
    *,
    page: int,
    limit: int,
    search: str | None,
    pinned: bool | None,
) -> tuple[list[dict[str, Any]], int]:
    """A page of the owner's conversations, the latest active first, as their columns."""
    statement = _owned(tenant_id, owner)
    if search:
        statement = statement.where(
            func.lower(Conversation.title).contains(search.lower(), autoescape=True)
        )
    if pinned is not None:
        statement = statement.where(Conversation.pinned.is_(pinned))
    return await page_of(
        session,
        plain(statement),
        Conversation.last_message_at.desc(),
        Conversation.created_at.desc(),
        Conversation.id,
        limit=limit,
        offset=offset_of(page, limit),
    )


async def message_of(
    session: AsyncSession, tenant_id: uuid.UUID, owner: str, message_id: uuid.UUID
) -> ChatMessage | None:
    """A message of one of the owner's live conversations."""
    result = await session.execute(
        select(ChatMessage)
        .join(Conversation, Conversation.id == ChatMessage.conversation_id)
        .where(
            ChatMessage.tenant_id == tenant_id,
            ChatMessage.id == message_id,
            Conversation.tenant_id == tenant_id,
            Conversation.created_by == owner,
            Conversation.deleted_at.is_(None),
        )
    )
    return result.scalar_one_or_none()


async def message_by_key(
    session: AsyncSession, tenant_id: uuid.UUID, idempotency_key: str
) -> ChatMessage | None:
    return await owned_by(session, ChatMessage, tenant_id, idempotency_key=idempotency_key)


async def in_flight(
    session: AsyncSession, tenant_id: uuid.UUID, conversation_id: uuid.UUID
) -> ChatMessage | None:
    """The conversation's answer still streaming, if any."""
    result = await session.execute(
        select(ChatMessage)
        .where(
            ChatMessage.tenant_id == tenant_id,
            ChatMessage.conversation_id == conversation_id,
            ChatMessage.status == STREAMING,
        )
        .limit(1)
    )
    return result.scalar_one_or_none()


def _of_conversation(tenant_id: uuid.UUID, conversation_id: uuid.UUID) -> Select[ChatMessage]:
    return select(ChatMessage).where(
        ChatMessage.tenant_id == tenant_id, ChatMessage.conversation_id == conversation_id
    )


async def messages_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    conversation_id: uuid.UUID,
    *,
    before: int | None,
    limit: int,
) -> tuple[list[ChatMessage], int]:
    """The conversation's messages before position `before` (all when None), newest first, and
    how many the conversation has."""
    statement = _of_conversation(tenant_id, conversation_id)
    total = await session.scalar(select(func.count()).select_from(statement.subquery()))
    if before is not None:
        statement = statement.where(ChatMessage.position < before)
    result = await session.execute(statement.order_by(ChatMessage.position.desc()).limit(limit))
    return list(result.scalars()), int(total or 0)


async def history(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    conversation_id: uuid.UUID,
    *,
    before: int,
    limit: int,
) -> list[ChatMessage]:
    """Up to `limit` of the conversation's messages before position `before`, oldest first."""
    result = await session.execute(
        _of_conversation(tenant_id, conversation_id)
        .where(ChatMessage.position < before)
        .order_by(ChatMessage.position.desc())
        .limit(limit)
    )
    return list(reversed(result.scalars().all()))


async def usages(
    session: AsyncSession, tenant_id: uuid.UUID, conversation_id: uuid.UUID
) -> list[dict[str, Any]]:
    """The usage of each answer of the conversation that has one."""
    result = await session.execute(
        select(ChatMessage.usage).where(
            ChatMessage.tenant_id == tenant_id,
            ChatMessage.conversation_id == conversation_id,
            ChatMessage.usage.is_not(None),
        )
    )
    return [usage for usage in result.scalars() if usage]


async def request_stop(
    session: AsyncSession, tenant_id: uuid.UUID, message_id: uuid.UUID, now: datetime
) -> None:
    """Ask a streaming answer to stop (once: the first request's time is kept)."""
    first = ChatMessage.stop_requested_at.is_(None)
    await session.execute(
        _while_streaming(tenant_id, message_id).where(first).values(stop_requested_at=now)
    )


async def progress(
    session: AsyncSession, tenant_id: uuid.UUID, message_id: uuid.UUID
) -> tuple[str, datetime | None] | None:
    """(status, stop_requested_at) of a message, read as it is now."""
    row = (
        await session.execute(
            select(ChatMessage.status, ChatMessage.stop_requested_at).where(
                ChatMessage.tenant_id == tenant_id, ChatMessage.id == message_id
            )
        )
    ).one_or_none()
    return None if row is None else (row.status, row.stop_requested_at)


@cross_tenant("keys by (tenant, message): each tenant's own answers")
async def stopped_or_ended(
    session: AsyncSession, answers: Collection[tuple[uuid.UUID, uuid.UUID]]
) -> dict[uuid.UUID, str]:
    """Of `answers`, each given with its tenant as (tenant id, message id), those asked to stop
    or no longer streaming: by message id, its status. Only those rows come back, so watching a
    thousand answers that go on reads none. The answers go as one JSON parameter read back as
    a table (`json_items`): the statement is the same whatever their number."""
    if not answers:
        return {}
    watched = json_items(
        session.get_bind().dialect.name,
        "answers",
        {message_id.hex: tenant_id.hex for tenant_id, message_id in answers},
    )
    rows = await session.execute(
        select(ChatMessage.id, ChatMessage.status)
        .select_from(watched)
        .join(
            ChatMessage,
            and_(
                ChatMessage.id == cast(watched.c.key, Uuid),
                ChatMessage.tenant_id == cast(watched.c.value, Uuid),
            ),
        )
        .where(or_(ChatMessage.status != STREAMING, ChatMessage.stop_requested_at.is_not(None)))
    )
    return {row.id: row.status for row in rows}


async def save_content(
    session: AsyncSession, tenant_id: uuid.UUID, message_id: uuid.UUID, content: str
) -> None:
    """The answer so far, while it still streams."""
    await session.execute(_while_streaming(tenant_id, message_id).values(content=content))


def _while_streaming(tenant_id: uuid.UUID, message_id: uuid.UUID) -> Update:
    """An UPDATE of the message that changes it only while it streams: a settled answer keeps
    what it settled with."""
    return (
        update(ChatMessage)
        .where(
            ChatMessage.tenant_id == tenant_id,
            ChatMessage.id == message_id,
            ChatMessage.status == STREAMING,
        )
        .execution_options(synchronize_session=False)
    )


@cross_tenant("the reconciler's sweep of every tenant's unfinished work")
async def unfinished(session: AsyncSession) -> list[ChatMessage]:
    """Answers of every tenant still streaming (for the reconciler)."""
    result = await session.execute(
        select(ChatMessage).where(ChatMessage.status == STREAMING, ChatMessage.role == "assistant")
    )
    return list(result.scalars())


async def conversation_any(
    session: AsyncSession, tenant_id: uuid.UUID, conversation_id: uuid.UUID
) -> Conversation | None:
    """The conversation, deleted or not (an answer may still settle after it was deleted)."""
    return await owned_by(session, Conversation, tenant_id, id=conversation_id)
