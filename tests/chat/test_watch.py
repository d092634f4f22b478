"""What the watch of the answers a process writes reads (chat/durable.py `_Watch`,
repository.stopped_or_ended): one statement per WATCH_CHUNK answers, their ids sent as one JSON
parameter read back as a table; only an answer asked to stop, or ended elsewhere, comes back,
and only under its own tenant. On the suite's database (SQLite, or PostgreSQL with
CONTENTPLATFORM_TEST_DATABASE_URL)."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.chat import durable, repository
from contentplatform.chat.models import ChatMessage, Conversation
from contentplatform.kit.db import Database, utcnow
from tests.support.orgs import new_tenant

# More than one statement's worth, so the watch reads them in two.
ANSWERS = durable.WATCH_CHUNK + 100


class _Undone(Exception):
    """Raised to roll the planted answers back: committed, streaming answers without a workflow
    would be restarted by the service's reconciler, which runs on the same database."""


async def plant(session: AsyncSession, tenant_id: uuid.UUID, count: int) -> list[uuid.UUID]:
    """`count` answers of one conversation of the tenant, all still streaming."""
    now = utcnow()
    conversation = Conversation(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        created_by="watched",
        title="Watched",
        pinned=False,
        document_ids=[],
        message_count=count,
        created_at=now,
        updated_at=now,
    )
    session.add(conversation)
    await session.flush()
    answers = [
        ChatMessage(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            conversation_id=conversation.id,
            position=position,
            role="assistant",
            content="",
            status=repository.STREAMING,
            retriever_resources=[],
            created_at=now,
            updated_at=now,
        )
        for position in range(1, count + 1)
    ]
    session.add_all(answers)
    return [answer.id for answer in answers]


def test_only_a_stopped_or_ended_answer_of_its_own_tenant_is_reported(run) -> None:
    """As the watch reads them, a chunk per statement, in a transaction never committed."""

    async def scenario(db: Database) -> None:
        tenant, neighbour = await new_tenant(db), await new_tenant(db)
        try:
            async with db.unit_of_work() as session:
                mine = await plant(session, tenant, ANSWERS)
                theirs = await plant(session, neighbour, 3)
                await session.flush()
                # The neighbour's second answer is asked about under the wrong tenant: what
                # happens to it is not that tenant's to see.
                owners = [(tenant, message_id) for message_id in mine]
                owners += [(neighbour, theirs[0]), (tenant, theirs[1]), (neighbour, theirs[2])]

                async def reported() -> dict[uuid.UUID, str]:
                    found: dict[uuid.UUID, str] = {}
                    for start in range(0, len(owners), durable.WATCH_CHUNK):
                        chunk = owners[start : start + durable.WATCH_CHUNK]
                        found.update(await repository.stopped_or_ended(session, chunk))
                    return found

                assert await reported() == {}
                stopped, ended = mine[-1], mine[0]  # one in each statement's chunk
                await repository.request_stop(session, tenant, stopped, utcnow())
                answer = await repository.get_message(session, tenant, ended)
                assert answer is not None
                answer.status = "failed"
                for message_id in theirs[:2]:
                    await repository.request_stop(session, neighbour, message_id, utcnow())
                await session.flush()
                assert await reported() == {
                    stopped: repository.STREAMING,
                    ended: "failed",
                    theirs[0]: repository.STREAMING,
                }
                raise _Undone
        except _Undone:
            pass

    run(scenario)


def test_nothing_watched_reads_nothing(run) -> None:
    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            assert await repository.stopped_or_ended(session, []) == {}

    run(scenario)
