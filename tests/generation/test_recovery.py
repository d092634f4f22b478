"""Article generation survives crashes and stalls, proven on real `contentplatform serve` processes.

Each test runs the real service in a child process (tests.support.processes: a data directory,
databases and DBOS system database of its own; PostgreSQL and Redis when
CONTENTPLATFORM_TEST_DATABASE_URL / CONTENTPLATFORM_TEST_REDIS_URL are set) with
`LLM_PROVIDER=openai` pointed at `ChatServer`, a loopback stand-in speaking the real
chat-completions protocol, behind which `StandIn` (stand_in.py) answers each task of
the pipeline from its prompt. The stand-in's record of the requests it received is the proof of
what the pipeline paid for: a model call that finished is never made again, whatever happened to
the process that made it. Documents go in through the HTTP API and are ingested by the service;
articles are asked for with `generation.blog` and followed with `generation.getRun`; tokens come
from `contentplatform dev-token`; what the API does not show (credits, DBOS's records) is read
from the databases directly. A model that hangs is a stand-in holding its answer until the test
releases it; a crash is SIGKILL while such a call is in flight. States a crash leaves behind (a
run committed whose workflow never started) are arranged directly in the database, the service
stopped while it is done.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

from bs4 import BeautifulSoup
from dbos import DBOSClient
from sqlalchemy import Table, select, update

from contentplatform import __version__
from contentplatform.config import Settings
from contentplatform.credits.models import CreditReservation
from contentplatform.generation import schemas, service
from contentplatform.generation.models import GenerationRun
from contentplatform.kit.db import AFTER_COMMIT_KEY, Database
from tests.generation.stand_in import (
    KEYWORDS,
    TOPIC,
    Api,
    StandIn,
    assert_charged_once,
    blog_debits,
    blog_holds,
    openai_settings,
    part_of,
    usage_of,
    writing,
)
from tests.support.llm import ChatServer
from tests.support.processes import TIMEOUT, Services, Stack, wait_for

STALL_NOTICED_WITHIN = 15.0  # the reconciler runs every 0.5 s here
STALLED = "Generation stalled and was stopped."

RUNS = cast(Table, GenerationRun.__table__)
RESERVATIONS = cast(Table, CreditReservation.__table__)


def workflow_id(run_id: str) -> str:
    return f"generation:{run_id}"


def parts_requested(llm: ChatServer) -> list[str]:
    return [part_of(request.json) for request in llm.requests]


def run_row(stack: Stack, run_id: str) -> Any:
    return stack.one(select(RUNS).where(RUNS.c.id == uuid.UUID(run_id)))


def commit_a_run_behind_the_services_back(stack: Stack, tenant_id: uuid.UUID) -> dict[str, str]:
    """What `generation.blog` commits (service.start_blog: the credit hold, the draft in
    `generating`, the queued run), without starting its workflow: the process "died" between
    that commit and `generation:<run id>`'s start. The run's and the draft's ids."""
    settings = Settings(_env_file=None, data_dir=stack.data_dir, database_url=stack.database_url)

    async def scenario() -> dict[str, str]:
        db = Database(settings.resolved_database_url)
        try:
            async with db.unit_of_work() as session:
                draft, run = await service.start_blog(
                    session,
                    SimpleNamespace(settings=settings),  # type: ignore[arg-type]
                    tenant_id,
                    schemas.BlogInput(topic=TOPIC, keywords=KEYWORDS, idempotency_key="lost"),
                    created_by="test",
                )
                # Its start, queued for after the commit: never made.
                assert session.info.pop(AFTER_COMMIT_KEY)
                return {"run": str(run.id), "draft": str(draft.id)}
        finally:
            await db.dispose()

    return asyncio.run(scenario())


def crash_during_the_first_section(
    stack: Stack, services: Services, llm: ChatServer, name: str
) -> tuple[Api, dict[str, Any], StandIn]:
    """A service killed (SIGKILL) while the model writes the article's first section, after
    the outline and the introduction were written: the tenant's API on the dead service, the
    `generation.blog` answer and the model. Checks what the crash left: a pending workflow, a
    running run, a held hold, no debit."""
    model = StandIn(hold="section")  # the first section's call hangs, until released
    service, api = writing(services, llm, model, name)
    started = api.blog(topic=TOPIC, keywords=KEYWORDS, idempotencyKey=f"{name}-1")
    run_id = started["run"]["id"]
    try:
        assert model.holding.wait(TIMEOUT), service.tail()
        in_flight = api.run(run_id)
        assert (in_flight["status"], in_flight["step"]) == ("running", "write")
        service.kill()
    finally:
        model.release.set()  # its answer goes to a dead connection

    assert service.process.returncode == -signal.SIGKILL
    assert stack.workflow_status(workflow_id(run_id)) == "PENDING"
    assert parts_requested(llm) == ["outline", "intro", "section"]
    tenant_id = run_row(stack, run_id).tenant_id
    (held,) = blog_holds(stack, tenant_id)
    assert held.status == "held"
    assert blog_debits(stack, tenant_id) == []
    assert run_row(stack, run_id).status == "running"
    return api, started, model


# --- the tests ----------------------------------------------------------------------------------


def test_a_crash_during_a_model_call_resumes_after_restart_without_repeating_finished_calls(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    api, started, model = crash_during_the_first_section(stack, services, llm, "crash")
    run_id = started["run"]["id"]
    tenant_id = run_row(stack, run_id).tenant_id
    (held,) = blog_holds(stack, tenant_id)

    second = services.start(**openai_settings(llm))
    api = Api(second, services.token(api.org), api.org)
    run = api.finished(run_id)

    assert run["status"] == "succeeded", run
    assert run["error"] is None
    draft = api.draft(started["id"])
    assert draft["status"] == "reviewing"
    assert draft["version"] == 1
    outline = model.outline_json
    assert outline is not None
    headings = [section["heading"] for section in outline["sections"]]
    page = BeautifulSoup(draft["content"], "html.parser")
    # The sources are the tenant's own files: cited in the provenance, not in the article.
    assert [h.get_text() for h in page.find_all("h2")] == [*headings, "Key takeaways"]

    # Every finished call was made once; only the one the crash cut short was made again, with
    # the same request (the workflow replayed its checkpoints, deterministically).
    seen = llm.requests
    parts = parts_requested(llm)
    assert parts == [
        "outline",
        "intro",
        "section",
        *["section"] * len(headings),
        "conclusion",
        "seo",
    ]
    assert parts.count("outline") == 1
    assert parts.count("intro") == 1
    assert seen[3].json == seen[2].json
    assert len({json.dumps(r.json, sort_keys=True) for r in seen}) == len(seen) - 1
    # Paid for once: the tokens of each call the article was written from, one hold, one debit.
    delivered = {json.dumps(r, sort_keys=True): (r, a) for r, a in model.answered}
    input_tokens, output_tokens = usage_of(list(delivered.values()))
    assert draft["provenance"]["usage"] == {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
    }
    hold = assert_charged_once(stack, tenant_id, run)
    assert hold.id == held.id
    assert stack.ended_workflow_status(workflow_id(run_id)) == "SUCCESS"
    log = second.tail(1_000_000)
    assert f"restarting {workflow_id(run_id)}" not in log  # DBOS recovered it, as it was
    assert "Traceback" not in log


def test_a_run_whose_workflow_never_started_is_started_by_the_reconciler_and_succeeds(
    stack: Stack, services: Services, llm: ChatServer, server: Any
) -> None:
    # `server`: the suite's service installs the runtime `credits.pricing` reads while the run
    # is committed here, as it is in any full run; alone, this test had none.
    model = StandIn()
    first, api = writing(services, llm, model, "missing")
    tenant_id = api.tenant_id
    first.stop()

    lost = commit_a_run_behind_the_services_back(stack, tenant_id)
    assert stack.workflow_status(workflow_id(lost["run"])) is None

    second = services.start(**openai_settings(llm))
    api = Api(second, services.token(api.org), api.org)
    run = api.finished(lost["run"])

    assert run["status"] == "succeeded", run
    draft = api.draft(lost["draft"])
    assert draft["status"] == "reviewing"
    assert draft["provenance"]["run_id"] == lost["run"]
    assert draft["provenance"]["provider"] == "openai"
    assert stack.ended_workflow_status(workflow_id(lost["run"])) == "SUCCESS"
    restarts = f"restarting {workflow_id(lost['run'])}: its workflow is missing"
    assert restarts in second.tail(1_000_000)
    outline = model.outline_json
    assert outline is not None
    parts = parts_requested(llm)
    sections = ["section"] * len(outline["sections"])
    assert parts == ["outline", "intro", *sections, "conclusion", "seo"]  # each once
    assert_charged_once(stack, tenant_id, run)

    # Started once: later passes find the workflow and leave the run be.
    time.sleep(1.5)
    assert second.tail(1_000_000).count(restarts) == 1
    assert parts_requested(llm) == parts
    assert api.run(lost["run"]) == run


def test_a_run_stalled_on_a_hanging_model_is_failed_by_the_reconciler_and_stays_failed(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    model = StandIn(hold="outline")  # the model never answers the first call, until released
    service, api = writing(
        services, llm, model, "stalled", generation_stall_seconds="2", llm_timeout_seconds="30"
    )
    tenant_id = api.tenant_id
    started = api.blog(topic=TOPIC, keywords=KEYWORDS)
    run_id = started["run"]["id"]
    try:
        assert model.holding.wait(TIMEOUT), service.tail()
        run = api.finished(run_id, timeout=STALL_NOTICED_WITHIN)

        # Failed while the call still hangs: the draft never stays generating.
        assert model.parts_answered() == []
        assert run["status"] == "failed", run
        assert run["error"] == {"code": "STALLED", "message": STALLED, "retryable": True}
        assert run["step"] == "outline"
        assert run["credits_committed"] is None
        draft = api.draft(started["id"])
        assert draft["status"] == "rejected"
        assert draft["rejection_reason"] == f"Generation failed: {STALLED}"
        (hold,) = blog_holds(stack, tenant_id)
        assert hold.status == "released"
        assert f"giving up {workflow_id(run_id)}: {STALLED}" in service.tail(1_000_000)
        wait_for(
            "DBOS to record the cancellation",
            lambda: stack.workflow_status(workflow_id(run_id)) == "CANCELLED",
            service,
        )
    finally:
        model.release.set()

    # The model answers at last, to the cancelled workflow: it does not come back to write the
    # article, call the model again or charge anything.
    wait_for("the model's late answer", lambda: model.parts_answered() == ["outline"], service)
    time.sleep(2)
    assert parts_requested(llm) == ["outline"]
    assert api.run(run_id) == run
    assert api.draft(started["id"]) == draft
    (hold,) = blog_holds(stack, tenant_id)
    assert hold.status == "released"
    assert blog_debits(stack, tenant_id) == []
    assert stack.workflow_status(workflow_id(run_id)) == "CANCELLED"


def test_a_run_interrupted_for_longer_than_its_hold_lasts_fails_without_calling_the_model(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    """Down longer than `credit_reservation_ttl_seconds`: the hold expired while nobody could
    extend it, so the recovered run must not write on credits it no longer holds."""
    api, started, _ = crash_during_the_first_section(stack, services, llm, "expired")
    run_id = started["run"]["id"]
    with stack.engine.begin() as connection:
        connection.execute(
            update(RESERVATIONS)
            .where(RESERVATIONS.c.id == uuid.UUID(started["run"]["reservation_id"]))
            .values(expires_at=datetime.now(UTC) - timedelta(minutes=1))
        )

    second = services.start(**openai_settings(llm))
    api = Api(second, services.token(api.org), api.org)
    run = api.finished(run_id)

    assert run["status"] == "failed", run
    assert run["error"]["code"] == "CREDITS_EXPIRED"
    assert run["error"]["retryable"] is True
    assert run["credits_committed"] is None
    draft = api.draft(started["id"])
    assert draft["status"] == "rejected"
    assert draft["rejection_reason"] == f"Generation failed: {run['error']['message']}"
    assert parts_requested(llm) == ["outline", "intro", "section"]  # nothing more was asked
    tenant_id = run_row(stack, run_id).tenant_id
    # Marked expired by the reconciler's sweep of stale holds, never committed or released.
    hold = wait_for(
        "the sweep of stale holds",
        lambda: (found := blog_holds(stack, tenant_id)[0]).status != "held" and found,
        second,
    )
    assert hold.status == "expired"
    assert hold.committed_amount is None
    assert blog_debits(stack, tenant_id) == []
    assert stack.ended_workflow_status(workflow_id(run_id)) == "SUCCESS"  # it ended by failing


# --- regressions ------------------------------------------------------------------------------


def test_finalize_run_again_after_its_commit_leaves_the_finished_run_as_it_was(
    stack: Stack, services: Services, llm: ChatServer
) -> None:
    """`finalize` commits the article and the credits, then DBOS records the step: a crash in
    between makes the recovered workflow run `finalize` again. Made deterministic here by forking
    the finished workflow at that step (DBOS's own restart-from-a-step: the steps before it are
    replayed from their checkpoints, `finalize` runs again for the same run).

    Was: the step found the run succeeded and took it for cancelled; `abandon` released the hold,
    which is committed, so it raised Conflict and the workflow ended in ERROR with a traceback."""
    model = StandIn()
    service, api = writing(services, llm, model, "refinal")
    started = api.blog(topic=TOPIC, keywords=KEYWORDS)
    run = api.finished(started["run"]["id"])
    assert run["status"] == "succeeded", run
    draft = api.draft(started["id"])
    calls = len(llm.requests)
    # The run reads succeeded once finalize's transaction commits; DBOS records the step after.
    assert stack.ended_workflow_status(workflow_id(run["id"])) == "SUCCESS"

    client = DBOSClient(system_database_url=stack.dbos_database_url)
    try:
        steps = client.list_workflow_steps(workflow_id(run["id"]), load_output=False)
        finalize = next(
            s["function_id"] for s in steps if s["function_name"] == "generation.finalize"
        )
        fork = client.fork_workflow(
            workflow_id(run["id"]), finalize, application_version=__version__
        ).get_workflow_id()
    finally:
        client.destroy()
    status = wait_for(
        "the forked workflow to end",
        lambda: (found := stack.workflow_status(fork)) in ("SUCCESS", "ERROR") and found,
        service,
    )

    assert status == "SUCCESS"
    assert len(llm.requests) == calls  # every model call was replayed from its checkpoint
    assert api.run(run["id"]) == run
    assert api.draft(started["id"]) == draft
    assert_charged_once(stack, run_row(stack, run["id"]).tenant_id, run)
    assert "Traceback" not in service.tail(1_000_000)
