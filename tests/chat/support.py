"""Helpers for the Chat tests: an organization that chats through the API (its documents via
tests.documents.support.Docs), an SSE reader over the real socket, and direct looks at the
database and the event log behind it."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
from httpx_sse import connect_sse
from sqlalchemy import Table, select, update

from contentplatform.chat.models import ChatMessage
from contentplatform.config import Settings
from contentplatform.credits import service as credits
from contentplatform.credits.models import CreditLedgerEntry, CreditReservation
from contentplatform.kit.db import Database
from tests.documents.support import Docs
from tests.support.database import run_on, select_all
from tests.support.sse import is_ping
from tests.support.streams import forget_stream

KIND = "chat.message"
HOLD = 10  # chat_credit_hold, the default
MESSAGES = cast(Table, ChatMessage.__table__)
RESERVATIONS = cast(Table, CreditReservation.__table__)
LEDGER = cast(Table, CreditLedgerEntry.__table__)

GUIDE = """# Fernleaf Irrigation Guide

## Watering schedules

Each zone keeps its own watering schedule, so lawns, vegetable beds and shrubs get different \
amounts of water. Early morning watering loses the least water to evaporation and gives leaves \
time to dry before the evening. The controller skips a scheduled watering when rain is expected \
within the next twelve hours. Tomatoes in a dry summer need deep watering twice a week rather \
than a little every day.

## Soil moisture sensors

Soil moisture sensors measure how wet the ground is at root depth. When a sensor reports moist \
soil, the controller postpones watering for that zone until the soil dries out. Each sensor runs \
for two years on a single AA battery.
"""

SOURDOUGH = """# Sourdough Notes

## Feeding the starter

Feed the sourdough starter with equal weights of flour and water every day. A healthy starter \
doubles in size within six hours of feeding.
"""

QUESTION = "How often should tomatoes be watered in a dry summer?"


@dataclass(frozen=True)
class Frame:
    id: str
    event: str
    data: dict[str, Any]
    # The reconnection delay, sent with a stream's first frame (whatever its seq).
    retry: int | None = field(default=None, compare=False)

    @property
    def seq(self) -> int:
        return int(self.id.rsplit(":", 1)[1])


def read_sse(
    client: httpx.Client,
    method: str,
    path: str,
    *,
    headers: dict[str, str],
    json_body: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    stop_after: int | None = None,
    into: list[Frame] | None = None,
) -> list[Frame]:
    """The frames of an event stream over the real socket, to its end (or the first
    `stop_after`, then the client goes away); each also added to `into` as it comes."""
    frames: list[Frame] = [] if into is None else into
    with connect_sse(
        client, method, path, json=json_body, params=params, headers=headers, timeout=60
    ) as source:
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        for sse in source.iter_sse():
            if is_ping(sse):
                continue
            frames.append(Frame(sse.id, sse.event, json.loads(sse.data), sse.retry))
            if stop_after is not None and len(frames) == stop_after:
                break
    return frames


class Chatter(Docs):
    """One organization chatting through one transport (`call`) for its operations, and over
    the real socket for its event streams; its documents through Docs. Requests go as the
    member unless told otherwise."""

    default_role = "member"

    def headers(self, role: str = "member", **more: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}", "x-idp-org-id": self.org, **more}

    def ask(
        self,
        query: str = QUESTION,
        *,
        key: str | None = None,
        role: str = "member",
        rpc: bool | None = None,
        headers: dict[str, str] | None = None,
        stop_after: int | None = None,
        **more: Any,
    ) -> list[Frame]:
        """chat.message over SSE (REST or RPC: the test's transport unless told): the frames of
        its answer."""
        body = {"query": query, "idempotencyKey": key or f"k-{uuid.uuid4().hex}", **more}
        rpc = self.call.transport == "rpc" if rpc is None else rpc
        path = "/api/rpc/chat.message" if rpc else "/v1/chat/messages"
        return read_sse(
            self.client,
            "POST",
            path,
            headers={**self.headers(role), **(headers or {})},
            json_body=body,
            stop_after=stop_after,
        )

    def post(self, role: str = "member", **body: Any) -> httpx.Response:
        """chat.message over the socket, its whole answer read (a problem, or blocking JSON)."""
        body.setdefault("idempotencyKey", f"k-{uuid.uuid4().hex}")
        return self.client.post("/v1/chat/messages", json=body, headers=self.headers(role))

    def events(
        self,
        message_id: str,
        *,
        last: str | None = None,
        query: str | None = None,
        role: str = "member",
        stop_after: int | None = None,
    ) -> list[Frame]:
        """chat.streamEvents: after `last` (Last-Event-ID header) or `query` (?lastEventId=)."""
        headers = self.headers(role)
        if last is not None:
            headers["Last-Event-ID"] = last
        return read_sse(
            self.client,
            "GET",
            f"/v1/chat/messages/{message_id}/events",
            headers=headers,
            params=None if query is None else {"lastEventId": query},
            stop_after=stop_after,
        )

    def messages(self, conversation_id: str, role: str = "member", **query: Any) -> dict[str, Any]:
        return self.ok("chat.listMessages", {"id": conversation_id, **query}, role=role)

    def conversation(self, conversation_id: str, role: str = "member") -> dict[str, Any]:
        return self.ok("chat.getConversation", {"id": conversation_id}, role=role)


def text_of(frames: list[Frame]) -> str:
    return "".join(frame.data["text"] for frame in frames if frame.event == "message_delta")


def ids_of(frames: list[Frame]) -> list[str]:
    return [frame.id for frame in frames]


# --- behind the API ---------------------------------------------------------------------------


def holds(settings: Settings, tenant_id: uuid.UUID) -> list[CreditReservation]:
    """The tenant's chat.message holds, oldest first."""
    return select_all(
        settings,
        select(CreditReservation)
        .where(CreditReservation.tenant_id == tenant_id, CreditReservation.kind == KIND)
        .order_by(CreditReservation.created_at),
    )


def debits(settings: Settings, tenant_id: uuid.UUID) -> list[CreditLedgerEntry]:
    return select_all(
        settings,
        select(CreditLedgerEntry).where(
            CreditLedgerEntry.tenant_id == tenant_id, CreditLedgerEntry.kind == KIND
        ),
    )


def message_row(settings: Settings, message_id: str) -> ChatMessage:
    (row,) = select_all(
        settings, select(ChatMessage).where(ChatMessage.id == uuid.UUID(message_id))
    )
    return row


def set_message(settings: Settings, message_id: str, **values: Any) -> None:
    """Change a message behind the service's back (a state a crash or a slow model leaves)."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(ChatMessage).where(ChatMessage.id == uuid.UUID(message_id)).values(**values)
            )

    run_on(settings, scenario)


def forget_events(settings: Settings, message_id: str) -> None:
    """What the log's expiry does to an answer's events, in the backend the service uses."""
    forget_stream(settings, f"chat:{message_id}")


def settled_hold(settings: Settings, tenant_id: uuid.UUID, key: str, *, release: bool) -> str:
    """A chat.message hold made under `key` before any message (as a client may pre-reserve),
    released when asked; its id."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            held = await credits.reserve(
                session,
                tenant_id,
                kind=KIND,
                idempotency_key=key,
                amount=HOLD,
                monthly_grant=settings.monthly_credit_grant,
            )
            if release:
                await credits.release(session, tenant_id, held.id)
            return str(held.id)

    return run_on(settings, scenario)


def wait_settled(settings: Settings, message_id: str, timeout: float = 30) -> ChatMessage:
    """The message once no longer streaming (bounded)."""

    async def scenario(db: Database) -> ChatMessage:
        async with asyncio.timeout(timeout):
            while True:
                async with db.unit_of_work() as session:
                    row = await session.get(ChatMessage, uuid.UUID(message_id))
                assert row is not None
                if row.status != "streaming":
                    return row
                await asyncio.sleep(0.05)

    return run_on(settings, scenario)
