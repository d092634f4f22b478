"""The article pipeline: retrieve -> outline -> write -> optimize -> score -> finalize.

A DBOS workflow whose every model call is a checkpointed step (each section is its own step), so
a crash resumes after the last finished call and never pays for it twice. The run's
`{status, step, percent}` is written as each step begins (and announced on the run's event
stream once written: events.py). No transaction is open while a model is called.

Each step first checks that the run still owns its draft: a deleted draft or a cancelled run
(generation.cancelRun) stops the pipeline at that step boundary. A failure of any step fails
the run visibly: the run is `failed` with `{code, message, retryable}`, the draft `rejected`
with the reason, the hold released and `generation.run_failed` written to the outbox. Whichever
way it ends, the workflow's last step appends the run's terminal event (`generation.announce`).

Two kinds of run: `blog` writes an article; `regenerate` writes a draft again, whole (as `blog`,
keeping its title when asked) or only the chosen sections (retrieve -> retrieve each section ->
write each -> score -> finalize; the rest of the article, its title, excerpt and SEO metadata
kept).

Retrieval per section (grounding.py has the decisions): `retrieve` finds the passages the article
is planned from (topic and keywords); after the outline, `retrieve_sections` finds each section's
own (its heading and the topic), all in one read-only transaction, both with the search's
relative cut. Both are checkpointed steps, and what is made of them (which part is written from
which passages, the one numbered list of sources) is computed in the workflow from their outputs,
so a recovered run, which replays them, writes the same article.

Reuse (generation.retryRun): every model call's output carries the fingerprint of its inputs
(`input`: the step, prompt version, model and everything the call was given). A retry reads the
outputs of the run it retries from DBOS's own checkpoints (`generation.reusable`, reading
`DBOS.list_workflow_steps` of that run's workflow) and, for a call whose fingerprint is among
them, takes that output instead of calling the model. Retrieval runs again (it costs nothing):
when the knowledge changed, the sources change, and with them every later call's inputs (a
part's sources, with their numbers in the article's one list, are in its fingerprint; the
scores and queries, which only the provenance shows, are not: the model never sees them).

Pricing: the calls a run makes are recorded on it as they finish (`usage`, by fingerprint, so a
step run again after a crash counts once). An article costs 1 credit per started 1,000 model
tokens (prompts and answers of every call); a regeneration 1 credit per started
`generation_regenerate_words_per_credit` words it wrote; at least 1 and never more than the hold,
committed when the draft is written. A cancelled run is charged the calls it had made (0: the
hold released); a failed one nothing. A reused output is paid once: not again when the run it
came from was charged for it, else by the run that reuses it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any, TypedDict

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.ai.base import (
    Completion,
    CompletionRequest,
    ProviderError,
    ProviderUnavailable,
    Source,
)
from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.documents import index as search
from contentplatform.documents import service as documents
from contentplatform.drafts import html, seo
from contentplatform.drafts import service as drafts
from contentplatform.events import service as outbox  # `events` is the run's stream (events.py)
from contentplatform.generation import (
    events,
    grounding,
    passages,
    pipeline,
    prompts,
    repository,
    watchers,
)
from contentplatform.generation.answers import (
    InvalidModelOutput,
    Outline,
    SeoAnswer,
    excerpt_from,
    seo_meta_from,
    unfenced,
)
from contentplatform.generation.article import (
    SOURCES_ANCHOR,
    Article,
    Part,
    Section,
    assemble,
    plan_parts,
    refs_for,
    rewrite_sections,
    sections_of,
    sentences_of,
    words_in,
)
from contentplatform.generation.grounding import Found, Retrieval
from contentplatform.generation.models import GenerationRun
from contentplatform.generation.prompts import Brief
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import Conflict
from contentplatform.media import schemas as media_schemas
from contentplatform.media import service as media
from contentplatform.settings import rules as content_rules
from contentplatform.settings import service as settings
from contentplatform.workflows import catalog as wf_catalog

log = logging.getLogger(__name__)

SEARCH_LIMIT = 10
PRIMARY_LIMIT = 3
MAX_SOURCES = 16
# Chunks searched for each section: room for the passages it takes (at most
# article.SECTION_SOURCES) when the best ones went to earlier sections.
SECTION_SEARCH_LIMIT = 8
OFFLINE_NOTE = (
    "Written by the offline extractive writer: its sentences are taken from your documents, "
    "not generated by a language model."
)
STALLED = "Generation stalled and was stopped."
# A run at a review gate reads its draft at least this often (and keeps its hold alive).
GATE_WAKE_SECONDS = 600.0
GATE_TOPIC = "review"
# Runs wait here and at most this many run at once in each worker process, so a burst of runs
# (a scheduler tick after downtime, a bulk trigger) queues instead of flooding the model.
WORKER_CONCURRENCY = 8
QUEUE = durable.declare_queue("generation", worker_concurrency=WORKER_CONCURRENCY)
UNFINISHED = repository.UNFINISHED


def charge_of(run: GenerationRun) -> int:
    """Credits for the model calls recorded on the run, by the credits' price table (0 for
    none; see the module)."""
    calls = [call for call in (run.usage or {}).values() if isinstance(call, dict)]
    if run.kind == "regenerate":
        return credits.words_charge(sum(int(call.get("words", 0)) for call in calls))
    return credits.tokens_charge(sum(tokens_of(run)))


def spent_of(run: GenerationRun) -> credits.Spent:
    """What the run's debit records: its tokens, and the job it ran for, else its draft."""
    input_tokens, output_tokens = tokens_of(run)
    resource = ("job", run.job_id) if run.job_id is not None else ("draft", run.draft_id)
    return credits.Spent(input_tokens, output_tokens, resource[0], str(resource[1]))


def tokens_of(run: GenerationRun) -> list[int]:
    """[input tokens, output tokens] of the model calls recorded on the run."""
    calls = [call for call in (run.usage or {}).values() if isinstance(call, dict)]
    return [
        sum(int(call.get("input_tokens", 0)) for call in calls),
        sum(int(call.get("output_tokens", 0)) for call in calls),
    ]


def workflow_id(run_id: uuid.UUID) -> str:
    return f"generation:{run_id}"


class Superseded(Exception):
    """The draft was deleted or left `generating`, or the run was cancelled."""


class NoSources(Exception):
    """Nothing in the knowledge base grounds this topic."""


class HoldExpired(Exception):
    """The credits held for the run are no longer held (it outlived its reservation)."""


class GateRejected(Exception):
    """The draft was rejected at a review gate (or the gate's time ran out)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ClaimsUnsupported(Exception):
    """A fact check set to fail found claims their sources do not support."""


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


def fingerprint(step: str, *inputs: Any) -> str:
    """The fingerprint of a model call: its step, the prompt version, the model, its inputs."""
    model = runtime.current().model
    text = json.dumps(
        [step, prompts.PROMPT_VERSION, model.provider, model.model, *inputs],
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode()).hexdigest()


# --- the workflow -------------------------------------------------------------------------------


@DBOS.workflow(name="generation.blog")
async def generate_blog(tenant_id: str, run_id: str) -> str:
    ids = (uuid.UUID(tenant_id), uuid.UUID(run_id))
    try:
        start = await begin(*ids)
        reuse = await reusable(ids[0], start["retry_of"]) if start["retry_of"] else {}
        if start["sections"]:
            await _rewrite(ids, start, reuse)
        else:
            await _write(ids, start, reuse)
        outcome = "succeeded"
    except Superseded as stop:
        await abandon(*ids, str(stop) or "The draft is no longer being generated.")
        outcome = "cancelled"
    except Exception as error:
        await fail(*ids, error_of(error))
        outcome = "failed"
    try:
        await announce(*ids)
    except Exception:
        # The run has ended either way; whoever opens its stream next appends its end.
        log.warning("could not announce the end of run %s", run_id, exc_info=True)
    return outcome


Ids = tuple[uuid.UUID, uuid.UUID]


async def _write(ids: Ids, start: Start, reuse: dict[str, Reused]) -> None:
    """A whole article, by the run's definition: research, outline, the write (each part), then
    the steps after it in their order (optimize, internal links, fact check, images, review
    gates), then score and finalize. Images placed before the write choose from the outline."""
    brief = start["brief"]
    plan = _plan(start)
    research = _first(plan, "research") or catalog_step("research")
    topic = await retrieve(*ids, brief, research["config"], research["key"])
    outline_step = _first(plan, "outline")
    if outline_step is None:
        await finish_without_article(*ids)
        return
    brief = {**brief, **_shape(outline_step, _first(plan, "write"))}  # type: ignore[typeddict-item]
    given = [asdict(s) for s in grounding.outline_sources(topic)]
    key = fingerprint("outline", brief, given)
    planned = await make_outline(*ids, brief, given, key, reuse.get(key), outline_step["key"])
    outline = _bounded(planned["outline"], outline_step["config"])
    title = start["title"] or outline["title"]
    parts = plan_parts(outline)
    about = " ".join([title, *(p.heading or "" for p in parts), *brief["keywords"]])
    write_step = _first(plan, "write")
    order = [s["key"] for s in plan]
    for step in plan:
        if (
            step["type"] == "images"
            and write_step
            and order.index(step["key"]) < order.index(write_step["key"])
        ):
            await choose_images(*ids, step["config"], about, step["key"], early=True)
    if write_step is None:
        await finish_without_article(*ids)
        return
    headings = [part.heading or "" for part in parts if part.kind == "section"]
    grounded = grounding.ground(topic, parts, await retrieve_sections(*ids, brief, headings))
    written: list[str] = []
    for index, part in enumerate(parts):
        result = await _write_part(
            ids,
            reuse,
            {**brief, "used_sentences": [*start["avoid"], *sentences_of(written)]},
            title,
            part,
            grounded.given(index),
            index,
            len(parts),
            [p.heading for p in parts[:index] if p.heading],
            step_key=write_step["key"],
        )
        written.append(result["text"])
    article = assemble(title, parts, written, grounded.sources, grounded.grounds)
    made = Made(article=article.model_dump(mode="json"), seo_meta=None, excerpt=None, more={})
    sources = {source.ref: source.text for source in grounded.sources}
    for step in plan[order.index(write_step["key"]) + 1 :]:
        made = await _after_write(
            ids, start, reuse, brief, step, made, sources, about, planned["model"]
        )
    written_article = Article.model_validate(made["article"])
    seo_meta, excerpt = _metadata(brief, written_article, made)
    scored = await score(*ids, written_article.title, written_article.content, seo_meta)
    await finalize(
        *ids,
        made["article"],
        seo_meta,
        excerpt,
        scored,
        planned["model"],
        {**_in_voice(brief, written_article), **made["more"]},
    )


class Made(TypedDict):
    """The article as the steps after the write leave it."""

    article: dict[str, Any]
    seo_meta: dict[str, Any] | None
    excerpt: str | None
    # Added to the draft's provenance (the fact check's findings, the links added, the gates).
    more: dict[str, Any]


async def _after_write(
    ids: Ids,
    start: Start,
    reuse: dict[str, Reused],
    brief: Brief,
    step: dict[str, Any],
    made: Made,
    sources: dict[int, str],
    about: str,
    model: dict[str, str],
) -> Made:
    """One step after the write, on the article as the steps before it left it."""
    article = Article.model_validate(made["article"])
    config, step_key = step["config"], step["key"]
    if step["type"] == "optimize":
        wanted: Brief = {**brief, "keywords": _keywords(brief["keywords"], config)}
        key = fingerprint("optimize", wanted, article.title, article.content)
        optimized = await optimize(
            *ids, wanted, article.title, article.content, key, reuse.get(key), step_key
        )
        return {**made, "seo_meta": optimized["seo_meta"], "excerpt": optimized["excerpt"]}
    if step["type"] == "internal_links":
        linked = await link_internally(*ids, article.content, about, config, step_key)
        more = {**made["more"], "internal_links": linked["links"]}
        return {**made, "article": {**made["article"], "content": linked["content"]}, "more": more}
    if step["type"] == "fact_check":
        citations = [c.model_dump(mode="json") for c in article.citations]
        found = await check_facts(*ids, citations, sources, config, step_key)
        return {**made, "more": {**made["more"], "fact_check": found}}
    if step["type"] == "images":
        await choose_images(*ids, config, about, step_key)
        return made
    if step["type"] == "review_gate":
        return await _review_gate(ids, start, brief, step, made, model)
    return made


async def _review_gate(
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
    seo_meta, excerpt = _metadata(brief, article, made)
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


def _plan(start: Start) -> list[dict[str, Any]]:
    """The enabled steps the run follows, up to a test run's `stopAfterStep`."""
    plan = [step for step in start["steps"] if step.get("enabled", True)]
    stop = (start["test"] or {}).get("stop_after")
    keys = [step["key"] for step in plan]
    return plan[: keys.index(stop) + 1] if stop in keys else plan


def _first(plan: Sequence[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    return next((step for step in plan if step["type"] == type_), None)


def catalog_step(type_: str) -> dict[str, Any]:
    """A step of `type_` at its defaults, from the built-in definition."""
    return next(s for s in wf_catalog.builtin_default()["steps"] if s["type"] == type_)


def _shape(outline_step: dict[str, Any], write_step: dict[str, Any] | None) -> dict[str, Any]:
    """What the outline and write configs ask of the prompts, when it is not the built-in
    pipeline's (so its runs' prompts, and their fingerprints, stay as they were)."""
    builtin = {**catalog_step("outline")["config"], **catalog_step("write")["config"]}
    given = {**outline_step["config"], **(write_step or {}).get("config", {})}
    shape = {name: value for name, value in given.items() if builtin.get(name) != value}
    return {"shape": shape} if shape else {}


def _bounded(outline: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The outline held to the step's config: at most maxSections sections, and no key
    takeaways when they are not wanted (the conclusion then has no points)."""
    sections = outline["sections"][: int(config.get("maxSections") or prompts.MAX_SECTIONS)]
    conclusion = outline["conclusion"]
    if config.get("keyTakeaways") is False:
        conclusion = {**conclusion, "points": []}
    return {**outline, "sections": sections, "conclusion": conclusion}


def _keywords(keywords: list[str], config: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys([*keywords, *(config.get("targetKeywords") or [])]))[:20]


def _metadata(brief: Brief, article: Article, made: Made) -> tuple[dict[str, Any], str]:
    """The SEO metadata and excerpt: the optimize step's, else made from the article itself."""
    if made["seo_meta"] is not None:
        return made["seo_meta"], made["excerpt"] or ""
    first = html.first_paragraph(article.content)
    meta = seo_meta_from(SeoAnswer(), brief, title=article.title, first_paragraph=first)
    return meta.model_dump(mode="json"), excerpt_from(SeoAnswer(), first)


async def _write_part(
    ids: Ids,
    reuse: dict[str, Reused],
    brief: Brief,
    title: str,
    part: Part,
    sources: Sequence[Source],
    index: int,
    count: int,
    previous_headings: list[str],
    *,
    progress: tuple[int, int] | None = None,
    step_key: str = "write",
) -> dict[str, Any]:
    """`write_part`, with the output of the retried run's call of the same inputs if any."""
    given = [asdict(s) for s in sources]
    shape = part.model_dump(mode="json")
    key = fingerprint("write", brief, title, shape, given, index, count, previous_headings)
    done, total = progress or (index, count)
    return await write_part(
        *ids,
        brief,
        title,
        shape,
        given,
        index,
        count,
        previous_headings,
        key,
        reuse.get(key),
        done=done,
        of=total,
        step_key=step_key,
    )


async def _rewrite(ids: Ids, start: Start, reuse: dict[str, Reused]) -> None:
    """Some sections of a draft: retrieve for them, write each again, score, finalize; the rest
    of the draft (its title, other sections, excerpt, SEO metadata) as it was."""
    brief, title, content = start["brief"], start["title"], start["content"]
    assert title is not None and content is not None and start["sections"] is not None
    everything = sections_of(content)
    chosen = [section for section in everything if section.anchor in start["sections"]]
    topic = await retrieve(*ids, brief)
    planned_from = grounding.outline_sources(topic)
    parts = [
        Part(
            kind="section",
            heading=section.heading,
            sources=refs_for(section.heading, planned_from),
            points=[],
        )
        for section in chosen
    ]
    found = await retrieve_sections(*ids, brief, [section.heading for section in chosen])
    grounded = grounding.ground(
        topic, parts, found, cited_elsewhere=_cited_elsewhere(start["provenance"], chosen)
    )
    rewrites: list[tuple[Section, str]] = []
    model: dict[str, str] | None = None
    for index, (section, part) in enumerate(zip(chosen, parts, strict=True)):
        place = everything.index(section)
        result = await _write_part(
            ids,
            reuse,
            {**brief, "used_sentences": [*start["avoid"], *sentences_of([t for _, t in rewrites])]},
            title,
            part,
            grounded.given(index),
            place + 1,  # after the introduction
            len(everything) + 1,
            [s.heading for s in everything[:place]],
            progress=(index, len(chosen)),
        )
        rewrites.append((section, result["text"]))
        model = model or result["model"]
    assert model is not None
    article = rewrite_sections(
        title,
        content,
        start["provenance"] or {},
        rewrites,
        grounded.sources,
        grounded.grounds,
    )
    seo_meta = start["seo_meta"] or {}
    scored = await score(*ids, article.title, article.content, seo_meta)
    # Priced by the words the sections now hold: a sentence the rest of the draft had was
    # dropped (article.py), and is not paid for.
    now = {section.anchor: section for section in sections_of(article.content)}
    delivered = sum(
        html.word_count(article.content[body.body_start : body.end])
        for section in chosen
        if (body := now.get(section.anchor)) is not None
    )
    await finalize(
        *ids,
        article.model_dump(mode="json"),
        seo_meta,
        start["excerpt"] or "",
        scored,
        model,
        {
            "regenerated_sections": [section.anchor for section in chosen],
            **_in_voice(brief, article),
        },
        delivered,
    )


def _in_voice(brief: Brief, article: Article) -> dict[str, Any]:
    """What the provenance says of the voice: the brand voice version the article was written
    with, and which of the voice's banned terms it still uses (a model may slip; the offline
    writer, which copies the documents' sentences, cannot follow a voice at all)."""
    guidance = brief.get("guidance") or {}
    found: dict[str, Any] = {"brand_voice_version": int(guidance.get("version") or 0)}
    banned = ((guidance.get("voice") or {}).get("vocabulary") or {}).get("banned") or []
    if banned:
        found["banned_terms_found"] = content_rules.banned_terms_in(
            banned, article.title, article.content
        )
    return found


def _cited_elsewhere(provenance: dict[str, Any] | None, chosen: Sequence[Section]) -> set[str]:
    """The chunks the draft's other sections cite, by its provenance (a regenerated section
    prefers passages they do not)."""
    rewritten = {section.heading for section in chosen}
    sections = (provenance or {}).get("sections")
    return {
        str(chunk_id)
        for section in (sections if isinstance(sections, list) else [])
        if isinstance(section, dict) and section.get("heading") not in rewritten
        for chunk_id in section.get("chunk_ids") or []
    }


def error_of(error: Exception) -> dict[str, Any]:
    if isinstance(error, GateRejected):
        return {"code": error.code, "message": str(error), "retryable": False}
    if isinstance(error, ClaimsUnsupported):
        return {"code": "UNSUPPORTED_CLAIMS", "message": str(error), "retryable": True}
    if isinstance(error, NoSources):
        return {"code": "NO_SOURCES", "message": str(error), "retryable": False}
    if isinstance(error, ProviderUnavailable):
        message = f"The language model is unavailable: {error.message}"
        return {"code": "PROVIDER_UNAVAILABLE", "message": message, "retryable": True}
    if isinstance(error, ProviderError):
        message = f"The language model refused the request: {error.message}"
        return {"code": "PROVIDER_ERROR", "message": message, "retryable": False}
    if isinstance(error, InvalidModelOutput):
        return {"code": "MODEL_OUTPUT_INVALID", "message": str(error), "retryable": True}
    if isinstance(error, HoldExpired):
        return {"code": "CREDITS_EXPIRED", "message": str(error), "retryable": True}
    log.exception("generation failed", exc_info=error)
    message = (
        f"Generation failed unexpectedly ({type(error).__name__}); retry it or contact support."
    )
    return {"code": "INTERNAL_ERROR", "message": message, "retryable": True}


# --- steps --------------------------------------------------------------------------------------


async def _progress(
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
    if await _owned_draft(session, run) is None:
        raise Superseded("The draft was deleted or is no longer being generated.")
    if run.status == "queued":
        run.status = "running"
        run.started_at = utcnow()
    run.step = step
    run.percent = max(run.percent, percent)
    if key is not None and run.steps:
        if key.startswith("@"):  # an appended step, by its type (its key may differ)
            key = pipeline.key_of(run.steps, key[1:]) or key
        run.steps = pipeline.begin(run.steps, key, utcnow())
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


async def _owned_draft(session: AsyncSession, run: GenerationRun) -> Any:
    """The run's draft, locked, while the run may still write it: generating under the run, or,
    once the run opened a review gate, in review or approved and last written by it."""
    draft = await drafts.generating(session, run.tenant_id, run.draft_id, run.id)
    if draft is not None or not _gated(run):
        return draft
    draft = await drafts.of_run(session, run.tenant_id, run.draft_id, run.id)
    return draft if draft is not None and draft.status in ("reviewing", "approved") else None


def _waiting_at(run: GenerationRun, step_key: str) -> bool:
    return run.status == "waiting_review" and any(
        step["key"] == step_key and step["status"] == "waiting" for step in run.steps or ()
    )


def _gated(run: GenerationRun) -> bool:
    return any(
        step["type"] == "review_gate" and step["status"] in ("waiting", "succeeded")
        for step in run.steps or ()
    )


async def _at(
    tenant_id: uuid.UUID, run_id: uuid.UUID, step: str, percent: int, key: str | None = None
) -> None:
    async with runtime.current().db.unit_of_work() as session:
        await _progress(session, tenant_id, run_id, step, percent, key)


async def _complete(request: CompletionRequest) -> Completion:
    """One model call, outside any transaction."""
    return await runtime.current().model.complete(request)


def _usage(completion: Completion) -> list[int]:
    return [completion.usage.input_tokens, completion.usage.output_tokens]


async def _spent(
    tenant_id: uuid.UUID, run_id: uuid.UUID, key: str, step: str, usage: list[int], words: int
) -> None:
    """Record a model call on the run (under its fingerprint: once, however often the step
    runs), while the run is still going: a cancelled run was charged what it had made."""
    async with runtime.current().db.unit_of_work() as session:
        run = await repository.get(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in UNFINISHED:
            return
        call = {
            "step": step,
            "step_key": pipeline.running_key(run.steps),
            "model": runtime.current().model.model,
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "words": words,
        }
        run.usage = {**(run.usage or {}), key: call}


async def _reused(
    tenant_id: uuid.UUID, run_id: uuid.UUID, key: str, step: str, reused: Reused
) -> dict[str, Any]:
    """The output of the retried run's call with the same inputs, recorded on this run when
    that run did not pay for it."""
    output = reused["output"]
    if not reused["paid"]:
        usage = output.get("usage") or [0, 0]
        await _spent(tenant_id, run_id, key, step, usage, int(output.get("words", 0)))
    return output


@DBOS.step(name="generation.begin")
async def begin(tenant_id: uuid.UUID, run_id: uuid.UUID) -> Start:
    async with runtime.current().db.unit_of_work() as session:
        run = await _progress(session, tenant_id, run_id, "retrieve", 2)
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
        assert draft is not None  # _progress checked it, under the same lock
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


def keeps_draft(run: GenerationRun) -> bool:
    """Whether the draft the run writes is kept: always, but for a test run without
    createDraft, whose draft is deleted however it ends."""
    return run.trigger != "test" or bool(run.request.get("createDraft"))


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


@DBOS.step(name="generation.retrieve")
async def retrieve(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    brief: Brief,
    config: dict[str, Any] | None = None,
    step_key: str | None = None,
) -> Retrieval:
    """The passages the article is planned from: the best matches of topic and keywords (above
    the search's relative cut), in the chosen documents only when given, plus the best of the
    primary knowledge document. The research step's config: at most `maxSources`, none scoring
    below `minRelevance` of the best, pages from the web only with `useWebsitePages`."""
    keywords = brief["keywords"]
    query = " ".join([brief["topic"], *keywords])
    chosen = [uuid.UUID(i) for i in brief["document_ids"]] if brief["document_ids"] else None
    config = config or {}
    await _at(tenant_id, run_id, "retrieve", 5, step_key)
    # Read-only, in a transaction of its own: no lock is held while searching.
    async with runtime.current().db.unit_of_work() as session:
        hits = await search.search_chunks(
            session, tenant_id, query, document_ids=chosen, limit=SEARCH_LIMIT
        )
        found = passages.relevant(hits, brief["topic"], keywords)
        if not found and chosen:
            found = passages.every(await search.leading_chunks(session, tenant_id, chosen))
        primary = await documents.primary_knowledge_id(session, tenant_id)
        if primary is not None:
            best = await search.search_chunks(
                session, tenant_id, query, document_ids=[primary], limit=PRIMARY_LIMIT
            )
            # The primary document's own passages come after the best matches, within the cap.
            found = found[: MAX_SOURCES - PRIMARY_LIMIT] + passages.relevant(
                best, brief["topic"], keywords, at_least_one=False
            )
        urls = await _public_urls(session, tenant_id, found)
    if config.get("useWebsitePages") is False:
        found = [p for p in found if p.hit.document_id not in urls]
    if found and config.get("minRelevance"):
        top = max(p.hit.score for p in found)
        found = [p for p in found if p.hit.score >= top * float(config["minRelevance"])]
    if not found:
        raise NoSources(
            "None of the organization's ready documents matches this topic. Ingest documents "
            "about it, or choose documentIds to write from."
        )
    kept = _found([(p, False) for p in found], urls)[: int(config.get("maxSources") or MAX_SOURCES)]
    return {"query": query, "passages": kept}


@DBOS.step(name="generation.retrieve_sections")
async def retrieve_sections(
    tenant_id: uuid.UUID, run_id: uuid.UUID, brief: Brief, headings: list[str]
) -> list[Retrieval]:
    """Each section's passages: the best matches of its heading and the topic (above the
    search's relative cut), in the chosen documents and the primary one when documents are
    chosen; only passages holding a word of the heading (passages.about; grounding.py)."""
    topic = brief["topic"]
    chosen = [uuid.UUID(i) for i in brief["document_ids"]] if brief["document_ids"] else None
    await _at(tenant_id, run_id, "outline", 12)
    found: list[tuple[str, list[tuple[passages.Passage, bool]]]] = []
    # One read-only transaction for every section's search.
    async with runtime.current().db.unit_of_work() as session:
        scope = chosen
        if chosen is not None:
            primary = await documents.primary_knowledge_id(session, tenant_id)
            scope = [*chosen, primary] if primary and primary not in chosen else chosen
        for heading in headings:
            query = grounding.section_query(heading, topic)
            hits = await search.search_chunks(
                session, tenant_id, query, document_ids=scope, limit=SECTION_SEARCH_LIMIT
            )
            found.append((query, passages.about(hits, heading, topic)))
        urls = await _public_urls(session, tenant_id, [p for _, kept in found for p, _ in kept])
    return [{"query": query, "passages": _found(kept, urls)} for query, kept in found]


async def _public_urls(
    session: AsyncSession, tenant_id: uuid.UUID, found: Sequence[passages.Passage]
) -> dict[uuid.UUID, str]:
    """Public pages may be cited as links; the tenant's own files are named only in the
    provenance (generation/article.py)."""
    ids = list(dict.fromkeys(passage.hit.document_id for passage in found))
    return await documents.public_urls(session, tenant_id, ids) if ids else {}


def _found(
    found: Sequence[tuple[passages.Passage, bool]], urls: dict[uuid.UUID, str]
) -> list[Found]:
    """The passages as a step's output, each once (by its words), best first; each found with
    whether it is under a heading like its section's."""
    kept: list[Found] = []
    seen: set[str] = set()
    for passage, under_heading in found:
        key = grounding.passage_key(passage.text)
        if key in seen:
            continue
        seen.add(key)
        kept.append(
            {
                "chunk_id": str(passage.hit.chunk_id),
                "document_id": str(passage.hit.document_id),
                "document_name": passage.hit.document_name,
                "heading": passage.heading,
                "text": passage.text,
                "url": urls.get(passage.hit.document_id),
                "score": passage.hit.score,
                "under_heading": under_heading,
            }
        )
    return kept


@DBOS.step(name="generation.outline")
async def make_outline(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    brief: Brief,
    sources: list[dict[str, Any]],
    key: str,
    reused: Reused | None = None,
    step_key: str | None = None,
) -> dict[str, Any]:
    await _at(tenant_id, run_id, "outline", 10, step_key)
    if reused is not None:
        return await _reused(tenant_id, run_id, key, "outline", reused)
    completion = await _complete(prompts.outline(brief, [Source(**s) for s in sources]))
    await _spent(tenant_id, run_id, key, "outline", _usage(completion), 0)
    outline = Outline.read(completion.text, topic=brief["topic"], sources=len(sources))
    return {
        "outline": outline.model_dump(mode="json"),
        "usage": _usage(completion),
        "model": _model_of(completion),
        "input": key,
    }


def _model_of(completion: Completion) -> dict[str, str]:
    return {"provider": runtime.current().model.provider, "model": completion.model}


@DBOS.step(name="generation.write")
async def write_part(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    brief: Brief,
    title: str,
    part: dict[str, Any],
    sources: list[dict[str, Any]],
    index: int,
    count: int,
    previous_headings: list[str],
    key: str,
    reused: Reused | None = None,
    *,
    done: int = 0,
    of: int = 1,
    step_key: str | None = None,
) -> dict[str, Any]:
    """One part of the article (`index` of `count`), the `done`th of the `of` parts this run
    writes (the progress moves by them)."""
    await _at(tenant_id, run_id, "write", 15 + (60 * done) // of, step_key)
    if reused is not None:
        return await _reused(tenant_id, run_id, key, "write", reused)
    request = prompts.section(
        brief,
        title=title,
        part=Part.model_validate(part),
        sources=[Source(**s) for s in sources],
        index=index,
        count=count,
        previous_headings=previous_headings,
    )
    completion = await _complete(request)
    text = unfenced(completion.text)
    words = words_in(text)
    await _spent(tenant_id, run_id, key, "write", _usage(completion), words)
    if not text:
        raise InvalidModelOutput("The model wrote an empty section.")
    return {
        "text": text,
        "usage": _usage(completion),
        "model": _model_of(completion),
        "words": words,
        "input": key,
    }


@DBOS.step(name="generation.optimize")
async def optimize(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    brief: Brief,
    title: str,
    content: str,
    key: str,
    reused: Reused | None = None,
    step_key: str | None = None,
) -> dict[str, Any]:
    await _at(tenant_id, run_id, "optimize", 80, step_key)
    if reused is not None:
        return await _reused(tenant_id, run_id, key, "optimize", reused)
    first = html.first_paragraph(content)
    request = prompts.seo(brief, title=title, text=html.plain_text(content), first_paragraph=first)
    completion = await _complete(request)
    await _spent(tenant_id, run_id, key, "optimize", _usage(completion), 0)
    answer = SeoAnswer.read(completion.text)
    seo_meta = seo_meta_from(answer, brief, title=title, first_paragraph=first)
    return {
        "seo_meta": seo_meta.model_dump(mode="json"),
        "excerpt": excerpt_from(answer, first),
        "usage": _usage(completion),
        "model": _model_of(completion),
        "input": key,
    }


@DBOS.step(name="generation.score")
async def score(
    tenant_id: uuid.UUID, run_id: uuid.UUID, title: str, content: str, seo_meta: dict[str, Any]
) -> dict[str, Any]:
    await _at(tenant_id, run_id, "score", 90, "@score")
    return seo.score(title, html.sanitize(content), seo_meta).as_json()


@DBOS.step(name="generation.finalize")
async def finalize(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    article: dict[str, Any],
    seo_meta: dict[str, Any],
    excerpt: str,
    scored: dict[str, Any],
    model: dict[str, str],
    more: dict[str, Any],
    words: int | None = None,
) -> None:
    """The article becomes the draft's new AI revision, the draft goes to review, and the run's
    calls are charged; `more` is added to the provenance. `words`: the words a regeneration
    delivers, the most it is charged for (its calls may have written more)."""
    current = runtime.current()
    written = Article.model_validate(article)
    async with current.db.unit_of_work() as session:
        run = await _progress(session, tenant_id, run_id, "finalize", 95, "@finalize")
        draft = await _owned_draft(session, run)
        assert draft is not None  # _progress checked it, under the same lock
        provenance = {**_provenance(run, written, model, tokens_of(run), scored), **more}
        if not keeps_draft(run):
            drafts.discard_generated(draft)  # a test run keeps its result on the run only
        elif draft.status == "generating":
            drafts.finish_generation(
                session,
                draft,
                title=written.title,
                content=written.content,
                excerpt=excerpt or None,
                seo_meta=seo_meta,
                provenance=provenance,
                summary=_summary(run, model, more),
            )
        else:  # past a review gate: the approved draft, changed by the steps after it
            drafts.revise_by_pipeline(
                session,
                draft,
                changes={
                    "title": written.title,
                    "content": written.content,
                    "excerpt": excerpt or None,
                    "seo_meta": seo_meta,
                },
                provenance=provenance,
                summary=f"{_summary(run, model, more)}, after its review gate",
            )
        used = {uuid.UUID(source.document_id) for source in written.sources}
        await documents.record_generation_use(session, current.cache, tenant_id, sorted(used))
        charged = None
        if run.reservation_id is not None:
            held = await credits.get_reservation(session, tenant_id, run.reservation_id)
            cost = charge_of(run)
            if words is not None:
                cost = min(cost, credits.words_charge(words))
            charged = min(max(1, cost), held.amount)
            await credits.commit(
                session, tenant_id, run.reservation_id, charged, spent=spent_of(run)
            )
        run.status = "succeeded"
        run.percent = 100
        run.error = None
        run.credits_committed = charged
        run.finished_at = utcnow()
        run.result = {
            "title": written.title,
            "excerpt": excerpt or None,
            "seo_score": scored["total"],
        }
        if run.steps:
            run.steps = pipeline.end(run.steps, "succeeded", run.finished_at)
        await watchers.run_changed(session, run)


def _summary(run: GenerationRun, model: dict[str, str], more: dict[str, Any]) -> str:
    writer = f"the {model['provider']} writer"
    if run.kind != "regenerate":
        return f"Generated by {writer}"
    sections = more.get("regenerated_sections")
    if sections:
        return f"Regenerated {', '.join(sections)} with {writer}"
    return f"Regenerated by {writer}"


def _provenance(
    run: GenerationRun,
    article: Article,
    writer: dict[str, str],
    usage: list[int],
    scored: dict[str, Any],
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "writer": writer["provider"],
        "provider": writer["provider"],
        "model": writer["model"],
        "prompt_version": prompts.PROMPT_VERSION,
        "run_id": str(run.id),
        "generated_at": utcnow().isoformat(),
        "sources": [source.model_dump(mode="json") for source in article.sources],
        "sections": [section.model_dump(mode="json") for section in article.sections],
        "citations": [citation.model_dump(mode="json") for citation in article.citations],
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        "seo_score_at_generation": scored["total"],
    }
    if writer["provider"] == "offline":
        found["note"] = OFFLINE_NOTE
    return found


# --- the definition's own steps ------------------------------------------------------------------


@DBOS.step(name="generation.skip_step")
async def skip_step(tenant_id: uuid.UUID, run_id: uuid.UUID, step_key: str, reason: str) -> None:
    async with runtime.current().db.unit_of_work() as session:
        run = await _progress(session, tenant_id, run_id, "optimize", 0)
        if run.steps:
            run.steps = pipeline.set_step(
                run.steps, step_key, utcnow(), status="skipped", output_summary=reason
            )
        await watchers.run_changed(session, run)


async def _summarize(tenant_id: uuid.UUID, run_id: uuid.UUID, step_key: str, summary: str) -> None:
    """The step's one-line account of what it did (shown by workflows.getRun)."""
    async with runtime.current().db.unit_of_work() as session:
        run = await repository.get(session, tenant_id, run_id, for_update=True)
        if run is not None and run.steps:
            run.steps = pipeline.set_step(run.steps, step_key, output_summary=summary)


@DBOS.step(name="generation.internal_links")
async def link_internally(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    content: str,
    about: str,
    config: dict[str, Any],
    step_key: str,
) -> dict[str, Any]:
    """Links to the organization's own published posts and the web pages it imported as
    knowledge (the website scan's), those whose titles share most words with the article,
    listed in a "Related reading" section before its sources."""
    await _at(tenant_id, run_id, "optimize", 82, step_key)
    wanted = set(config.get("sources") or wf_catalog.LINK_SOURCES)
    async with runtime.current().db.unit_of_work() as session:
        candidates: list[tuple[str, str]] = []
        if "posts" in wanted:
            candidates += await drafts.published_links(session, tenant_id)
        if "site_pages" in wanted:
            candidates += await documents.web_pages(session, tenant_id)
    links = pipeline.choose_links(about, candidates, int(config.get("maxLinks", 3)))
    if links:
        marker = f'<h2 id="{SOURCES_ANCHOR}">'
        content = pipeline.with_related(content, pipeline.related_block(links), marker)
    count = len(links)
    await _summarize(
        tenant_id, run_id, step_key, f"{count} internal link{'s' if count != 1 else ''} added"
    )
    return {"content": content, "links": [{"title": t, "url": u} for t, u in links]}


@DBOS.step(name="generation.fact_check")
async def check_facts(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    citations: list[dict[str, Any]],
    sources: dict[int, str],
    config: dict[str, Any],
    step_key: str,
) -> dict[str, Any]:
    """Each cited claim held against its sources (pipeline.fact_check); unsupported ones are
    recorded in the provenance, or fail the run (`onUnsupported: fail`)."""
    await _at(tenant_id, run_id, "optimize", 84, step_key)
    # A checkpoint's JSON turns the numbers keying `sources` into strings.
    numbered = {int(ref): text for ref, text in sources.items()}
    found = pipeline.fact_check(citations, numbered, float(config.get("minSupport", 0.5)))
    unsupported = len(found["unsupported"])
    summary = f"{found['checked']} claims checked, {unsupported} unsupported"
    await _summarize(tenant_id, run_id, step_key, summary)
    if unsupported and config.get("onUnsupported") == "fail":
        first = found["unsupported"][0]["text"][:200]
        raise ClaimsUnsupported(
            f"The fact check found {unsupported} claim(s) their sources do not support, "
            f'e.g. "{first}".'
        )
    return found


@DBOS.step(name="generation.images")
async def choose_images(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    config: dict[str, Any],
    about: str,
    step_key: str,
    *,
    early: bool = False,
) -> dict[str, Any]:
    """Images from the media library chosen by their titles, alt texts and tags, attached to the
    draft: the featured one (unless the draft has one) and `count` inline. A stock provider's
    photos are a person's choice (Unsplash's terms): that source chooses nothing."""
    # Before the write (from the outline) the run is still outlining.
    stage, percent = ("outline", 14) if early else ("optimize", 86)
    await _at(tenant_id, run_id, stage, percent, step_key)
    chosen: list[str] = []
    if config.get("source", "media_library") == "media_library":
        async with runtime.current().db.unit_of_work() as session:
            run = await _progress(session, tenant_id, run_id, stage, percent)
            candidates = await media.for_automated_selection(session, tenant_id)
            featured = bool(config.get("featured", True))
            if featured and await media.featured_id(session, tenant_id, run.draft_id):
                featured = False
            wanted = int(config.get("count", 1)) + (1 if featured else 0)
            ranked = pipeline.rank_images(about, candidates, wanted)
            for index, image in enumerate(ranked):
                role = "featured" if featured and index == 0 else "inline"
                await media.attach(
                    session,
                    tenant_id,
                    media_schemas.AttachMediaInput(
                        id=uuid.UUID(image["id"]), draft_id=run.draft_id, role=role
                    ),
                )
                chosen.append(image["id"])
        summary = f"{len(chosen)} image{'s' if len(chosen) != 1 else ''} chosen from the library"
    else:
        summary = "Stock photos are chosen by a person (the provider's terms); none chosen"
    await _summarize(tenant_id, run_id, step_key, summary)
    return {"chosen": chosen}


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
        if opened is not None and _waiting_at(opened, step_key):
            # Run again after a crash that came between its commit and DBOS recording it: the
            # draft is in review already (maybe approved since), so nothing is written again.
            return
        run = await _progress(session, tenant_id, run_id, "finalize", 88, step_key)
        draft = await _owned_draft(session, run)
        assert draft is not None
        provenance = {
            **_provenance(run, written, model, tokens_of(run), scored),
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
            run.steps = pipeline.set_step(run.steps, step_key, status="waiting")
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
                run.steps = pipeline.set_step(
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


@DBOS.step(name="generation.finish_without_article")
async def finish_without_article(tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """A test run stopped before its write: it succeeds with no article, its draft discarded,
    charged what its calls cost (its hold released when nothing)."""
    async with runtime.current().db.unit_of_work() as session:
        run = await _progress(session, tenant_id, run_id, "finalize", 95, "@finalize")
        draft = await _owned_draft(session, run)
        if draft is not None:
            drafts.discard_generated(draft)
        charged = None
        if run.reservation_id is not None:
            held = await credits.get_reservation(session, tenant_id, run.reservation_id)
            cost = min(charge_of(run), held.amount)
            if cost > 0:
                await credits.commit(
                    session, tenant_id, run.reservation_id, cost, spent=spent_of(run)
                )
                charged = cost
            else:
                await credits.release(session, tenant_id, run.reservation_id)
        run.status = "succeeded"
        run.percent = 100
        run.credits_committed = charged
        run.finished_at = utcnow()
        if run.steps:
            run.steps = pipeline.end(run.steps, "succeeded", run.finished_at)
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


@DBOS.step(name="generation.fail")
async def fail(tenant_id: uuid.UUID, run_id: uuid.UUID, error: dict[str, Any]) -> None:
    async with runtime.current().db.unit_of_work() as session:
        await mark_failed(session, tenant_id, run_id, error)


@DBOS.step(name="generation.abandon")
async def abandon(tenant_id: uuid.UUID, run_id: uuid.UUID, reason: str) -> None:
    """The draft went away or the run was cancelled: end the run, give the credits back.

    A run that already ended is left as it is, hold included: whatever ended it settled the hold
    (a step re-executed after its commit, e.g. `finalize` after a crash before DBOS recorded it,
    finds the run succeeded and its credits committed; cancelRun charged what had been made)."""
    async with runtime.current().db.unit_of_work() as session:
        run = await repository.get(session, tenant_id, run_id, for_update=True)
        if run is None or run.status not in UNFINISHED:
            return
        run.status = "cancelled"
        run.error = {"code": "CANCELLED", "message": reason, "retryable": False}
        run.finished_at = utcnow()
        run.waiting_until = None
        if run.steps:
            run.steps = pipeline.end(run.steps, "cancelled", run.finished_at)
        if run.reservation_id is not None:
            await credits.release(session, tenant_id, run.reservation_id)
        await watchers.run_changed(session, run)


@DBOS.step(name="generation.announce", retries_allowed=True, max_attempts=5, interval_seconds=0.5)
async def announce(tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """Append the ended run's terminal event to its stream, unless it has one (events.py)."""
    await events.announce_end(tenant_id, run_id)


async def mark_failed(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, error: dict[str, Any]
) -> None:
    """Fail the run and reject its draft with the reason; release the hold. Idempotent."""
    run = await repository.get(session, tenant_id, run_id, for_update=True)
    if run is None or run.status not in UNFINISHED:
        return
    draft = await drafts.generating(session, tenant_id, run.draft_id, run.id)
    if draft is not None and not keeps_draft(run):
        drafts.discard_generated(draft)
    elif draft is not None:
        drafts.fail_generation(draft, f"Generation failed: {error['message']}")
    if run.reservation_id is not None:
        await credits.release(session, tenant_id, run.reservation_id)
    run.status = "failed"
    run.error = error
    run.finished_at = utcnow()
    run.waiting_until = None
    if run.steps:
        run.steps = pipeline.end(run.steps, "failed", run.finished_at, error)
    outbox.emit(
        session,
        tenant_id,
        "generation.run_failed",
        resource_id=run.id,
        payload={
            "run_id": run.id,
            "job_id": run.job_id,
            "instance_id": run.instance_id,
            "draft_id": run.draft_id,
            "error": error,
        },
    )
    await watchers.run_changed(session, run)


# --- recovery -----------------------------------------------------------------------------------


@durable.reconcile_source("generation.blog")
async def unfinished_runs(session: AsyncSession) -> list[durable.Unfinished]:
    """Runs still queued or running: restarted when their workflow is missing, failed when it
    failed or when a run outlasts `generation_stall_seconds`."""
    stall_after = timedelta(seconds=runtime.current().settings.generation_stall_seconds)
    now = utcnow()
    work = []
    for run in await repository.unfinished(session):
        stalled = now - _active_since(run) > stall_after
        if run.status == "waiting_review":  # its gate's own timeout fails it, in the workflow
            stalled = run.waiting_until is not None and now - run.waiting_until > stall_after
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(run.id),
                restart=_restarter(run.tenant_id, run.id),
                give_up=_giver_up(run.tenant_id, run.id),
                stalled_reason=STALLED if stalled else None,
            )
        )
    return work


def _active_since(run: GenerationRun) -> datetime:
    """When the run last started working: its start, or the end of its last review gate."""
    since = run.started_at or run.created_at
    for step in run.steps or ():
        if step["type"] == "review_gate" and step.get("finished_at"):
            since = max(since, datetime.fromisoformat(step["finished_at"]))
    return since


def _restarter(tenant_id: uuid.UUID, run_id: uuid.UUID) -> Any:
    async def restart() -> None:
        await durable.start(
            generate_blog, workflow_id(run_id), str(tenant_id), str(run_id), queue=QUEUE
        )

    return restart


def _giver_up(tenant_id: uuid.UUID, run_id: uuid.UUID) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        code = "STALLED" if reason == STALLED else "INTERNAL_ERROR"
        error = {"code": code, "message": reason, "retryable": True}
        await mark_failed(session, tenant_id, run_id, error)

    return give_up
