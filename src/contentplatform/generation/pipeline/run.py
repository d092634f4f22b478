"""A run as its steps see it: the ids they are given, what the first step reads for the others,
and what each step does first (lock the run, check it still owns its draft, record where it is,
keep its hold alive)."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.drafts import service as drafts
from contentplatform.generation import repository, watchers
from contentplatform.generation.models import GenerationRun
from contentplatform.generation.pipeline import run_steps
from contentplatform.generation.pipeline.errors import HoldExpired, Superseded
from contentplatform.generation.prompts import Brief
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import Conflict

UNFINISHED = repository.UNFINISHED


def workflow_id(run_id: uuid.UUID) -> str:
    return f"generation:{run_id}"


Ids = tuple[uuid.UUID, uuid.UUID]


class Start(TypedDict):
    """What `begin` reads of the run (and its draft, for a regeneration) for the steps after."""

    kind: str
    retry_of: str | None
    brief: Brief
    # Sentences the draft already has, which a regeneration avoids writing again.
    avoid: list[str]
    # The title to keep (a regeneration), else None: the outline's.
    title: str | None
    # A regeneration of some sections: their anchors, and the draft as it was.
    sections: list[str] | None
    content: str | None
    excerpt: str | None
    seo_meta: dict[str, Any] | None
    provenance: dict[str, Any] | None
    # The definition's steps as frozen on the run (catalog.step dicts, disabled ones included).
    steps: list[dict[str, Any]]
    # A test run: whether it keeps its draft, and the step it stops after (None: none).
    test: dict[str, Any] | None


class Reused(TypedDict):
    """A model call's output from the run a retry retries, and whether that run paid for it."""

    output: dict[str, Any]
    paid: bool


class Made(TypedDict):
    """The article as the steps after the write leave it."""

    article: dict[str, Any]
    seo_meta: dict[str, Any] | None
    excerpt: str | None
    # Added to the draft's provenance (the fact check's findings, the links added, the gates).
    more: dict[str, Any]


def keeps_draft(run: GenerationRun) -> bool:
    """Whether the draft the run writes is kept: always, but for a test run without
    createDraft, whose draft is deleted however it ends."""
    return run.trigger != "test" or bool(run.request.get("createDraft"))


async def advance(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    step: str,
    percent: int,
    key: str | None = None,
) -> GenerationRun:
    """Lock the run, check it still owns its draft, and record where it is (`key`: the
    definition's step now running)."""
    run = await repository.get(session, tenant_id, run_id, for_update=True)
    if run is None or run.status not in UNFINISHED:
        raise Superseded("The run was cancelled.")
    if await owned_draft(session, run) is None:
        raise Superseded("The draft was deleted or is no longer being generated.")
    if run.status == "queued":
        run.status = "running"
        run.started_at = utcnow()
    run.step = step
    run.percent = max(run.percent, percent)
    if key is not None and run.steps:
        if key.startswith("@"):  # an appended step, by its type (its key may differ)
            key = run_steps.key_of(run.steps, key[1:]) or key
        run.steps = run_steps.begin(run.steps, key, utcnow())
    if run.reservation_id is not None:
        try:
            await credits.extend(session, tenant_id, run.reservation_id)
        except Conflict:
            raise HoldExpired(
                "The credits held for this run were released before it finished (it was "
                "interrupted for longer than the hold lasts); generate it again."
            ) from None
    await watchers.run_changed(session, run)
    return run


async def owned_draft(session: AsyncSession, run: GenerationRun) -> Any:
    """The run's draft, locked, while the run may still write it: generating under the run, or,
    once the run opened a review gate, in review or approved and last written by it."""
    draft = await drafts.generating(session, run.tenant_id, run.draft_id, run.id)
    if draft is not None or not _gated(run):
        return draft
    draft = await drafts.of_run(session, run.tenant_id, run.draft_id, run.id)
    return draft if draft is not None and draft.status in ("reviewing", "approved") else None


def waiting_at(run: GenerationRun, step_key: str) -> bool:
    return run.status == "waiting_review" and any(
        step["key"] == step_key and step["status"] == "waiting" for step in run.steps or ()
    )


def _gated(run: GenerationRun) -> bool:
    return any(
        step["type"] == "review_gate" and step["status"] in ("waiting", "succeeded")
        for step in run.steps or ()
    )


async def enter_step(
    tenant_id: uuid.UUID, run_id: uuid.UUID, step: str, percent: int, key: str | None = None
) -> None:
    async with runtime.current().db.unit_of_work() as session:
        await advance(session, tenant_id, run_id, step, percent, key)


async def summarize(tenant_id: uuid.UUID, run_id: uuid.UUID, step_key: str, summary: str) -> None:
    """The step's one-line account of what it did (shown by workflows.getRun)."""
    async with runtime.current().db.unit_of_work() as session:
        run = await repository.get(session, tenant_id, run_id, for_update=True)
        if run is not None and run.steps:
            run.steps = run_steps.set_step(run.steps, step_key, output_summary=summary)
