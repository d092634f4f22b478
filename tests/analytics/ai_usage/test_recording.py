"""Every metered model call records its model and tokens on its debit: a chat answer made through
the API (the offline model) reads back from analytics.aiUsage* with its model's name and adds up
to billing.getUsage's; a generation run's debit names its calls' model(s), run, workflow and
instance (charges.spent_of, below the API: a real run takes seconds)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest

from contentplatform.ai.offline import OfflineWriter
from contentplatform.generation.models import GenerationRun
from contentplatform.generation.pipeline import charges
from tests.support.orgs import Org, org_fixture

pytestmark = pytest.mark.shared_org

usage = org_fixture(Org)


def test_a_chat_answer_records_its_model_and_adds_up_to_the_ledger(usage: Org):
    asked = {
        "query": "How often should tomatoes be watered in a dry summer?",
        "idempotencyKey": uuid.uuid4().hex,
        "responseMode": "blocking",
    }
    answer = usage.ok("chat.message", asked, role="member")
    conversation = answer["conversation_id"]
    today = datetime.now(UTC).date()
    around = {"dateFrom": str(today - timedelta(days=1)), "dateTo": str(today + timedelta(days=1))}
    events = usage.ok("analytics.aiUsageEvents", {**around, "kind": "chat.message", "limit": 100})
    [event] = [e for e in events["data"] if e["resource_id"] == conversation]
    assert event["model"] == OfflineWriter.model
    assert event["input_tokens"] > 0 and event["output_tokens"] > 0
    assert event["credits"] >= 1
    assert event["reservation_id"] == event["id"]  # a commit of a hold

    # The day it was committed (UTC, the organization's zone), read by both.
    day = datetime.fromisoformat(event["at"]).date()
    window = {"dateFrom": str(day), "dateTo": str(day)}
    found = usage.ok("analytics.aiUsageOverview", window, role="admin")["metrics"]
    billed = usage.ok(
        "billing.getUsage",
        {"startDate": f"{day}T00:00:00Z", "endDate": f"{day + timedelta(days=1)}T00:00:00Z"},
    )
    results = [result for bucket in billed["data"] for result in bucket["results"]]
    assert found["credits"]["value"] == sum(r["credits"] for r in results) >= event["credits"]
    assert found["input_tokens"]["value"] == sum(r["input_tokens"] for r in results)
    assert found["output_tokens"]["value"] == sum(r["output_tokens"] for r in results)
    assert found["cost_usd"]["value"] == 0  # the offline model costs nothing
    models = usage.ok("analytics.aiUsageBreakdown", {**window, "groupBy": "model"})
    assert OfflineWriter.model in {row["group"]["key"] for row in models["data"]}


def _run(calls: dict[str, Any]) -> GenerationRun:
    return cast(
        GenerationRun,
        SimpleNamespace(
            id=uuid.uuid4(),
            kind="blog",
            job_id=uuid.uuid4(),
            draft_id=uuid.uuid4(),
            workflow_id=uuid.uuid4(),
            instance_id=uuid.uuid4(),
            usage=calls,
        ),
    )


def test_a_generation_runs_debit_names_its_model_run_and_instance():
    call = {"step": "write", "model": "gpt-4o", "input_tokens": 100, "output_tokens": 50}
    run = _run({"a": call, "b": {**call, "step": "outline", "input_tokens": 10}})
    spent = charges.spent_of(run)
    assert (spent.input_tokens, spent.output_tokens, spent.model) == (110, 100, "gpt-4o")
    assert (spent.workflow_run_id, spent.workflow_id, spent.job_instance_id) == (
        run.id,
        run.workflow_id,
        run.instance_id,
    )
    assert (spent.resource_type, spent.resource_id) == ("job", str(run.job_id))
    # Calls to two models (the model changed between steps): both named, tokens counted once.
    mixed = _run({"a": call, "b": {**call, "model": "gpt-4o-mini"}})
    assert charges.spent_of(mixed).model == "gpt-4o+gpt-4o-mini"
    assert charges.spent_of(_run({})).model is None
