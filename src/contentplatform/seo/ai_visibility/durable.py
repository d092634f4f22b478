"""AI visibility runs as durable work: the pending answers of one sync run (kind
`ai_visibility`), asked by a DBOS workflow (`seo.ai_visibility:<run id>`) enqueued once
seo.runAiVisibility commits.

It has no DBOS steps: the answer rows are its checkpoints. seo.runAiVisibility inserted one
pending row per (prompt, engine, sample); the workflow asks each engine for each pending row
(at most CONCURRENCY at once) and stores each answer, with what extraction read from it, in a
transaction of its own keyed by the row. So a run resumed after a crash (the reconciler restarts
a run whose rows are pending and whose workflow is gone) asks only for the samples still
pending, never again for one stored; the one window is a crash between an engine's answer and
its commit. An engine with no provider any more fails its rows (`not_connected`).

The run ends succeeded, partial (some samples failed: a failing engine never shows as a silent
zero) or failed (none answered); its credits are committed for the answers received (released
when none), each prompt's `latest` reading is written, and the SEO actions' close_ai_gap rule
is run on it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.errors import PlatformError
from contentplatform.seo.ai_visibility import (
    engines,
    extraction,
    latest,
    repository,
    routing,
    sentiment,
)
from contentplatform.seo.models import SeoAiAnswer
from contentplatform.seo.sync_runs import service as sync_runs

log = logging.getLogger(__name__)

QUEUE = durable.declare_queue("seo.ai_visibility", worker_concurrency=2, per_tenant=1)
INTERNAL = "The run stopped on an internal error; the service logged it."
# A run none of whose answers moved for this long is given up.
STALL_SECONDS = 2 * 3600
# Samples asked at once within one run.
CONCURRENCY = 4


def workflow_id(run_id: uuid.UUID) -> str:
    return f"seo.ai_visibility:{run_id}"


def enqueue_after_commit(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    durable.enqueue_after_commit(
        session,
        run_ai_visibility,
        [(workflow_id(run_id), (str(tenant_id), str(run_id)))],
        queue=QUEUE,
    )


@dataclass(frozen=True)
class Context:
    routes: dict[str, engines.Route]
    lookout: routing.Lookout


@DBOS.workflow(name="seo.ai_visibility")
async def run_ai_visibility(tenant_id: str, run_id: str) -> str:
    db = runtime.current().db
    tenant, run = uuid.UUID(tenant_id), uuid.UUID(run_id)
    try:
        return await _work(db, tenant, run)
    except Exception:
        log.exception("AI visibility run %s failed", run_id)
        async with db.unit_of_work() as session:
            return await give_up(session, tenant, run, "internal", INTERNAL)


async def context(session: AsyncSession, tenant_id: uuid.UUID) -> Context:
    settings = runtime.current().settings
    return Context(
        routes=await routing.routes(session, tenant_id, settings),
        lookout=await routing.lookout(session, tenant_id),
    )


async def _work(db: Database, tenant_id: uuid.UUID, run_id: uuid.UUID) -> str:
    async with db.unit_of_work() as session:
        run = await sync_runs.mark_running(session, tenant_id, run_id)
        if run.status != "running":
            return "settled"
        found = await context(session, tenant_id)
        pending = await repository.of_run(session, tenant_id, run_id, ["pending"])
        prompts = await repository.prompts_by_ids(
            session, tenant_id, [row.prompt_id for row in pending]
        )
        work = [
            (row.id, row.engine, question(prompts[row.prompt_id].text, row, found))
            for row in pending
            if row.prompt_id in prompts
        ]
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(row_id: uuid.UUID, engine: str, asked: engines.Question) -> None:
        async with limit:
            route = found.routes.get(engine)
            answer: engines.Answer | engines.Failed
            if route is None:
                answer = engines.Failed(
                    "not_connected", f"No answer-engine provider is connected for {engine}."
                )
            else:
                # No transaction is held while the engine answers, nor while the model scores.
                answer = await engines.ask(runtime.current().settings, route, asked)
            scored = None
            if isinstance(answer, engines.Answer):
                sentences = extraction.mention_sentences(answer.text, found.lookout.brands)
                scored = await sentiment.by_model(runtime.current().model, answer.text, sentences)
            await store(
                db,
                tenant_id,
                run_id,
                row_id,
                answer,
                found,
                provider=route.provider if route else None,
                scored=scored,
            )

    await asyncio.gather(*(one(*item) for item in work))
    async with db.unit_of_work() as session:
        return await settle(session, tenant_id, run_id)


def question(prompt: str, row: SeoAiAnswer, found: Context) -> engines.Question:
    return engines.Question(
        prompt=prompt,
        country=row.country,
        language=None,
        sample=row.sample,
        brand=found.lookout.brand_name,
        own_domain=found.lookout.own_domain,
        competitors=found.lookout.competitors,
    )


async def store(
    db: Database,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    row_id: uuid.UUID,
    answer: engines.Answer | engines.Failed,
    found: Context,
    *,
    provider: str | None = None,
    scored: sentiment.Scored | None = None,
) -> None:
    """One sample stored in its own transaction: answered with its reading, or failed.
    `provider`: who answered, when it is another than the run was opened with (a connection
    changed before the run was resumed); `scored`: the model's sentiment of its sentences (the
    lexicon's without it)."""
    async with db.unit_of_work() as session:
        row = await repository.get_answer(session, tenant_id, row_id, for_update=True)
        if row is None or row.status != "pending":
            return
        now = utcnow()
        if provider is not None:
            row.provider = provider
        if isinstance(answer, engines.Failed):
            row.status = "failed"
            row.error = {"code": answer.code, "message": answer.message}
        else:
            reading = extraction.read(
                answer,
                found.lookout.brands,
                found.lookout.owners,
                scored.scores if scored else None,
            )
            row.status = "answered"
            row.text = answer.text
            row.model = answer.model
            row.search_queries = answer.search_queries
            row.mentions = reading.mentions
            row.citations = reading.citations
            row.brand_mentioned = reading.brand_mentioned
            row.brand_position = reading.brand_position
            row.sentiment = reading.sentiment
            row.sentiment_method = scored.method if scored else extraction.LEXICON
            if scored is not None:
                row.sentiment_input_tokens = scored.input_tokens
                row.sentiment_output_tokens = scored.output_tokens
            row.cited = reading.cited
            row.answered_at = now
            row.answer_date = now.date()
        row.updated_at = now
        await session.flush()
        await _progress(session, tenant_id, run_id, answered=row.status == "answered")


async def _progress(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, *, answered: bool = False
) -> None:
    counts = await repository.run_counts(session, tenant_id, run_id)
    await sync_runs.record_item_progress(
        session, tenant_id, run_id, counts, rows=1 if answered else 0
    )


async def settle(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> str:
    """The run's credits settled (one per answer received committed, the rest given back), the
    prompts' latest readings written, then the run ended by what became of its samples."""
    await _progress(session, tenant_id, run_id)
    run = await sync_runs.require(session, tenant_id, run_id, for_update=True)
    counts = await repository.run_counts(session, tenant_id, run_id)
    reservation = run.params.get("reservation_id")
    if run.status in ("queued", "running") and reservation:
        used = min(counts.get("answered", 0), run.credits_reserved)
        try:
            if used:
                tokens_in, tokens_out = await repository.sentiment_tokens(
                    session, tenant_id, run_id
                )
                model = runtime.current().model.model if tokens_in or tokens_out else None
                await credits.commit(
                    session,
                    tenant_id,
                    uuid.UUID(reservation),
                    used,
                    description=f"seo.runAiVisibility: {used} answers (run {run_id})",
                    # The language model's tokens for the answers' sentiment, in AI usage.
                    spent=credits.Spent(
                        input_tokens=tokens_in,
                        output_tokens=tokens_out,
                        model=model,
                    ),
                )
            else:
                await credits.release(session, tenant_id, uuid.UUID(reservation))
            run.credits_used = used
        except PlatformError:
            # The hold expired or was settled meanwhile: nothing more is charged.
            log.exception("AI visibility run %s could not settle its credits", run_id)
    if run.status in ("queued", "running"):
        await latest.write(session, tenant_id, run_id)
    failed = counts.get("failed", 0)
    engines_failed = await repository.failed_engines(session, tenant_id, run_id) if failed else []
    return await sync_runs.finish_by_items(
        session,
        tenant_id,
        run_id,
        completed=counts.get("answered", 0),
        failed=failed,
        failures=lambda: repository.run_failures(session, tenant_id, run_id, 100),
        code="ai_answers_failed",
        noun=f"answers (engines failing: {', '.join(engines_failed)})",
    )


async def give_up(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, code: str, message: str
) -> str:
    """The run's pending samples failed with {code, message}, then the run settled."""
    for row in await repository.of_run(session, tenant_id, run_id, ["pending"]):
        row.status = "failed"
        row.error = {"code": code, "message": message}
    await session.flush()
    return await settle(session, tenant_id, run_id)


@durable.reconcile_source("seo.ai_visibility")
async def unfinished_runs(session: AsyncSession) -> list[durable.Unfinished]:
    """Runs with answers still pending: restarted when their workflow is missing, given up when
    it ended in error or none of their answers moved for STALL_SECONDS."""
    return sync_runs.unfinished_item_runs(
        await repository.open_runs(session),
        workflow=run_ai_visibility,
        workflow_id=workflow_id,
        queue=QUEUE,
        give_up=give_up,
        stall_seconds=STALL_SECONDS,
        stalled="The run made no progress for 2 hours and was stopped.",
        work="The run's background work",
    )
