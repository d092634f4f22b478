"""Cancelling and retrying runs against an OpenAI-compatible model, on a real service process
(tests.support.processes; PostgreSQL and Redis when the suite has them), the model being the
stand-in of stand_in.py behind `ChatServer`. Its record of the requests it received proves what
each run paid for: a call of the run a retry retries is never made again when its inputs did not
change, and is paid exactly once (by the run that made it when that run was charged, else by the
retry). Runs are followed over their event stream (SSE over the socket, as a client does).
"""

from __future__ import annotations

import math
from typing import Any

import httpx
from httpx_sse import connect_sse

from tests.generation.stand_in import (
    HOLD,
    KEYWORDS,
    TOPIC,
    Api,
    StandIn,
    blog_debits,
    blog_holds,
    part_of,
    usage_of,
    writing,
)
from tests.support.llm import ChatServer, Failure
from tests.support.processes import TIMEOUT, Services, Stack, wait_for

CANCELLED = "Generation was cancelled."


def workflow_id(run_id: str) -> str:
    return f"generation:{run_id}"


def parts_requested(llm: ChatServer) -> list[str]:
    return [part_of(request.json) for request in llm.requests]


def cost(answered: list[tuple[dict[str, Any], str]]) -> int:
    """What these answers cost: 1 credit per started 1,000 tokens."""
    prompt, answer = usage_of(answered)
    return math.ceil((prompt + answer) / 1000)


def events(api: Api, run_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    """The run's whole event stream, read over the service's socket."""
    url = f"{api.service.url}/v1/generation/runs/{run_id}/events"
    with (
        httpx.Client(timeout=TIMEOUT) as client,
        connect_sse(client, "GET", url, headers=api.headers) as source,
    ):
        assert source.response.status_code == 200
        return [(sse.id, sse.event, sse.json()) for sse in source.iter_sse()]


class FailingOnce:
    """The stand-in, but the first request for `part` is refused (a 400, which is not retried)."""

    def __init__(self, model: StandIn, part: str) -> None:
        self.model = model
        self.part = part
        self.failed = False

    def __call__(self, request: dict[str, Any]) -> str | Failure:
        if part_of(request) == self.part and not self.failed:
            self.failed = True
            return Failure(400, "This request is not accepted.", type="invalid_request_error")
        answer = self.model(request)
        assert not isinstance(answer, Failure)
        return answer


def test_a_run_cancelled_mid_call_is_charged_what_it_made_and_its_retry_pays_the_rest_once(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    model = StandIn(hold="section")  # the first section's call hangs until released
    service, api = writing(services, llm, model, "cancel")
    started = api.blog(topic=TOPIC, keywords=KEYWORDS, idempotencyKey="cancel-1")
    run_id = started["run"]["id"]
    try:
        assert model.holding.wait(TIMEOUT), service.tail()
        cancelled = api.request("POST", f"/v1/generation/runs/{run_id}/cancel")
    finally:
        model.release.set()  # the call under way ends; its answer is not charged

    made = model.answered[:2]
    assert parts_requested(llm) == ["outline", "intro", "section"]
    assert [part_of(request) for request, _ in made] == ["outline", "intro"]
    assert cancelled["status"] == "cancelled"
    assert cancelled["credits_committed"] == cost(made)
    assert (cancelled["error"]["code"], cancelled["finished_at"] is not None) == ("CANCELLED", True)
    # The pipeline stops at its next step boundary, changing nothing more.
    wait_for(
        "the cancelled workflow to stop",
        lambda: stack.workflow_status(workflow_id(run_id)) == "SUCCESS",
        service,
    )
    assert parts_requested(llm) == ["outline", "intro", "section"]
    assert api.run(run_id) == cancelled
    draft = api.draft(started["id"])
    assert (draft["status"], draft["rejection_reason"], draft["version"]) == (
        "rejected",
        CANCELLED,
        0,
    )
    tenant_id = api.tenant_id
    (hold,) = blog_holds(stack, tenant_id)
    assert (hold.status, hold.committed_amount) == ("committed", cost(made))
    assert [row.amount for row in blog_debits(stack, tenant_id)] == [-cost(made)]
    frames = events(api, run_id)
    assert frames[-1][1] == "run_finished"
    assert (frames[-1][2]["status"], frames[-1][2]["credits_charged"]) == (
        "cancelled",
        cost(made),
    )

    # The retry makes only the calls the cancelled run did not finish.
    retried = api.request(
        "POST", f"/v1/generation/runs/{run_id}/retry", json={"idempotencyKey": "cancel-2"}
    )
    assert (retried["retry_of"], retried["draft_id"]) == (run_id, started["id"])
    frames = events(api, retried["id"])
    assert frames[-1][1] == "run_finished"
    done = api.run(retried["id"])
    assert done["status"] == "succeeded", done
    outline = model.outline_json
    assert outline is not None
    sections = len(outline["sections"])
    assert parts_requested(llm) == [
        "outline",
        "intro",
        *["section"] * sections,
        "conclusion",
        "seo",
    ]
    # Paid once: the outline and the introduction by the cancelled run, the first section (whose
    # answer came after the cancel) and the rest by the retry.
    assert done["credits_committed"] == cost(model.answered[2:])
    first, second = blog_holds(stack, tenant_id)
    assert (first.status, first.committed_amount) == ("committed", cost(made))
    assert (second.status, second.committed_amount) == ("committed", done["credits_committed"])
    assert [row.amount for row in blog_debits(stack, tenant_id)] == [
        -cost(made),
        -done["credits_committed"],
    ]
    draft = api.draft(started["id"])
    assert (draft["status"], draft["version"], draft["run_id"]) == ("reviewing", 1, done["id"])
    assert draft["title"] == outline["title"]


def test_a_failed_run_is_retried_calling_the_model_only_for_what_failed(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    model = StandIn()
    _, api = writing(services, llm, model, "retry")
    llm.responder = FailingOnce(model, "seo")
    started = api.blog(topic=TOPIC, keywords=KEYWORDS, idempotencyKey="retry-1")
    run_id = started["run"]["id"]

    frames = events(api, run_id)

    assert frames[-1][1] == "error"
    assert (frames[-1][2]["code"], frames[-1][2]["retryable"]) == ("PROVIDER_ERROR", False)
    failed = api.finished(run_id)
    assert failed["status"] == "failed"
    before = parts_requested(llm)
    assert before[0] == "outline" and before[-2:] == ["conclusion", "seo"]
    (hold,) = blog_holds(stack, api.tenant_id)
    assert hold.status == "released"

    retried = api.request(
        "POST", f"/v1/generation/runs/{run_id}/retry", json={"idempotencyKey": "retry-2"}
    )
    frames = events(api, retried["id"])

    assert frames[-1][1] == "run_finished"
    done = api.finished(retried["id"])
    assert done["status"] == "succeeded", done
    assert parts_requested(llm) == [*before, "seo"]  # only the call that failed, again
    # Nothing was paid for the failed run: the retry pays every call once.
    assert done["credits_committed"] == min(HOLD, cost(model.answered))
    first, second = blog_holds(stack, api.tenant_id)
    assert (first.status, second.status) == ("released", "committed")
    assert [row.amount for row in blog_debits(stack, api.tenant_id)] == [-done["credits_committed"]]
    draft = api.draft(started["id"])
    assert (draft["status"], draft["version"]) == ("reviewing", 1)
    assert draft["seo_meta"]["slug"] == "sea-kayaking-for-beginners"
