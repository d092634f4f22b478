"""chat.createStreamUrl over REST and RPC (`call`), and the URL it makes opened as a browser's
EventSource opens it: with no Authorization header and no organization header, reconnecting
with Last-Event-ID, and after expiry a new URL with `&lastEventId=`. The token opens that
stream alone: anywhere else, as a bearer token, or for another stream it is refused. (The
browser itself, across origins: tests/chat/test_browser.py.)"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select, update

from contentplatform.auth.stream_tokens import StreamTokens
from contentplatform.kit.db import Database
from contentplatform.tenants.models import Membership, User
from tests.chat.support import GUIDE, QUESTION, Chatter, read_sse
from tests.support.database import run_on
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org


def answered(chatter: Chatter, role: str = "member") -> list[Any]:
    """A whole answer of `role`'s, over SSE: its frames."""
    chatter.ingest("Irrigation guide.md", GUIDE.encode())
    return chatter.ask(QUESTION, role=role)


def stream_url(chatter: Chatter, message_id: str, role: str = "member") -> dict[str, Any]:
    return chatter.ok("chat.createStreamUrl", {"id": message_id}, role=role)


def opened(client, url: str, **headers: str) -> list[Any]:
    """The URL read as EventSource reads it: no credentials but the URL's."""
    return read_sse(client, "GET", url, headers=headers)


def test_a_stream_url_opens_the_answer_as_an_eventsource_does(chatter: Chatter, client, server):
    whole = answered(chatter)
    message_id = whole[0].data["message_id"]
    made = stream_url(chatter, message_id)

    assert set(made) == {"url", "token", "expires_at", "expires_in"}
    assert made["token"].startswith("cpst_")
    assert made["expires_in"] == 300
    left = datetime.fromisoformat(made["expires_at"]) - datetime.now(UTC)
    assert 290 < left.total_seconds() < 301
    parts = urlsplit(made["url"])
    assert f"{parts.scheme}://{parts.netloc}" == server.url
    assert parts.path == f"/v1/chat/messages/{message_id}/events"
    assert parse_qs(parts.query) == {"streamToken": [made["token"]]}

    # Opened with the URL alone, from the start; reopened as EventSource reconnects (the same
    # URL, Last-Event-ID); and a new URL opened after the last event seen (?lastEventId=).
    assert opened(client, made["url"]) == whole
    assert opened(client, made["url"], **{"Last-Event-ID": whole[4].id}) == whole[5:]
    again = stream_url(chatter, message_id)
    assert opened(client, f"{again['url']}&lastEventId={whole[6].id}") == whole[7:]
    # A bearer token still works as before, and wins over a token in the query.
    headers = chatter.headers()
    assert read_sse(client, "GET", f"{made['url']}x", headers=headers) == whole


def test_every_role_makes_one_for_its_own_answer_and_api_keys_none(chatter: Chatter, client):
    for role in ("editor", "admin"):
        whole = answered(chatter, role=role)
        made = stream_url(chatter, whole[0].data["message_id"], role=role)
        assert opened(client, made["url"]) == whole

    key = chatter.ok("settings.createApiKey", {"name": "Widget", "role": "member"}, role="admin")
    refused = chatter.call(
        "chat.createStreamUrl", {"id": whole[0].data["message_id"]}, token=key["secret"]
    )
    assert "API keys cannot use this operation" in problem(refused, 403, "FORBIDDEN")["detail"]


def test_what_create_stream_url_refuses(chatter: Chatter, other: Chatter):
    whole = answered(chatter)
    message_id = whole[0].data["message_id"]
    listed = chatter.messages(whole[0].data["conversation_id"])["data"]
    question = next(m["id"] for m in listed if m["role"] == "user")

    def refused(data: dict[str, Any], who: Chatter = chatter, role: str = "member"):
        return who.request("chat.createStreamUrl", data, role=role)

    problem(refused({"id": str(uuid.uuid4())}), 404, "NOT_FOUND")
    problem(refused({"id": "not-a-uuid"}), 400, "BAD_REQUEST")
    problem(refused({"id": question}), 400, "BAD_REQUEST")
    # Another user's answer, as another organization's: not found.
    problem(refused({"id": message_id}, role="editor"), 404, "NOT_FOUND")
    problem(refused({"id": message_id}, who=other), 404, "NOT_FOUND")
    problem(chatter.call("chat.createStreamUrl", {"id": message_id}), 401, "UNAUTHORIZED")


def test_the_token_opens_its_stream_alone(chatter: Chatter, client):
    whole = answered(chatter)
    message_id = whole[0].data["message_id"]
    second = chatter.ask("How long does a sensor battery last?")
    made = stream_url(chatter, message_id)
    token = made["token"]

    # As a bearer token it is nothing, wherever it is sent.
    bearer = {"Authorization": f"Bearer {token}", "x-idp-org-id": chatter.org}
    for path in ("/v1/system/whoami", f"/v1/chat/messages/{message_id}/events"):
        body = problem(client.get(path, headers=bearer), 401, "UNAUTHORIZED")
        assert "stream token" in body["detail"]
    # In the query of any other operation, the RPC form of this one included: no credential.
    for method, path in (
        ("GET", "/v1/chat/conversations"),
        ("POST", f"/v1/chat/messages/{message_id}/stop"),
        ("POST", f"/v1/chat/messages/{message_id}/stream-url"),
        ("POST", "/api/rpc/chat.streamEvents"),
    ):
        sent = client.request(method, path, params={"streamToken": token}, json={"id": message_id})
        problem(sent, 401, "UNAUTHORIZED")
    # Another stream: another answer of the same user, or a run's.
    other_answer = second[0].data["message_id"]
    for path in (
        f"/v1/chat/messages/{other_answer}/events",
        f"/v1/generation/runs/{message_id}/events",
    ):
        body = problem(client.get(path, params={"streamToken": token}), 403, "FORBIDDEN")
        assert "another stream" in body["detail"]


def test_an_expired_forged_or_orphaned_token_is_401_before_the_stream_opens(
    chatter: Chatter, client, settings
):
    whole = answered(chatter)
    message_id = whole[0].data["message_id"]
    url = f"/v1/chat/messages/{message_id}/events"
    signer = StreamTokens.from_settings(settings)  # the service's keys: the same data directory

    def token(now: float, **changes: Any) -> str:
        claims = {
            "subject": chatter.users["member"],
            "org_id": chatter.org,
            "tenant_id": chatter.tenant_id,
            "stream": f"chat:{message_id}",
            **changes,
        }
        return signer.mint(now=now, **claims)[0]

    # Minted here as the service mints: it opens the stream...
    assert opened(client, f"{url}?streamToken={token(time.time())}") == whole
    # ... until its lifetime (300 s) is over; then 401, naming the expiry, before any event.
    expired = client.get(url, params={"streamToken": token(time.time() - 301)})
    assert "expired at" in problem(expired, 401, "UNAUTHORIZED")["detail"]
    assert expired.headers["www-authenticate"].startswith("Bearer")
    forged = token(time.time())[:-3] + "abc"
    for bad in (forged, "cpst_", "cpst_not.a.jwt", "x" * 5000, ""):
        problem(client.get(url, params={"streamToken": bad}), 401, "UNAUTHORIZED")
    # A token for the organization's tenant of old (the organization made anew since): 401.
    stale = token(time.time(), tenant_id=uuid.uuid4())
    problem(client.get(url, params={"streamToken": stale}), 401, "UNAUTHORIZED")


@pytest.mark.own_org
def test_a_member_removed_since_cannot_open_the_url(chatter: Chatter, client, settings):
    whole = answered(chatter)
    made = stream_url(chatter, whole[0].data["message_id"])

    async def remove(db: Database) -> None:
        async with db.unit_of_work() as session:
            user_id = await session.scalar(
                select(User.id).where(User.idp_user_id == chatter.users["member"])
            )
            await session.execute(
                update(Membership)
                .where(Membership.tenant_id == chatter.tenant_id, Membership.user_id == user_id)
                .values(status="removed")
            )

    run_on(settings, remove)
    problem(client.get(made["url"]), 403, "FORBIDDEN")


def test_the_api_document_declares_the_token_for_the_two_streams(openapi_document):
    with_token = sorted(
        operation["operationId"]
        for item in openapi_document["paths"].values()
        for operation in item.values()
        if {"streamToken": []} in operation["security"]
    )
    assert with_token == ["chat.streamEvents", "generation.streamRun"]
    scheme = openapi_document["components"]["securitySchemes"]["streamToken"]
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "query", "streamToken")
    made = openapi_document["paths"]["/v1/chat/messages/{id}/stream-url"]["post"]
    assert made["operationId"] == "chat.createStreamUrl"
    assert {"bearerAuth": [], "organization": []} in made["security"]
    assert {"apiKeyAuth": []} not in made["security"]
