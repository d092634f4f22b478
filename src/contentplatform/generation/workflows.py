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
from datetime import timedelta
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
from contentplatform.generation import events, grounding, passages, prompts, repository, watchers
from contentplatform.generation.answers import (
    InvalidModelOutput,
    Outline,
    SeoAnswer,
    excerpt_from,
    seo_meta_from,
    unfenced,
)
from contentplatform.generation.article import (
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
from contentplatform.settings import rules as content_rules
from contentplatform.settings import service as settings

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
    """A whole article: retrieve, outline, each part, SEO metadata, score, finalize."""
    brief = start["brief"]
    topic = await retrieve(*ids, brief)
    given = [asdict(s) for s in grounding.outline_sources(topic)]
    key = fingerprint("outline", brief, given)
    planned = await make_outline(*ids, brief, given, key, reuse.get(key))
    title = start["title"] or planned["outline"]["title"]
    parts = plan_parts(planned["outline"])
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
        )
        written.append(result["text"])
    article = assemble(title, parts, written, grounded.sources, grounded.grounds)
    key = fingerprint("optimize", brief, article.title, article.content)
    optimized = await optimize(*ids, brief, article.title, article.content, key, reuse.get(key))
    scored = await score(*ids, article.title, article.content, optimized["seo_meta"])
    await finalize(
        *ids,
        article.model_dump(mode="json"),
        optimized["seo_meta"],
        optimized["excerpt"],
        scored,
        planned["model"],
        _in_voice(brief, article),
    )


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
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, step: str, percent: int
) -> GenerationRun:
    """Lock the run, check it still owns its draft, and record where it is."""
    run = await repository.get(session, tenant_id, run_id, for_update=True)
    if run is None or run.status not in UNFINISHED:
        raise Superseded("The run was cancelled.")
    if await drafts.generating(session, tenant_id, run.draft_id, run.id) is None:
        raise Superseded("The draft was deleted or is no longer being generated.")
    if run.status == "queued":
        run.status = "running"
        run.started_at = utcnow()
    run.step = step
    run.percent = max(run.percent, percent)
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


async def _at(tenant_id: uuid.UUID, run_id: uuid.UUID, step: str, percent: int) -> None:
    async with runtime.current().db.unit_of_work() as session:
        await _progress(session, tenant_id, run_id, step, percent)


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
        call = {"step": step, "input_tokens": usage[0], "output_tokens": usage[1], "words": words}
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
async def retrieve(tenant_id: uuid.UUID, run_id: uuid.UUID, brief: Brief) -> Retrieval:
    """The passages the article is planned from: the best matches of topic and keywords (above
    the search's relative cut), in the chosen documents only when given, plus the best of the
    primary knowledge document."""
    keywords = brief["keywords"]
    query = " ".join([brief["topic"], *keywords])
    chosen = [uuid.UUID(i) for i in brief["document_ids"]] if brief["document_ids"] else None
    await _at(tenant_id, run_id, "retrieve", 5)
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
    if not found:
        raise NoSources(
            "None of the organization's ready documents matches this topic. Ingest documents "
            "about it, or choose documentIds to write from."
        )
    return {"query": query, "passages": _found([(p, False) for p in found], urls)[:MAX_SOURCES]}


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
) -> dict[str, Any]:
    await _at(tenant_id, run_id, "outline", 10)
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
) -> dict[str, Any]:
    """One part of the article (`index` of `count`), the `done`th of the `of` parts this run
    writes (the progress moves by them)."""
    await _at(tenant_id, run_id, "write", 15 + (60 * done) // of)
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
) -> dict[str, Any]:
    await _at(tenant_id, run_id, "optimize", 80)
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
    await _at(tenant_id, run_id, "score", 90)
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
        run = await _progress(session, tenant_id, run_id, "finalize", 95)
        draft = await drafts.generating(session, tenant_id, run.draft_id, run.id)
        assert draft is not None  # _progress checked it, under the same lock
        provenance = {**_provenance(run, written, model, tokens_of(run), scored), **more}
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
    if draft is not None:
        drafts.fail_generation(draft, f"Generation failed: {error['message']}")
    if run.reservation_id is not None:
        await credits.release(session, tenant_id, run.reservation_id)
    run.status = "failed"
    run.error = error
    run.finished_at = utcnow()
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
        started = run.started_at or run.created_at
        stalled = now - started > stall_after
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(run.id),
                restart=_restarter(run.tenant_id, run.id),
                give_up=_giver_up(run.tenant_id, run.id),
                stalled_reason=STALLED if stalled else None,
            )
        )
    return work


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
