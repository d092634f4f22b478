"""The chat operations that answer JSON, each over REST and RPC (`call`): conversations, messages,
stop, feedback and retrieve, their refusals, roles, privacy between users and tenants; the
reconciler's part; and the tables against the migration."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from contentplatform.auth.context import Role, TenantAccess
from contentplatform.chat import schemas, service
from contentplatform.domains import include_name, metadata
from contentplatform.kit.db import AFTER_COMMIT_KEY, Base, Database
from contentplatform.kit.streams import DatabaseStreamLog
from tests.chat.support import (
    GUIDE,
    QUESTION,
    SOURDOUGH,
    Chatter,
    holds,
    message_row,
    set_message,
    text_of,
    wait_settled,
)
from tests.support.database import run_on
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org


def blocking(chatter: Chatter, query: str = QUESTION, role: str = "member", **data: Any):
    """chat.message in blocking mode over the test's transport: the finished answer."""
    return chatter.ok(
        "chat.message",
        {"query": query, "idempotencyKey": uuid.uuid4().hex, "responseMode": "blocking", **data},
        role=role,
    )


# --- conversations ------------------------------------------------------------------------------


@pytest.mark.own_org
def test_conversations_are_listed_read_updated_and_deleted(chatter: Chatter):
    guide = chatter.ingest("Irrigation guide.md", GUIDE.encode())
    first = blocking(chatter, "Watering tomatoes?")
    second = blocking(chatter, "Soil sensors?")
    third = blocking(chatter, "Rain and schedules?")
    ids = [m["conversation_id"] for m in (first, second, third)]

    listed = chatter.ok("chat.listConversations")
    assert (listed["total"], listed["page"], listed["limit"]) == (3, 1, 20)
    assert [c["id"] for c in listed["data"]] == ids[::-1]  # the latest active first
    one = listed["data"][-1]
    assert one == {
        "id": ids[0],
        "title": "Watering tomatoes?",
        "pinned": False,
        "document_ids": [],
        "message_count": 2,
        "last_message_at": one["last_message_at"],
        "created_by": chatter.users["member"],
        "created_at": one["created_at"],
    }
    paged = chatter.ok("chat.listConversations", {"page": 2, "limit": 2})
    assert [c["id"] for c in paged["data"]] == [ids[0]]
    assert paged["total"] == 3
    found = chatter.ok("chat.listConversations", {"search": "SENSOR"})
    assert [c["id"] for c in found["data"]] == [ids[1]]
    assert chatter.ok("chat.listConversations", {"search": "%"})["total"] == 0

    # Another turn makes a conversation the latest.
    blocking(chatter, "And in winter?", conversationId=ids[0])
    assert chatter.ok("chat.listConversations")["data"][0]["id"] == ids[0]

    updated = chatter.ok(
        "chat.updateConversation",
        {
            "id": ids[1],
            "title": "<b>Sensors</b> &amp; batteries",
            "pinned": True,
            "documentIds": [guide["id"], guide["id"]],
        },
    )
    assert updated["title"] == "Sensors & batteries"
    assert updated["pinned"] is True
    assert updated["document_ids"] == [guide["id"]]
    assert chatter.ok("chat.updateConversation", {"id": ids[1]}) == updated  # nothing to change
    pinned = chatter.ok("chat.listConversations", {"pinned": True})
    assert [c["id"] for c in pinned["data"]] == [ids[1]]
    unpinned = chatter.ok("chat.listConversations", {"pinned": False})
    assert {c["id"] for c in unpinned["data"]} == {ids[0], ids[2]}
    cleared = chatter.ok("chat.updateConversation", {"id": ids[1], "documentIds": []})
    assert cleared["document_ids"] == [] and cleared["title"] == "Sensors & batteries"

    detail = chatter.conversation(ids[0])
    assert detail["message_count"] == 4
    assert detail["in_flight_message_id"] is None
    assert detail["usage"]["credits"] == 2  # two answers, one credit each
    assert detail["usage"]["input_tokens"] > 0 and detail["usage"]["output_tokens"] > 0

    assert chatter.ok("chat.deleteConversation", {"id": ids[2]}) == {"success": True}
    problem(chatter.request("chat.getConversation", {"id": ids[2]}), 404, "NOT_FOUND")
    problem(chatter.request("chat.deleteConversation", {"id": ids[2]}), 404, "NOT_FOUND")
    problem(chatter.request("chat.listMessages", {"id": ids[2]}), 404, "NOT_FOUND")
    problem(chatter.request("chat.stop", {"id": third["id"]}), 404, "NOT_FOUND")
    problem(
        chatter.request("chat.feedback", {"id": third["id"], "rating": "like"}), 404, "NOT_FOUND"
    )
    assert chatter.ok("chat.listConversations")["total"] == 2


def test_update_conversation_refuses_bad_titles_and_unknown_documents(
    chatter: Chatter, other: Chatter
):
    theirs = other.ingest("Sourdough.md", SOURDOUGH.encode())
    conversation_id = blocking(chatter)["conversation_id"]
    update = lambda **data: chatter.request(  # noqa: E731
        "chat.updateConversation", {"id": conversation_id, **data}
    )
    problem(update(title=""), 400, "BAD_REQUEST")
    problem(update(title="   "), 400, "BAD_REQUEST")
    problem(update(title="x" * 201), 400, "BAD_REQUEST")
    problem(update(title="a\nb"), 400, "BAD_REQUEST")
    problem(update(pinned="yes please"), 400, "BAD_REQUEST")
    problem(update(documentIds=[str(uuid.uuid4()) for _ in range(51)]), 400, "BAD_REQUEST")
    body = problem(update(documentIds=[theirs["id"]]), 400, "BAD_REQUEST")
    assert theirs["id"] in body["detail"]
    assert body["errors"] == [
        {"path": "documentIds.0", "message": f"{theirs['id']} is no document here"}
    ]
    assert chatter.conversation(conversation_id)["document_ids"] == []
    problem(
        chatter.request("chat.updateConversation", {"id": str(uuid.uuid4()), "pinned": True}),
        404,
        "NOT_FOUND",
    )


def test_deleting_a_conversation_stops_its_answer_first(chatter: Chatter, settings):
    answered = blocking(chatter)
    # As a slow model leaves it: still streaming.
    set_message(settings, answered["id"], status="streaming")
    try:
        chatter.ok("chat.deleteConversation", {"id": answered["conversation_id"]})
        assert message_row(settings, answered["id"]).stop_requested_at is not None
    finally:
        set_message(settings, answered["id"], status="completed")


# --- messages -----------------------------------------------------------------------------------


def test_messages_page_back_newest_first(chatter: Chatter, settings):
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    first = blocking(chatter, "Watering tomatoes?")
    conversation_id = first["conversation_id"]
    blocking(chatter, "Soil sensors?", conversationId=conversation_id)
    blocking(chatter, "Rain?", conversationId=conversation_id)

    everything = chatter.messages(conversation_id)
    assert everything["total"] == 6
    contents = [m["content"] for m in everything["data"]]
    assert contents[1::2] == ["Rain?", "Soil sensors?", "Watering tomatoes?"]
    assert [m["role"] for m in everything["data"]] == ["assistant", "user"] * 3
    page = chatter.messages(conversation_id, limit=2)
    assert page == {"data": everything["data"][:2], "total": 6}
    older = chatter.messages(conversation_id, limit=3, before=page["data"][-1]["id"])
    assert older == {"data": everything["data"][2:5], "total": 6}
    assert chatter.messages(conversation_id, before=everything["data"][-1]["id"])["data"] == []
    question = everything["data"][-1]
    assert question["usage"] is None and question["retriever_resources"] == []

    body = problem(
        chatter.request("chat.listMessages", {"id": conversation_id, "before": str(uuid.uuid4())}),
        400,
        "BAD_REQUEST",
    )
    assert body["errors"][0]["path"] == "before"
    problem(
        chatter.request("chat.listMessages", {"id": conversation_id, "limit": 0}),
        400,
        "BAD_REQUEST",
    )
    problem(
        chatter.request("chat.listMessages", {"id": conversation_id, "limit": 101}),
        400,
        "BAD_REQUEST",
    )

    # An answer still being written shows its content so far.
    latest = everything["data"][0]
    set_message(settings, latest["id"], status="streaming", content="Rain is", finished_at=None)
    try:
        shown = chatter.messages(conversation_id, limit=1)["data"][0]
        assert (shown["status"], shown["content"], shown["finished_at"]) == (
            "streaming",
            "Rain is",
            None,
        )
    finally:
        set_message(settings, latest["id"], status="completed", content=latest["content"])


# --- stop and feedback --------------------------------------------------------------------------


def test_stop_is_idempotent_on_an_answer_that_has_ended(chatter: Chatter):
    answered = blocking(chatter)
    for _ in range(2):
        assert chatter.ok("chat.stop", {"id": answered["id"]}) == {
            "id": answered["id"],
            "status": "completed",
        }
    question = chatter.messages(answered["conversation_id"])["data"][1]
    problem(chatter.request("chat.stop", {"id": question["id"]}), 400, "BAD_REQUEST")
    problem(chatter.request("chat.stop", {"id": str(uuid.uuid4())}), 404, "NOT_FOUND")


def test_feedback_rates_an_answer_and_takes_it_back(chatter: Chatter):
    answered = blocking(chatter)
    liked = chatter.ok(
        "chat.feedback",
        {"id": answered["id"], "rating": "like", "comment": "<i>Clear</i> and\nshort"},
    )
    assert liked["message_id"] == answered["id"]
    assert (liked["rating"], liked["comment"]) == ("like", "Clear and\nshort")
    shown = chatter.messages(answered["conversation_id"])["data"][0]
    assert shown["feedback"] == {"rating": "like", "comment": "Clear and\nshort"}
    disliked = chatter.ok("chat.feedback", {"id": answered["id"], "rating": "dislike"})
    assert (disliked["rating"], disliked["comment"]) == ("dislike", None)
    assert disliked["updated_at"] >= liked["updated_at"]
    revoked = chatter.ok("chat.feedback", {"id": answered["id"], "rating": None, "comment": "x"})
    assert (revoked["rating"], revoked["comment"]) == (None, None)
    assert chatter.messages(answered["conversation_id"])["data"][0]["feedback"] is None

    feedback = lambda **data: chatter.request("chat.feedback", {"id": answered["id"], **data})  # noqa: E731
    problem(feedback(), 400, "BAD_REQUEST")  # rating is required (null to revoke)
    problem(feedback(rating="meh"), 400, "BAD_REQUEST")
    problem(feedback(rating="like", comment="x" * 2001), 400, "BAD_REQUEST")
    question = chatter.messages(answered["conversation_id"])["data"][1]
    problem(
        chatter.request("chat.feedback", {"id": question["id"], "rating": "like"}),
        400,
        "BAD_REQUEST",
    )
    problem(
        chatter.request("chat.feedback", {"id": str(uuid.uuid4()), "rating": "like"}),
        404,
        "NOT_FOUND",
    )


# --- retrieve -----------------------------------------------------------------------------------


@pytest.mark.own_org
def test_retrieve_searches_the_index_as_chat_does(chatter: Chatter, other: Chatter, settings):
    guide = chatter.ingest("Irrigation guide.md", GUIDE.encode())
    bread = chatter.ingest("Sourdough.md", SOURDOUGH.encode())
    theirs = other.ingest("Sourdough.md", SOURDOUGH.encode())

    found = chatter.ok("chat.retrieve", {"query": "How long do sensors and starters last?"})
    assert found["query"] == "How long do sensors and starters last?"
    assert found["total"] == len(found["data"]) >= 2
    assert isinstance(found["took_ms"], int) and found["took_ms"] >= 0
    assert {hit["document_id"] for hit in found["data"]} == {guide["id"], bread["id"]}
    assert [hit["position"] for hit in found["data"]] == list(range(1, found["total"] + 1))
    scores = [hit["score"] for hit in found["data"]]
    assert scores == sorted(scores, reverse=True)
    hit = found["data"][0]
    assert set(hit) == {
        "position", "document_id", "document_name", "chunk_id", "ordinal", "score", "content",
        "heading", "char_start", "char_end",
    }  # fmt: skip
    # Each chunk names the headings it is under in its document.
    headings = {hit["document_id"]: hit["heading"] for hit in found["data"]}
    assert headings[bread["id"]] == "Sourdough Notes > Feeding the starter"
    assert headings[guide["id"]].startswith("Fernleaf Irrigation Guide > ")
    assert 0 <= hit["score"] < 1 and hit["char_start"] < hit["char_end"]

    only = chatter.ok("chat.retrieve", {"query": "starters sensors", "documentIds": [bread["id"]]})
    assert {hit["document_id"] for hit in only["data"]} == {bread["id"]}
    assert chatter.ok("chat.retrieve", {"query": "starters sensors", "limit": 1})["total"] == 1
    assert (
        chatter.ok("chat.retrieve", {"query": "starters sensors", "minScore": 0.99999})["data"]
        == []
    )
    assert chatter.ok("chat.retrieve", {"query": "unladen swallow"})["data"] == []

    # The primary knowledge document is always searched, whatever the scope.
    chatter.ok(
        "documents.updateKnowledgeMetadata",
        {"id": guide["id"], "metadata": {"isPrimary": True}},
        role="editor",
    )
    scoped = chatter.ok(
        "chat.retrieve", {"query": "starters sensors", "documentIds": [bread["id"]]}
    )
    assert {hit["document_id"] for hit in scoped["data"]} == {guide["id"], bread["id"]}

    retrieve = lambda **data: chatter.request("chat.retrieve", data)  # noqa: E731
    problem(retrieve(query=""), 400, "BAD_REQUEST")
    problem(retrieve(query="  "), 400, "BAD_REQUEST")
    problem(retrieve(query="x" * 2001), 400, "BAD_REQUEST")
    problem(retrieve(query="x", limit=0), 400, "BAD_REQUEST")
    problem(retrieve(query="x", limit=51), 400, "BAD_REQUEST")
    problem(retrieve(query="x", minScore=1.5), 400, "BAD_REQUEST")
    problem(retrieve(query="x", minScore=-0.1), 400, "BAD_REQUEST")
    body = problem(retrieve(query="starter", documentIds=[theirs["id"]]), 400, "BAD_REQUEST")
    assert theirs["id"] in body["detail"]
    assert holds(settings, chatter.tenant_id) == []  # no credits


# --- roles, users and tenants -------------------------------------------------------------------


@pytest.mark.own_org
def test_every_role_chats_and_an_outsider_cannot(chatter: Chatter, call, token, org):
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    for role in ("member", "editor", "admin"):
        answered = blocking(chatter, role=role)
        assert answered["status"] == "completed"
        listed = chatter.ok("chat.listConversations", role=role)
        assert [c["id"] for c in listed["data"]] == [answered["conversation_id"]]
        assert chatter.ok("chat.retrieve", {"query": "watering"}, role=role)["total"] >= 1
    problem(call("chat.listConversations", {}, org=org), 401, "UNAUTHORIZED")
    problem(call("chat.retrieve", {"query": "watering"}, org=org), 401, "UNAUTHORIZED")
    stranger = token(f"org_{uuid.uuid4().hex[:8]}", "stranger", "admin")
    problem(call("chat.listConversations", {}, token=stranger, org=org), 403, "FORBIDDEN")
    problem(
        call("chat.message", {"query": "x", "idempotencyKey": "x"}, token=stranger, org=org),
        403,
        "FORBIDDEN",
    )


def test_a_conversation_is_its_creators_alone(chatter: Chatter):
    """The member's conversation, seen by the editor of the same organization: 404 everywhere."""
    answered = blocking(chatter)
    conversation_id, message_id = answered["conversation_id"], answered["id"]
    question_id = chatter.messages(conversation_id)["data"][1]["id"]

    def refused(operation: str, data: dict[str, Any]) -> None:
        problem(chatter.request(operation, data, role="editor"), 404, "NOT_FOUND")

    refused("chat.getConversation", {"id": conversation_id})
    refused("chat.updateConversation", {"id": conversation_id, "pinned": True})
    refused("chat.deleteConversation", {"id": conversation_id})
    refused("chat.listMessages", {"id": conversation_id})
    refused(
        "chat.message", {"query": "x", "conversationId": conversation_id, "idempotencyKey": "e"}
    )
    refused("chat.stop", {"id": message_id})
    refused("chat.feedback", {"id": message_id, "rating": "dislike"})
    refused("chat.feedback", {"id": question_id, "rating": "dislike"})
    refused("chat.streamEvents", {"id": message_id})
    assert chatter.ok("chat.listConversations", role="editor")["total"] == 0
    # Nothing changed for its creator.
    detail = chatter.conversation(conversation_id)
    assert detail["pinned"] is False and detail["message_count"] == 2
    assert chatter.messages(conversation_id)["data"][0]["feedback"] is None


def test_another_tenant_sees_nothing(chatter: Chatter, other: Chatter):
    answered = blocking(chatter)
    conversation_id, message_id = answered["conversation_id"], answered["id"]
    for role in ("member", "admin"):
        for operation, data in (
            ("chat.getConversation", {"id": conversation_id}),
            ("chat.updateConversation", {"id": conversation_id, "title": "Mine now"}),
            ("chat.deleteConversation", {"id": conversation_id}),
            ("chat.listMessages", {"id": conversation_id}),
            ("chat.stop", {"id": message_id}),
            ("chat.feedback", {"id": message_id, "rating": "like"}),
            ("chat.streamEvents", {"id": message_id}),
            (
                "chat.message",
                {"query": "x", "conversationId": conversation_id, "idempotencyKey": "o"},
            ),
        ):
            problem(other.request(operation, data, role=role), 404, "NOT_FOUND")
        assert other.ok("chat.listConversations", role=role)["total"] == 0
    assert chatter.conversation(conversation_id)["title"] == QUESTION


# --- the reconciler -----------------------------------------------------------------------------


@pytest.mark.own_org
def test_an_answer_whose_workflow_never_started_is_started_by_the_reconciler(
    chatter: Chatter, settings
):
    """What chat.message commits, without the start of its workflow (the process "died" between
    the commit and the start): the suite's reconciler starts it, and it ends as any answer."""
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    tenant = TenantAccess(chatter.tenant_id, chatter.org, chatter.org, uuid.uuid4(), Role.member)

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            posted = await service.post_message(
                session,
                SimpleNamespace(  # type: ignore[arg-type]
                    settings=settings,
                    model=SimpleNamespace(model="offline-extractive-1"),
                    # The log as the suite's service keeps it when in the database (with Redis,
                    # the answer's first append makes its stream).
                    streams=DatabaseStreamLog(db, retention_seconds=3600, poll_seconds=1),
                ),
                tenant,
                chatter.users["member"],
                schemas.MessageInput(query=QUESTION, idempotency_key="lost"),
            )
            assert session.info.pop(AFTER_COMMIT_KEY)  # the start of its workflow
            return str(posted.message.id)

    message_id = run_on(settings, scenario)
    settled = wait_settled(settings, message_id)
    assert settled.status == "completed"
    frames = chatter.events(message_id)
    assert [f.event for f in frames[:3]] == ["message_start", "retrieval", "conversation_title"]
    assert frames[-1].event == "message_end"
    assert text_of(frames) == settled.content
    (hold,) = holds(settings, chatter.tenant_id)
    assert hold.status == "committed"


def test_the_models_match_the_migration(run):
    metadata()

    def diffs(connection: Any) -> list[Any]:
        options = {
            "compare_type": True,
            "target_metadata": Base.metadata,
            "include_name": include_name,
        }
        context = MigrationContext.configure(connection, opts=options)
        return [d for d in compare_metadata(context, Base.metadata) if "chat_" in repr(d)]

    async def scenario(db: Database) -> None:
        async with db.engine.connect() as connection:
            assert await connection.run_sync(diffs) == []

    run(scenario)
