"""Chat answers from an OpenAI-compatible model on real `contentplatform serve` processes: a
provider failing mid-stream, a stop, a stream followed from another process, a second question
while one is answered, a stall, and a SIGKILL while the model holds its answer.

Each test runs the service in child processes (tests.support.processes: a data directory,
databases and a DBOS system database of their own; PostgreSQL and Redis when
CONTENTPLATFORM_TEST_DATABASE_URL / CONTENTPLATFORM_TEST_REDIS_URL are set) with
`LLM_PROVIDER=openai` pointed at a loopback stand-in speaking the real chat-completions
protocol: `ChatServer` (tests/support/llm.py) or `SlowModel` (stand_in.py), which trickles its
answer word by word. Streams are read over HTTP with httpx-sse; what the API does not show
(holds, the ledger, DBOS) is read from the databases.
"""

from __future__ import annotations

import math
import signal
import threading
import time
import uuid
from typing import Any, cast

import httpx
from sqlalchemy import Table, select

from contentplatform.ai.tokens import count_tokens
from contentplatform.chat.models import ChatMessage
from contentplatform.credits.models import CreditLedgerEntry, CreditReservation
from tests.chat.stand_in import ANSWER, SlowModel
from tests.chat.support import GUIDE, HOLD, KIND, QUESTION, Frame, read_sse, text_of
from tests.support.llm import ChatServer, Reply
from tests.support.problems import problem
from tests.support.processes import (
    LOOPBACK,
    TIMEOUT,
    Service,
    ServiceClient,
    Services,
    Stack,
    wait_for,
)

MESSAGES = cast(Table, ChatMessage.__table__)
RESERVATIONS = cast(Table, CreditReservation.__table__)
LEDGER = cast(Table, CreditLedgerEntry.__table__)


def llm_settings(base_url: str, **more: str) -> dict[str, str]:
    return {
        "llm_provider": "openai",
        "llm_base_url": base_url,
        "llm_model": "stub-model",
        "llm_api_key": "sk-test-chat",
        "llm_max_retries": "0",
        **more,
    }


class Asker(ServiceClient):
    """An editor of a new organization (it uploads the knowledge, and chats) on one service."""

    def ready_document(self) -> dict[str, Any]:
        document = self.upload("guide.md", "md", GUIDE.encode())
        return wait_for(
            "the document to be ready",
            lambda: (
                (found := self.request("GET", f"/v1/documents/{document['id']}"))["status"]
                == "ready"
                and found
            ),
            self.service,
        )

    def on(self, service: Service) -> Asker:
        """The same caller, on another service."""
        other = Asker(service, "", self.org)
        other.headers = dict(self.headers)
        return other

    def ask(self, key: str, stop_after: int | None = None, **body: Any) -> list[Frame]:
        with httpx.Client(base_url=self.service.url) as http:
            return read_sse(
                http,
                "POST",
                "/v1/chat/messages",
                headers=self.headers,
                json_body={"query": QUESTION, "idempotencyKey": key, **body},
                stop_after=stop_after,
            )

    def events(
        self, message_id: str, last: str | None = None, into: list[Frame] | None = None
    ) -> list[Frame]:
        headers = dict(self.headers)
        if last is not None:
            headers["Last-Event-ID"] = last
        with httpx.Client(base_url=self.service.url) as http:
            return read_sse(
                http, "GET", f"/v1/chat/messages/{message_id}/events", headers=headers, into=into
            )

    @property
    def tenant_id(self) -> uuid.UUID:
        return uuid.UUID(self.request("GET", "/v1/system/whoami")["tenant_id"])


def chatting(
    services: Services, base_url: str, name: str, **settings: str
) -> tuple[Service, Asker]:
    service = services.start(**llm_settings(base_url, **settings))
    asker = Asker.of_new_org(services, service, name)
    asker.ready_document()
    return service, asker


def message(stack: Stack, message_id: str) -> Any:
    return stack.one(select(MESSAGES).where(MESSAGES.c.id == uuid.UUID(message_id)))


def chat_holds(stack: Stack, tenant_id: uuid.UUID) -> list[Any]:
    return stack.rows(
        select(RESERVATIONS)
        .where(RESERVATIONS.c.tenant_id == tenant_id, RESERVATIONS.c.kind == KIND)
        .order_by(RESERVATIONS.c.created_at)
    )


def chat_debits(stack: Stack, tenant_id: uuid.UUID) -> list[Any]:
    return stack.rows(select(LEDGER).where(LEDGER.c.tenant_id == tenant_id, LEDGER.c.kind == KIND))


def one_terminal(frames: list[Frame]) -> Frame:
    """The stream's one terminal event, its last; the ids gap-free from 1."""
    assert [f.seq for f in frames] == list(range(1, len(frames) + 1))
    terminals = [f for f in frames if f.event in ("message_end", "error")]
    assert terminals == [frames[-1]], [f.event for f in frames]
    return frames[-1]


def assert_released(stack: Stack, tenant_id: uuid.UUID) -> None:
    (hold,) = chat_holds(stack, tenant_id)
    assert (hold.status, hold.committed_amount) == ("released", None)
    assert chat_debits(stack, tenant_id) == []


# --- the tests ----------------------------------------------------------------------------------


def test_a_provider_failing_mid_stream_ends_the_stream_with_an_error(
    stack: Stack, services: Services
) -> None:
    with ChatServer() as llm:
        llm.responder = lambda request: Reply(ANSWER, stream_error="the upstream model crashed")
        service, asker = chatting(services, llm.base_url, "failing")
        frames = asker.ask("fails")

    end = one_terminal(frames)
    assert end.event == "error"
    assert end.data["code"] == "PROVIDER_UNAVAILABLE"
    assert end.data["retryable"] is True
    assert "the upstream model crashed" in end.data["detail"]
    assert "sk-test-chat" not in end.data["detail"]
    partial = text_of(frames)
    assert partial and ANSWER.startswith(partial.strip())  # what came before the failure
    stored = message(stack, end.data["message_id"])
    assert (stored.status, stored.content) == ("failed", partial)
    assert stored.error == {k: end.data[k] for k in ("code", "detail", "retryable")}
    assert_released(stack, asker.tenant_id)
    # The model was asked as the protocol says, with the sources in the prompt.
    (seen,) = llm.requests
    assert seen.json["stream"] is True and seen.json["model"] == "stub-model"
    assert "Tomatoes in a dry summer" in seen.json["messages"][-1]["content"]
    assert "Traceback" not in service.tail(1_000_000)


def test_a_stop_from_another_process_ends_the_answer_keeping_what_was_written(
    stack: Stack, services: Services
) -> None:
    """Two services on one stack, each its own executor: the answer is written by the first,
    the second starts while it streams (and leaves it alone), reads it live after a disconnect,
    refuses a second question while it streams, and a stop sent to it ends the answer; only the
    tokens used are charged."""
    # Slow enough that the answer outlasts the second service's start on a loaded machine
    # (at 0.3 s a word, CI's load once let it finish first).
    with SlowModel(word_delay=0.6) as model:
        first, asker = chatting(services, model.base_url, "stopping", executor_id="first")
        seen = asker.ask("stop-me", stop_after=5)  # then the client goes away
        second = services.start(**llm_settings(model.base_url, executor_id="second"))
        elsewhere = asker.on(second)
        message_id, conversation_id = seen[0].data["message_id"], seen[0].data["conversation_id"]
        assert [f.event for f in seen[:3]] == ["message_start", "retrieval", "conversation_title"]

        problem(
            LOOPBACK.post(
                f"{second.url}/v1/chat/messages",
                json={"query": "And?", "conversationId": conversation_id, "idempotencyKey": "2"},
                headers=asker.headers,
                timeout=30,
            ),
            409,
            "CONFLICT",
        )
        listed = elsewhere.request("GET", f"/v1/chat/conversations/{conversation_id}")
        assert listed["in_flight_message_id"] == message_id

        rest: list[Frame] = []
        stopped: dict[str, Any] = {}

        def follow() -> None:
            elsewhere.events(message_id, last=seen[-1].id, into=rest)

        reading = threading.Thread(target=follow)
        reading.start()
        wait_for("a few more words", lambda: text_of(seen + rest).count(" ") > 8, second)
        stopped.update(elsewhere.request("POST", f"/v1/chat/messages/{message_id}/stop"))
        reading.join(TIMEOUT)
        assert not reading.is_alive()

    assert stopped == {"id": message_id, "status": "stopped"}
    frames = seen + rest
    end = one_terminal(frames)
    assert end.event == "message_end"
    assert end.data["finish_reason"] == "stopped"
    partial = text_of(frames)
    assert 8 < partial.count(" ") < ANSWER.count(" ")
    assert ANSWER.startswith(partial)
    stored = message(stack, message_id)
    assert (stored.status, stored.finish_reason, stored.content) == ("stopped", "stopped", partial)
    usage = end.data["usage"]
    assert usage["output_tokens"] == count_tokens(partial)
    assert usage["input_tokens"] > 0
    charged = max(1, math.ceil((usage["input_tokens"] + usage["output_tokens"]) / 1000))
    assert usage["credits_charged"] == charged
    (hold,) = chat_holds(stack, asker.tenant_id)
    assert (hold.status, hold.amount, hold.committed_amount) == ("committed", HOLD, charged)
    assert [row.amount for row in chat_debits(stack, asker.tenant_id)] == [-charged]
    # The model stopped being read: it did not get to write the whole answer (it finds out at
    # its next word).
    wait_for("the model to notice", lambda: bool(model.written), first)
    assert model.written[0] < len(ANSWER.split())
    # Stop again: idempotent, from either process.
    for service in (first, second):
        again = LOOPBACK.post(
            f"{service.url}/v1/chat/messages/{message_id}/stop", headers=asker.headers, timeout=30
        )
        assert again.json() == {"id": message_id, "status": "stopped"}
    assert asker.events(message_id) == frames


def test_an_answer_stalled_on_a_hanging_model_is_failed_by_the_reconciler(
    stack: Stack, services: Services
) -> None:
    with SlowModel(hold=True) as model:
        # The stall counts from the answer's start: long enough that a loaded CI host reaches
        # the model first (it took over 2 s there once), short enough for a test.
        service, asker = chatting(
            services, model.base_url, "stalled", chat_stall_seconds="8", llm_timeout_seconds="30"
        )
        try:
            frames = asker.ask("stalls")  # ends when the reconciler gives up on it
            assert model.holding.is_set()
        finally:
            model.release.set()
        end = one_terminal(frames)
        assert (end.event, end.data["code"]) == ("error", "STALLED")
        assert end.data["retryable"] is True
        stored = message(stack, end.data["message_id"])
        assert stored.status == "failed"
        assert_released(stack, asker.tenant_id)
        # The model answers at last, to a cancelled workflow: nothing more reaches the stream.
        wait_for("the model's late answer", lambda: model.written, service)
        time.sleep(1)
    assert asker.events(end.data["message_id"]) == frames
    assert message(stack, end.data["message_id"]).status == "failed"
    assert_released(stack, asker.tenant_id)


def test_a_service_killed_while_the_model_holds_its_answer_fails_it_on_restart(
    stack: Stack, services: Services
) -> None:
    with SlowModel(hold=True) as model:
        service, asker = chatting(services, model.base_url, "killed")
        tenant_id = asker.tenant_id
        seen: list[Frame] = []
        failures: list[BaseException] = []

        def read() -> None:
            try:
                seen.extend(asker.ask("killed", stop_after=None))
            except BaseException as error:  # the connection dies with the service
                failures.append(error)

        reading = threading.Thread(target=read)
        reading.start()
        try:
            assert model.holding.wait(TIMEOUT), service.tail()
            (row,) = stack.rows(select(MESSAGES).where(MESSAGES.c.role == "assistant"))
            assert (row.status, row.phase) == ("streaming", "generate")
            service.kill()
        finally:
            model.release.set()
        reading.join(TIMEOUT)
        assert service.process.returncode == -signal.SIGKILL
        message_id = str(row.id)
        assert stack.workflow_status(f"chat:{message_id}") == "PENDING"
        (hold,) = chat_holds(stack, tenant_id)
        assert hold.status == "held"

        restarted = services.start(**llm_settings(model.base_url))
        asker = asker.on(restarted)
        wait_for(
            "the answer to end",
            lambda: message(stack, message_id).status != "streaming",
            restarted,
        )

    stored = message(stack, message_id)
    assert stored.status == "failed"
    assert stored.error["code"] == "INTERRUPTED"
    assert stored.error["retryable"] is True
    assert_released(stack, tenant_id)
    frames = asker.events(message_id)
    end = one_terminal(frames)
    assert (end.event, end.data["code"]) == ("error", "INTERRUPTED")
    assert [f.event for f in frames[:3]] == ["message_start", "retrieval", "conversation_title"]
    assert text_of(frames) == ""  # the model had written nothing yet
    wait_for(
        "DBOS to record the workflow's end",
        lambda: stack.workflow_status(f"chat:{message_id}") == "SUCCESS",
        restarted,
    )
    assert len(model.requests) == 1  # the interrupted answer was not asked again
    assert "Traceback" not in restarted.tail(1_000_000)
