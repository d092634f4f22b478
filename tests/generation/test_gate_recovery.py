"""A run waiting at a workflow's review gate survives the service being killed (SIGKILL), on
real `contentplatform serve` processes (tests.support.processes; PostgreSQL and Redis when the
suite runs against them): the restarted service's DBOS recovers the waiting workflow, the
approval made on the restarted service resumes it, and the steps after the gate run once, the
model calls made before the crash never again."""

from __future__ import annotations

import signal
from typing import Any

from dbos import DBOSClient

from contentplatform import __version__
from contentplatform.generation.pipeline.run import workflow_id
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

    assert run["status"] == "succeeded", (run.get("error"), run["steps"])
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


def test_open_gate_run_again_after_its_commit_writes_nothing_and_the_approval_stands(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    """`open_gate` puts the draft in review and the run `waiting_review`, then DBOS records the
    step: a crash in between (the kill above lands there when it comes the moment the run reads
    waiting) runs `open_gate` again in the recovered workflow. Made deterministic here by forking
    the waiting workflow at that step.

    Was: the step took the draft in review for one past an earlier gate, wrote it again as a new
    revision and, when the reviewer had approved it meanwhile, sent it back to review."""
    model = StandIn()
    service, api = writing(services, llm, model, "regate")
    workflow = api.request("POST", "/v1/workflows", json={"name": "Reviewed", "steps": STEPS})
    started = api.request(
        "POST",
        f"/v1/workflows/{workflow['id']}/test-run",
        json={"topic": TOPIC, "keywords": KEYWORDS, "createDraft": True},
    )
    waiting = reaches(api, started["id"], "waiting_review")
    draft_id = waiting["draft_id"]
    versions = api.request("GET", f"/v1/drafts/{draft_id}/versions")

    client = DBOSClient(system_database_url=stack.dbos_database_url)
    try:
        original = workflow_id(started["id"])
        steps = client.list_workflow_steps(original, load_output=False)
        opened = next(
            s["function_id"] for s in steps if s["function_name"] == "generation.open_gate"
        )
        fork = client.fork_workflow(
            original, opened, application_version=__version__
        ).get_workflow_id()
        wait_for(
            "the fork to run open_gate again and wait at the gate (or the run to end)",
            lambda: (
                run_of(api, started["id"])["status"] != "waiting_review"
                or any(
                    step["function_name"] == "generation.gate_decision"
                    for step in client.list_workflow_steps(fork, load_output=False)
                )
            ),
            service,
            interval=0.1,
        )
    finally:
        client.destroy()

    assert run_of(api, started["id"])["status"] == "waiting_review"
    assert api.request("GET", f"/v1/drafts/{draft_id}/versions") == versions
    api.request("POST", f"/v1/drafts/{draft_id}/approve")
    run = reaches(api, started["id"], "succeeded", "failed", "cancelled")
    assert run["status"] == "succeeded", (run.get("error"), run["steps"])
    assert api.request("GET", f"/v1/drafts/{draft_id}")["status"] == "approved"
    assert "Traceback" not in service.tail(1_000_000)
