"""The run's first steps: `begin` reads the run (and the draft a regeneration rewrites) once for
the steps after it; `reusable` reads the outputs a retry may take from the run it retries."""

from __future__ import annotations

import uuid
from typing import Any

from dbos import DBOS

from contentplatform.core import runtime
from contentplatform.drafts import service as drafts
from contentplatform.generation import repository
from contentplatform.generation.article import sentences_of
from contentplatform.generation.models import GenerationRun
from contentplatform.generation.pipeline.run import Reused, Start, advance, workflow_id
from contentplatform.settings import service as settings
from contentplatform.workflows import catalog as wf_catalog


@DBOS.step(name="generation.begin")
async def begin(tenant_id: uuid.UUID, run_id: uuid.UUID) -> Start:
    async with runtime.current().db.unit_of_work() as session:
        run = await advance(session, tenant_id, run_id, "retrieve", 2)
        request = run.request
        start: Start = {
            "kind": run.kind,
            "retry_of": str(run.retry_of) if run.retry_of else None,
            "brief": {
                "topic": request["topic"],
                "keywords": request.get("keywords") or [],
                "instructions": request.get("contentInstructions"),
                "document_ids": request.get("documentIds"),
                # Read once, here: a recovered run writes in the voice it started with.
                "guidance": await settings.generation_guidance(session, tenant_id),
            },
            "avoid": [],
            "title": None,
            "sections": None,
            "content": None,
            "excerpt": None,
            "seo_meta": None,
            "provenance": None,
            "steps": list((run.definition or {}).get("steps") or builtin_steps()),
            "test": _test_of(run),
        }
        if run.kind != "regenerate":
            return start
        draft = await drafts.generating(session, tenant_id, run.draft_id, run.id)
        assert draft is not None  # advance checked it, under the same lock
        start["avoid"] = sentences_of([draft.content])
        sections = request.get("sections")
        if sections or request.get("keepTitle", True):
            start["title"] = draft.title
        if sections:
            start["sections"] = list(sections)
            start["content"] = draft.content
            start["excerpt"] = draft.excerpt
            start["seo_meta"] = {k: v for k, v in draft.seo_meta.items() if k != drafts.SCORE_KEY}
            start["provenance"] = draft.provenance
        return start


def builtin_steps() -> list[dict[str, Any]]:
    return list(wf_catalog.builtin_default()["steps"])


def catalog_step(type_: str) -> dict[str, Any]:
    """A step of `type_` at its defaults, from the built-in definition."""
    return next(s for s in wf_catalog.builtin_default()["steps"] if s["type"] == type_)


def _test_of(run: GenerationRun) -> dict[str, Any] | None:
    if run.trigger != "test":
        return None
    return {
        "create_draft": bool(run.request.get("createDraft")),
        "stop_after": run.request.get("stopAfterStep"),
    }


@DBOS.step(name="generation.reusable")
async def reusable(tenant_id: uuid.UUID, previous_run_id: str) -> dict[str, Reused]:
    """The model calls' outputs of the run a retry retries, by the fingerprints of their inputs,
    read from that run's workflow checkpoints; whether that run paid for each."""
    previous = uuid.UUID(previous_run_id)
    async with runtime.current().db.unit_of_work() as session:
        run = await repository.get(session, tenant_id, previous)
        charged = run is not None and run.credits_committed is not None
        paid = set(run.usage or {}) if run is not None and charged else set()
    found: dict[str, Reused] = {}
    for step in await DBOS.list_workflow_steps_async(workflow_id(previous)):
        output = step["output"]
        if step["error"] is None and isinstance(output, dict):
            key = output.get("input")
            if isinstance(key, str):
                found[key] = {"output": output, "paid": key in paid}
    return found
