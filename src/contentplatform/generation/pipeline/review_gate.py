"""A review gate: the draft goes to review and the run waits, durably, for a person's decision
(woken by the drafts' status events and at least every GATE_WAKE_SECONDS)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.drafts import html, seo
from contentplatform.drafts import service as drafts
from contentplatform.events import service as outbox
from contentplatform.generation import repository, watchers
from contentplatform.generation.article import Article
from contentplatform.generation.pipeline import run_steps
from contentplatform.generation.pipeline.charges import tokens_of
from contentplatform.generation.pipeline.errors import GateRejected, HoldExpired, Superseded
from contentplatform.generation.pipeline.finalize import provenance_of
from contentplatform.generation.pipeline.optimize import metadata
from contentplatform.generation.pipeline.run import (
    UNFINISHED,
    Ids,
    Made,
    Start,
    advance,
    owned_draft,
    waiting_at,
    workflow_id,
)
from contentplatform.generation.prompts import Brief
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import Conflict

log = logging.getLogger(__name__)

# A run at a review gate reads its draft at least this often (and keeps its hold alive).
GATE_WAKE_SECONDS = 600.0
GATE_TOPIC = "review"


async def review_gate(
    ids: Ids, start: Start, brief: Brief, step: dict[str, Any], made: Made, model: dict[str, str]
) -> Made:
    """Put the draft in review and wait, durably, until a person approves it (the run goes on
    from the draft as they left it), rejects it or the gate's time runs out (the run fails).

    The draft's status is the truth: the workflow reads it each time it wakes. It is woken by
    the drafts' status events (an outbox listener: a kill -9 between the approval and the wake
    loses nothing) and at least every GATE_WAKE_SECONDS, which also keeps the hold alive."""
    test = start["test"]
    if test is not None and not test.get("create_draft"):
        await skip_step(*ids, step["key"], "Skipped: a test run without createDraft.")
        return made
    article = Article.model_validate(made["article"])
    seo_meta, excerpt = metadata(brief, article, made)
    hours = int(step["config"].get("timeoutHours") or 72)
    await open_gate(
        *ids, made["article"], seo_meta, excerpt, hours, step["key"], model, made["more"]
    )
    while True:
        decision = await gate_decision(*ids, step["key"])
        if decision["state"] == "waiting":
            wait = max(1.0, min(float(decision["seconds_left"]), GATE_WAKE_SECONDS))
            await DBOS.recv_async(GATE_TOPIC, timeout_seconds=wait)
            continue
        break
    if decision["state"] == "gone":
        raise Superseded("The draft was deleted or written again at the review gate.")
    if decision["state"] == "rejected":
        raise GateRejected("REJECTED_AT_REVIEW", decision["message"])
    if decision["state"] == "expired":
        raise GateRejected("REVIEW_TIMED_OUT", decision["message"])
    draft = decision["draft"]
    gates = [*made["more"].get("review_gates", []), decision["record"]]
    return {
        "article": {**made["article"], "title": draft["title"], "content": draft["content"]},
        "seo_meta": draft["seo_meta"],
        "excerpt": draft["excerpt"] or "",
        "more": {**made["more"], "review_gates": gates},
    }


@DBOS.step(name="generation.open_gate")
async def open_gate(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    article: dict[str, Any],
    seo_meta: dict[str, Any],
    excerpt: str,
    hours: int,
    step_key: str,
    model: dict[str, str],
    more: dict[str, Any],
) -> None:
    """The article so far becomes the draft's AI revision in review (its provenance, sources
    and citations included, as the reviewer needs them), and the run waits."""
    written = Article.model_validate(article)
    scored = seo.score(written.title, html.sanitize(written.content), seo_meta).as_json()
    async with runtime.current().db.unit_of_work() as session:
        opened = await repository.get(session, tenant_id, run_id, for_update=True)
        if opened is not None and waiting_at(opened, step_key):
            # Run again after a crash that came between its commit and DBOS recording it: the
            # draft is in review already (maybe approved since), so nothing is written again.
            return
        run = await advance(session, tenant_id, run_id, "finalize", 88, step_key)
        draft = await owned_draft(session, run)
        assert draft is not None
        provenance = {
            **provenance_of(run, written, model, tokens_of(run), scored),
            **more,
            "waiting_at": step_key,
        }
        if draft.status == "generating":
            drafts.finish_generation(
                session,
                draft,
                title=written.title,
                content=written.content,
                excerpt=excerpt or None,
                seo_meta=seo_meta,
                provenance=provenance,
                summary="Written so far; waiting at the review gate",
            )
        else:  # a second gate: the approved draft goes back to review
            drafts.revise_by_pipeline(
                session,
                draft,
                changes={"title": written.title, "content": written.content},
                provenance=provenance,
                summary="Changed since the last review gate",
            )
            if draft.status == "approved":
                drafts.back_to_review(draft)
        run.status = "waiting_review"
        run.waiting_until = utcnow() + timedelta(hours=hours)
        if run.steps:
            run.steps = run_steps.set_step(run.steps, step_key, status="waiting")
        await watchers.run_changed(session, run)


@DBOS.step(name="generation.gate_decision")
async def gate_decision(tenant_id: uuid.UUID, run_id: uuid.UUID, step_key: str) -> dict[str, Any]:
    """Where the review stands: waiting (with the seconds left), approved (with the draft as
    the reviewer left it; the run goes on), rejected, expired or gone."""
    async with runtime.current().db.unit_of_work() as session:
        run = await repository.get(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in UNFINISHED:
            raise Superseded("The run was cancelled.")
        draft = await drafts.of_run(session, tenant_id, run.draft_id, run.id)
        now = utcnow()
        if draft is None or draft.status not in ("reviewing", "approved", "rejected"):
            return {"state": "gone"}
        if draft.status == "rejected":
            reason = draft.rejection_reason or "no reason given"
            return {"state": "rejected", "message": f"Rejected at the review gate: {reason}"}
        if draft.status == "approved":
            run.status = "running"
            run.waiting_until = None
            who = draft.approved_by or "a reviewer"
            if run.steps:
                run.steps = run_steps.set_step(
                    run.steps,
                    step_key,
                    now,
                    status="succeeded",
                    output_summary=f"Approved by {who}",
                )
            await watchers.run_changed(session, run)
            return {
                "state": "approved",
                "record": {"step": step_key, "approved_by": who, "approved_at": now.isoformat()},
                "draft": {
                    "title": draft.title,
                    "content": draft.content,
                    "excerpt": draft.excerpt,
                    "seo_meta": {k: v for k, v in draft.seo_meta.items() if k != drafts.SCORE_KEY},
                },
            }
        deadline = run.waiting_until or now
        if now >= deadline:
            return {
                "state": "expired",
                "message": "Nobody approved the draft at the review gate before "
                f"{deadline.isoformat(timespec='minutes')}.",
            }
        if run.reservation_id is not None:
            try:
                await credits.extend(session, tenant_id, run.reservation_id)
            except Conflict:
                raise HoldExpired("The credits held for this run were released.") from None
        return {"state": "waiting", "seconds_left": (deadline - now).total_seconds()}


@DBOS.step(name="generation.skip_step")
async def skip_step(tenant_id: uuid.UUID, run_id: uuid.UUID, step_key: str, reason: str) -> None:
    async with runtime.current().db.unit_of_work() as session:
        run = await advance(session, tenant_id, run_id, "optimize", 0)
        if run.steps:
            run.steps = run_steps.set_step(
                run.steps, step_key, utcnow(), status="skipped", output_summary=reason
            )
        await watchers.run_changed(session, run)


@outbox.listener("generation.review_gates")
async def wake_gates(session: AsyncSession, found: Sequence[Any]) -> None:
    """A draft waiting at a review gate was approved, rejected or moved: wake its run (which
    reads the draft's status itself; a wake too many is harmless)."""
    moved = [
        (event.tenant_id, event.resource_id)
        for event in found
        if event.type == "draft.status_changed" and event.resource_id is not None
    ]
    for tenant_id, draft_id in moved:
        for run_id in await repository.waiting_on(session, tenant_id, draft_id):
            await wake(run_id)


async def wake(run_id: uuid.UUID) -> None:
    """Wake the run's workflow if it waits at a review gate."""
    try:
        await DBOS.send_async(workflow_id(run_id), "wake", GATE_TOPIC)
    except Exception:  # its workflow is gone or ended: nothing waits
        log.info("run %s had no workflow to wake", run_id)
