"""An operation declared with `events=` (core/procedures.py EventStream), on a small app of its
own: its 200 is `text/event-stream` in the API document (beside JSON when its handler may also
answer a model), the stream reaches the client over REST and RPC after the handler's unit of
work, and a problem raised before the stream opens is problem+json."""

from __future__ import annotations

import uuid

import pytest
from httpx_sse import connect_sse
from pydantic import BaseModel

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, EventStream, ProcedureRouter
from contentplatform.kit import streams
from contentplatform.kit.errors import PaymentRequired
from contentplatform.kit.schemas import Input
from tests.support.servers import second_service

tickers = ProcedureRouter("tickers", tag="Tickers")


class Tick(BaseModel):
    n: int


class Finished(BaseModel):
    ticks: int


class TickInput(Input):
    count: int = 2
    blocking: bool = False


TICKS = EventStream(events={"tick": Tick, "finished": Finished}, terminal=["finished"])


@tickers.post("run", "/v1/tickers", access=Access.member, events=TICKS, errors=[PaymentRequired])
async def run_ticker(ctx: Context, data: TickInput) -> Finished | streams.EventSourceResponse:
    """Tick `count` times."""
    if data.count > 5:
        raise PaymentRequired("Five ticks at most on this plan.")
    if data.blocking:
        return Finished(ticks=data.count)
    log, stream, tenant = ctx.runtime.streams, f"test:{uuid.uuid4()}", ctx.tenant.tenant_id
    await log.append_many(
        stream,
        tenant,
        [streams.Append("tick", {"n": n}) for n in range(1, data.count + 1)]
        + [streams.Append("finished", {"ticks": data.count}, terminal=True)],
    )
    return await streams.stream_response(log, ctx.request, stream, tenant, id_prefix="t")


@pytest.fixture(scope="module")
def app(settings_with):
    with second_service(settings_with(), [tickers]) as running, running.client() as http:
        yield http


@pytest.fixture
def headers(token, org):
    return {"Authorization": f"Bearer {token(org, 'w1', 'member')}", "x-idp-org-id": org}


def test_the_document_declares_the_event_stream_beside_the_json_answer(app):
    document = app.get("/openapi.json").json()
    operation = document["paths"]["/v1/tickers"]["post"]
    ok = operation["responses"]["200"]
    assert set(ok["content"]) == {"text/event-stream", "application/json"}
    assert ok["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Finished"}
    assert "| `tick` | `n` |" in ok["description"]
    assert "exactly one `finished`" in ok["description"]
    assert "402" in operation["responses"]
    # One schema per event: its name, and its data a JSON text of the event's model.
    frames = ok["content"]["text/event-stream"]["schema"]["oneOf"]
    assert [frame["properties"]["event"] for frame in frames] == [
        {"const": "tick"},
        {"const": "finished"},
    ]
    data = frames[0]["properties"]["data"]
    assert data["contentMediaType"] == "application/json"
    assert data["contentSchema"] == {"$ref": "#/components/schemas/Tick"}
    assert document["components"]["schemas"]["Tick"]["properties"]["n"]["type"] == "integer"


@pytest.mark.parametrize("path", ["/v1/tickers", "/api/rpc/tickers.run"])
def test_the_stream_is_served_over_rest_and_rpc(app, headers, path):
    with connect_sse(app, "POST", path, json={"count": 2}, headers=headers) as source:
        assert source.response.headers["content-type"].startswith("text/event-stream")
        frames = [(sse.id, sse.event, sse.json()) for sse in source.iter_sse()]
    assert frames == [
        ("t:1", "tick", {"n": 1}),
        ("t:2", "tick", {"n": 2}),
        ("t:3", "finished", {"ticks": 2}),
    ]
    blocking = app.post(path, json={"count": 3, "blocking": True}, headers=headers)
    assert blocking.headers["content-type"] == "application/json"
    assert blocking.json() == {"ticks": 3}


def test_a_problem_before_the_stream_is_problem_json(app, headers):
    refused = app.post("/v1/tickers", json={"count": 6}, headers=headers)
    assert refused.status_code == 402
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "PAYMENT_REQUIRED"
