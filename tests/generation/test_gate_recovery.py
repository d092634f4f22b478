"""A run waiting at a workflow's review gate survives the service being killed (SIGKILL), on
real `contentplatform serve` processes (tests.support.processes; PostgreSQL and Redis when the
suite runs against them): the restarted service's DBOS recovers the waiting workflow, the
approval made on the restarted service resumes it, and the steps after the gate run once, the
model calls made before the crash never again."""

from __future__ import annotations

import signal
from typing import Any

from tests.generation.stand_in import (
    KEYWORDS,
    TOPIC,
    Api,
    StandIn,
    assert_charged_once,
    openai_settings,
    part_of,
    writing,
)
from tests.support.llm import ChatServer
from tests.support.processes import Services, Stack, wait_for

STEPS = [
    {"key": "research", "type": "research"},
    {"key": "outline", "type": "outline"},
    {"key": "write", "type": "write"},
    {"key": "facts", "type": "fact_check"},
    {"key": "gate", "type": "review_gate", "config": {"timeoutHours": 2}},
    {"key": "optimize", "type": "optimize"},
]


def run_of(api: Api, run_id: str) -> dict[str, Any]:
    return api.request("GET", f"/v1/workflows/runs/{run_id}")


def reaches(api: Api, run_id: str, *statuses: str) -> dict[str, Any]:
    return wait_for(
        f"run {run_id} to be {statuses}",
        lambda: (run := run_of(api, run_id))["status"] in statuses and run,
        api.service,
        interval=0.1,
    )


def test_a_run_waiting_at_a_review_gate_survives_kill_9_and_resumes_on_approve(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    model = StandIn()
    service, api = writing(services, llm, model, "gate")
    workflow = api.request("POST", "/v1/workflows", json={"name": "Reviewed", "steps": STEPS})
    started = api.request(
        "POST",
        f"/v1/workflows/{workflow['id']}/test-run",
        json={"topic": TOPIC, "keywords": KEYWORDS, "createDraft": True},
    )
    waiting = reaches(api, started["id"], "waiting_review")
    before = [part_of(request.json) for request in llm.requests]
    assert "seo" not in before  # optimize comes after the gate

    service.kill()
    assert service.process.returncode == -signal.SIGKILL

    second = services.start(**openai_settings(llm))
    api = Api(second, services.token(api.org), api.org)
    assert run_of(api, started["id"])["status"] == "waiting_review"  # it still waits
    api.request("POST", f"/v1/drafts/{waiting['draft_id']}/approve")
    run = reaches(api, started["id"], "succeeded", "failed", "cancelled")

    assert run["status"] == "succeeded", run
    statuses = {step["key"]: step["status"] for step in run["steps"]}
    assert set(statuses.values()) == {"succeeded"}, statuses
    # Before the gate: each call once; after it: the SEO call, once.
    assert [part_of(request.json) for request in llm.requests] == [*before, "seo"]
    draft = api.request("GET", f"/v1/drafts/{waiting['draft_id']}")
    assert draft["status"] == "approved"
    assert draft["provenance"]["review_gates"][0]["step"] == "gate"
    generation_run = api.request("GET", f"/v1/generation/runs/{started['id']}")
    assert_charged_once(stack, api.tenant_id, generation_run)
    assert "Traceback" not in second.tail(1_000_000)
