"""generation.createRunStreamUrl over REST and RPC (`call`), and the URL it makes opened as a
browser's EventSource opens it (no Authorization, no organization header), resumed as it
resumes; its refusals, roles and a second tenant. The token's own rules (expiry, forgery,
another stream, a bearer token) are chat's tests too: tests/chat/test_stream_urls.py."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import httpx
import pytest
from httpx_sse import connect_sse

from tests.generation.live import Live
from tests.generation.support import HANDBOOK
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

live = org_fixture(Live)
other = org_fixture(Live, second=True)


def opened(client: httpx.Client, url: str, **headers: str) -> list[tuple[str, str]]:
    """(id, event) of each frame of the URL read with no credentials but its own."""
    with connect_sse(client, "GET", url, headers=headers) as source:
        assert source.response.status_code == 200, source.response.read()
        return [(sse.id, sse.event) for sse in source.iter_sse()]


def test_a_run_stream_url_opens_and_resumes_the_run_stream(live: Live, client: httpx.Client):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    run_id = live.start(topic="Installation")["run"]["id"]
    live.finished(run_id)
    whole = [(frame_id, event) for frame_id, event, _ in live.events(run_id)]

    for role in ("member", "editor", "admin"):
        made = live.ok("generation.createRunStreamUrl", {"id": run_id}, role=role)
        assert made["token"].startswith("cpst_") and made["expires_in"] == 300
        assert urlsplit(made["url"]).path == f"/v1/generation/runs/{run_id}/events"
        assert opened(client, made["url"]) == whole
    assert opened(client, made["url"], **{"Last-Event-ID": whole[0][0]}) == whole[1:]
    assert opened(client, f"{made['url']}&lastEventId={whole[-2][0]}") == whole[-1:]
    # It opens the run's stream alone.
    refused = client.post(
        f"/v1/generation/runs/{run_id}/cancel", params={"streamToken": made["token"]}
    )
    problem(refused, 401, "UNAUTHORIZED")


def test_what_create_run_stream_url_refuses(live: Live, other: Live):
    live.ingest("Fernleaf handbook.md", HANDBOOK)
    run_id = live.start(topic="Installation")["run"]["id"]

    problem(
        live.request("generation.createRunStreamUrl", {"id": str(uuid.uuid4())}), 404, "NOT_FOUND"
    )
    problem(live.request("generation.createRunStreamUrl", {"id": "nope"}), 400, "BAD_REQUEST")
    problem(other.request("generation.createRunStreamUrl", {"id": run_id}), 404, "NOT_FOUND")
    problem(live.call("generation.createRunStreamUrl", {"id": run_id}), 401, "UNAUTHORIZED")
    key = live.ok("settings.createApiKey", {"name": "Widget", "role": "member"}, role="admin")
    by_key = live.call("generation.createRunStreamUrl", {"id": run_id}, token=key["secret"])
    problem(by_key, 403, "FORBIDDEN")
    live.finished(run_id)
