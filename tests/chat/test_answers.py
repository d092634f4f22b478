"""chat.message and chat.streamEvents over real SSE (the suite's service, its offline model): a
whole answer, resumption after a disconnect (header, query, re-POST, another service process),
blocking mode, idempotency, credits (the charge, 402), one answer in flight per conversation,
and the event log's expiry. The stream is read over the real socket (`Org.client`): `call`'s
in-process transport buffers whole answers."""

from __future__ import annotations

import math
import uuid

import pytest

from contentplatform.ai.tokens import count_tokens
from tests.chat.support import (
    GUIDE,
    HOLD,
    QUESTION,
    SOURDOUGH,
    Chatter,
    forget_events,
    holds,
    ids_of,
    read_sse,
    set_message,
    settled_hold,
    text_of,
)
from tests.documents.support import available_credits, hold_all_but
from tests.support.problems import problem
from tests.support.servers import second_service

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

EVENTS = ("message_start", "retrieval", "conversation_title", "message_delta", "message_end")


def answer_id(frames) -> str:
    return frames[0].data["message_id"]


@pytest.mark.own_org
def test_an_answer_streams_with_ids_sources_and_its_charge(chatter: Chatter, settings):
    guide = chatter.ingest("Irrigation guide.md", GUIDE.encode())
    frames = chatter.ask(QUESTION, key="first")

    message_id, conversation_id = answer_id(frames), frames[0].data["conversation_id"]
    assert [f.event for f in frames[:3]] == ["message_start", "retrieval", "conversation_title"]
    assert {f.event for f in frames[3:-1]} == {"message_delta"}
    assert len(frames) > 10  # token by token
    assert frames[-1].event == "message_end"
    # Ids `<message id>:<seq>` from 1 without a gap; seq, message, conversation and time in data.
    assert ids_of(frames) == [f"{message_id}:{n}" for n in range(1, len(frames) + 1)]
    assert frames[0].retry == 3000
    for frame in frames:
        assert frame.data["seq"] == frame.seq
        assert frame.data["message_id"] == message_id
        assert frame.data["conversation_id"] == conversation_id
        assert frame.data["created_at"].endswith("Z")

    start = frames[0].data
    (hold,) = holds(settings, chatter.tenant_id)
    assert start["reservation_id"] == str(hold.id)
    assert start["model"] == "offline-extractive-1"
    resources = frames[1].data["resources"]
    assert [r["position"] for r in resources] == list(range(1, len(resources) + 1))
    assert {r["document_id"] for r in resources} == {guide["id"]}
    assert {"document_name", "chunk_id", "score", "content"} <= resources[0].keys()
    assert frames[2].data["title"] == QUESTION

    answer = text_of(frames)
    assert "twice a week" in answer and "[1]" in answer
    end = frames[-1].data
    assert end["finish_reason"] == "stop"
    usage = end["usage"]
    assert usage["output_tokens"] == count_tokens(answer)
    assert usage["input_tokens"] > 0
    charged = max(1, math.ceil((usage["input_tokens"] + usage["output_tokens"]) / 1000))
    assert usage["credits_charged"] == charged <= HOLD
    assert end["balance_after"] == available_credits(settings, chatter.tenant_id)
    assert end["sources"] == [
        {k: resources[0][k] for k in ("position", "document_id", "document_name", "chunk_id")}
    ]

    # The stored answer is what streamed; the hold is committed at the charge.
    (hold,) = holds(settings, chatter.tenant_id)
    assert (hold.status, hold.amount, hold.committed_amount) == ("committed", HOLD, charged)
    listed = chatter.messages(conversation_id)
    assert listed["total"] == 2
    stored, question = listed["data"]
    assert (question["role"], question["content"], question["status"]) == (
        "user",
        QUESTION,
        "completed",
    )
    assert stored["id"] == message_id
    assert stored["content"] == answer
    assert stored["status"] == "completed"
    assert stored["usage"] == {
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "credits": charged,
    }
    assert stored["retriever_resources"] == resources
    assert stored["error"] is None and stored["feedback"] is None
    assert stored["finished_at"] is not None
    conversation = chatter.conversation(conversation_id)
    assert conversation["title"] == QUESTION
    assert conversation["message_count"] == 2
    assert conversation["usage"] == {
        "credits": charged,
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
    }
    assert conversation["in_flight_message_id"] is None


def test_a_second_turn_keeps_the_conversation_and_its_scope(chatter: Chatter):
    guide = chatter.ingest("Irrigation guide.md", GUIDE.encode())
    bread = chatter.ingest("Sourdough.md", SOURDOUGH.encode())
    first = chatter.ask("How long does a sourdough starter take to double?")
    conversation_id = first[0].data["conversation_id"]
    assert {r["document_id"] for r in first[1].data["resources"]} == {bread["id"]}

    # This turn only: the guide.
    second = chatter.ask(
        "How long do sensors and starters last?",
        conversationId=conversation_id,
        documentIds=[guide["id"]],
    )
    assert second[0].data["conversation_id"] == conversation_id
    assert "conversation_title" not in [f.event for f in second]  # not the first turn
    assert {r["document_id"] for r in second[1].data["resources"]} == {guide["id"]}
    assert second[-1].event == "message_end"
    # Then the conversation's own scope again (every document).
    third = chatter.ask("How long do sensors and starters last?", conversationId=conversation_id)
    assert {r["document_id"] for r in third[1].data["resources"]} == {guide["id"], bread["id"]}
    listed = chatter.messages(conversation_id)
    assert listed["total"] == 6
    assert [m["role"] for m in listed["data"]] == ["assistant", "user"] * 3
    assert chatter.conversation(conversation_id)["message_count"] == 6


def test_the_primary_document_is_always_searched(chatter: Chatter):
    guide = chatter.ingest("Irrigation guide.md", GUIDE.encode())
    bread = chatter.ingest("Sourdough.md", SOURDOUGH.encode())
    chatter.ok(
        "documents.updateKnowledgeMetadata",
        {"id": guide["id"], "metadata": {"isPrimary": True}},
        role="editor",
    )
    frames = chatter.ask("How long do sensors and starters last?", documentIds=[bread["id"]])
    assert {r["document_id"] for r in frames[1].data["resources"]} == {guide["id"], bread["id"]}


def test_nothing_found_still_answers_and_says_so(chatter: Chatter):
    frames = chatter.ask("What is the airspeed of an unladen swallow?")
    assert frames[1].data["resources"] == []
    assert text_of(frames) == "The knowledge base has nothing on this question yet."
    assert frames[-1].data["sources"] == []
    assert frames[-1].data["usage"]["credits_charged"] == 1


# --- resuming -----------------------------------------------------------------------------------


@pytest.mark.own_org
def test_a_client_that_disconnects_resumes_exactly_after_its_last_event(chatter: Chatter, settings):
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    seen = chatter.ask(QUESTION, key="resume-me", stop_after=5)  # then the client goes away
    message_id = answer_id(seen)
    whole = chatter.events(message_id)  # from the start: the answer went on to its end
    assert whole[-1].event == "message_end"
    assert whole[:5] == seen
    n = len(whole)

    # Last-Event-ID as the header, as `<id>:<seq>` or the bare seq.
    assert chatter.events(message_id, last=seen[-1].id) == whole[5:]
    assert chatter.events(message_id, last="7") == whole[7:]
    # ... or as ?lastEventId= (a new EventSource opened by hand); the header wins.
    assert chatter.events(message_id, query=whole[9].id) == whole[10:]
    assert chatter.events(message_id, query="3", last=f"{message_id}:{n - 1}") == whole[n - 1 :]
    assert chatter.events(message_id, last=whole[-1].id) == []  # past the end: just closes
    # Re-posting the same key resumes the same answer: no second hold, no second answer.
    again = chatter.ask(QUESTION, key="resume-me", headers={"Last-Event-ID": seen[-1].id})
    assert seen + again == whole
    assert chatter.ask(QUESTION, key="resume-me") == whole
    assert len(holds(settings, chatter.tenant_id)) == 1
    conversation_id = seen[0].data["conversation_id"]
    assert chatter.messages(conversation_id)["total"] == 2

    problem(
        chatter.client.get(
            f"/v1/chat/messages/{message_id}/events",
            headers=chatter.headers(**{"Last-Event-ID": "first"}),
        ),
        400,
        "BAD_REQUEST",
    )
    problem(
        chatter.client.get(
            f"/v1/chat/messages/{message_id}/events",
            headers=chatter.headers(**{"Last-Event-ID": f"{uuid.uuid4()}:2"}),
        ),
        400,
        "BAD_REQUEST",
    )


def test_streamevents_over_rpc_takes_last_event_id_in_its_body(chatter: Chatter):
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    whole = chatter.ask()
    message_id = answer_id(whole)
    frames = read_sse(
        chatter.client,
        "POST",
        "/api/rpc/chat.streamEvents",
        headers=chatter.headers(),
        json_body={"id": message_id, "lastEventId": whole[2].id},
    )
    assert frames == whole[3:]


def test_a_stream_is_resumed_from_another_service_process(chatter: Chatter, settings_with):
    """A second service on the same database (and the suite's Redis when it has one) reads the
    log the first one's workflow wrote: by streamEvents and by a re-POST of the key."""
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    seen = chatter.ask(QUESTION, key="elsewhere", stop_after=4)
    message_id = answer_id(seen)
    whole = chatter.events(message_id)
    with second_service(settings_with()) as other, other.client() as http:
        rest = read_sse(
            http,
            "GET",
            f"/v1/chat/messages/{message_id}/events",
            headers=chatter.headers(**{"Last-Event-ID": seen[-1].id}),
        )
        replay = read_sse(
            http,
            "POST",
            "/v1/chat/messages",
            headers=chatter.headers(**{"Last-Event-ID": seen[1].id}),
            json_body={"query": QUESTION, "idempotencyKey": "elsewhere"},
        )
    assert seen + rest == whole
    assert seen[:2] + replay == whole


@pytest.mark.own_org
def test_an_expired_log_is_404_before_the_stream_opens(chatter: Chatter, settings):
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    frames = chatter.ask(key="old")
    message_id = answer_id(frames)
    forget_events(settings, message_id)
    body = problem(
        chatter.client.get(f"/v1/chat/messages/{message_id}/events", headers=chatter.headers()),
        404,
        "NOT_FOUND",
    )
    assert "listMessages" in body["detail"]
    problem(chatter.post(query=QUESTION, idempotencyKey="old"), 404, "NOT_FOUND")
    # The message itself is still there, and blocking mode still answers it.
    blocking = chatter.post(query=QUESTION, idempotencyKey="old", responseMode="blocking")
    assert blocking.status_code == 200, blocking.text
    assert blocking.json()["content"] == text_of(frames)


# --- blocking mode ------------------------------------------------------------------------------


@pytest.mark.own_org
def test_blocking_mode_answers_the_finished_message_as_json(chatter: Chatter, settings):
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    data = {"query": QUESTION, "idempotencyKey": "blocking-1", "responseMode": "blocking"}
    answered = chatter.ok("chat.message", data)
    assert answered["role"] == "assistant"
    assert answered["status"] == "completed"
    assert "twice a week" in answered["content"]
    assert answered["usage"]["credits"] >= 1
    assert answered["retriever_resources"]
    # The same key again: the same message (also as a stream), one hold.
    assert chatter.ok("chat.message", data) == answered
    frames = chatter.ask(QUESTION, key="blocking-1")
    assert answer_id(frames) == answered["id"]
    assert text_of(frames) == answered["content"]
    assert len(holds(settings, chatter.tenant_id)) == 1


# --- idempotency --------------------------------------------------------------------------------


@pytest.mark.own_org
def test_a_key_reused_for_another_request_or_by_someone_else_is_409(chatter: Chatter, settings):
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    frames = chatter.ask(QUESTION, key="mine")
    conversation_id = frames[0].data["conversation_id"]
    problem(chatter.post(query="Something else?", idempotencyKey="mine"), 409, "CONFLICT")
    problem(
        chatter.post(query=QUESTION, idempotencyKey="mine", conversationId=conversation_id),
        409,
        "CONFLICT",
    )
    problem(chatter.post(role="editor", query=QUESTION, idempotencyKey="mine"), 409, "CONFLICT")
    assert len(holds(settings, chatter.tenant_id)) == 1


@pytest.mark.own_org
def test_a_hold_made_under_the_key_beforehand_is_adopted_unless_settled(chatter: Chatter, settings):
    held = settled_hold(settings, chatter.tenant_id, "pre-1", release=False)
    frames = chatter.ask(key="pre-1")
    assert frames[0].data["reservation_id"] == held
    assert frames[-1].event == "message_end"
    settled_hold(settings, chatter.tenant_id, "pre-2", release=True)
    body = problem(chatter.post(query=QUESTION, idempotencyKey="pre-2"), 409, "CONFLICT")
    assert "released" in body["detail"]
    assert [h.status for h in holds(settings, chatter.tenant_id)] == ["committed", "released"]


def test_the_same_key_in_another_organization_is_its_own(chatter: Chatter, other: Chatter):
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    other.ingest("Sourdough.md", SOURDOUGH.encode())
    mine = chatter.ask(QUESTION, key="shared")
    theirs = other.ask("How fast does a starter double?", key="shared")
    assert answer_id(mine) != answer_id(theirs)
    assert "flour" not in text_of(mine) and "doubles" in text_of(theirs)


# --- credits and one answer at a time -----------------------------------------------------------


@pytest.mark.own_org
def test_402_when_credits_are_short_is_problem_json_and_leaves_nothing(chatter: Chatter, settings):
    hold_all_but(settings, chatter.tenant_id, HOLD - 1)
    body = problem(
        chatter.request("chat.message", {"query": QUESTION, "idempotencyKey": "p"}),
        402,
        "PAYMENT_REQUIRED",
    )
    assert "needs 10 credits; 9 are available" in body["detail"]
    response = chatter.post(query=QUESTION)
    problem(response, 402, "PAYMENT_REQUIRED")
    assert chatter.ok("chat.listConversations")["total"] == 0
    assert holds(settings, chatter.tenant_id) == []


@pytest.mark.own_org
def test_a_second_question_while_one_is_answered_is_409(chatter: Chatter, settings):
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    frames = chatter.ask()
    message_id, conversation_id = answer_id(frames), frames[0].data["conversation_id"]
    # As a slow model leaves it: still streaming (a real one: tests/chat/test_processes.py).
    set_message(settings, message_id, status="streaming")
    try:
        body = problem(
            chatter.request(
                "chat.message",
                {"query": "And sensors?", "conversationId": conversation_id, "idempotencyKey": "2"},
            ),
            409,
            "CONFLICT",
        )
        assert message_id in body["detail"]
        assert chatter.conversation(conversation_id)["in_flight_message_id"] == message_id
        # Another conversation is free to ask.
        assert chatter.ask()[-1].event == "message_end"
    finally:
        set_message(settings, message_id, status="completed")
    assert chatter.ask("And sensors?", conversationId=conversation_id)[-1].event == "message_end"
    assert len(holds(settings, chatter.tenant_id)) == 3


# --- input --------------------------------------------------------------------------------------


@pytest.mark.own_org
def test_what_chat_message_refuses_before_the_stream_opens(chatter: Chatter, other: Chatter):
    theirs = other.ingest("Sourdough.md", SOURDOUGH.encode())
    mine = chatter.ingest("Irrigation guide.md", GUIDE.encode())
    ask = lambda **data: chatter.request("chat.message", data)  # noqa: E731
    problem(ask(query="   ", idempotencyKey="a"), 400, "BAD_REQUEST")
    problem(ask(query="x" * 8001, idempotencyKey="a"), 400, "BAD_REQUEST")
    problem(ask(query="Why?"), 400, "BAD_REQUEST")  # no idempotencyKey
    problem(ask(query="Why?", idempotencyKey="x" * 256), 400, "BAD_REQUEST")
    problem(ask(query="Why?", idempotencyKey="a", responseMode="later"), 400, "BAD_REQUEST")
    too_many = [str(uuid.uuid4()) for _ in range(51)]
    problem(ask(query="Why?", idempotencyKey="a", documentIds=too_many), 400, "BAD_REQUEST")
    unknown = str(uuid.uuid4())
    body = problem(
        ask(query="Why?", idempotencyKey="a", documentIds=[mine["id"], theirs["id"], unknown]),
        400,
        "BAD_REQUEST",
    )
    assert theirs["id"] in body["detail"] and unknown in body["detail"]
    assert mine["id"] not in body["detail"]
    assert [e["path"] for e in body["errors"]] == ["documentIds.1", "documentIds.2"]
    problem(
        ask(query="Why?", idempotencyKey="a", conversationId=str(uuid.uuid4())), 404, "NOT_FOUND"
    )
    assert chatter.ok("chat.listConversations")["total"] == 0


@pytest.mark.own_org
def test_a_title_is_plain_text_of_at_most_200_characters(chatter: Chatter):
    frames = chatter.ask("<b>Watering</b> &amp; <i>sensors</i>:\n" + "why " * 100 + "?")
    title = frames[2].data["title"]
    assert title.startswith("Watering & sensors: why why")
    assert len(title) <= 200 and title.endswith("…")
    assert "\n" not in title and "<" not in title
