"""The rules of AI visibility. Never commits.

seo.runAiVisibility holds the run's credits (kind `seo.runAiVisibility`: one per prompt x engine
x sample), opens a sync run of kind `ai_visibility` with one pending answer row per prompt x
engine x sample, and queues the run's durable workflow (durable.py) once this commits; the
workflow asks the engines and commits the credits of the answers received. Reads never call an
engine: the overview, answers and sources are computed from the stored answers.
"""

from __future__ import annotations

import difflib
import re
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.credits import pricing
from contentplatform.credits import service as credits
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.schemas import offset_of
from contentplatform.seo import repository as seo_repository
from contentplatform.seo import service as seo
from contentplatform.seo.ai_visibility import durable as workflows
from contentplatform.seo.ai_visibility import extraction, metrics, repository, routing, schemas
from contentplatform.seo.ai_visibility.errors import (
    AiAnswerNotFound,
    AiPromptLimitReached,
    AiPromptNotFound,
    AnswerEngineNotConnected,
    NothingToAsk,
)
from contentplatform.seo.models import SeoAiAnswer, SeoAiPrompt
from contentplatform.seo.sync_runs import schemas as sync_schemas
from contentplatform.seo.sync_runs import service as sync_runs
from contentplatform.tenants import service as tenants

require = Required(repository.get, AiPromptNotFound)

KIND = pricing.AI_VISIBILITY
# Active prompts per organization (the catalog's default plan cap): the excess of a create is
# skipped (`plan_limit`).
MAX_ACTIVE = 100
DEFAULT_ENGINES = ["chatgpt"]
EXCERPT_CHARS = 300
MAX_DIFF = 20_000
SUGGEST_METHOD = "templates (offline, no model)"
SUGGEST_SOURCES: tuple[str, ...] = (
    "search_console",
    "tracked_keywords",
    "competitors",
    "knowledge",
)
QUESTION_WORDS = frozenset(
    [
        "how",
        "what",
        "why",
        "which",
        "who",
        "where",
        "when",
        "is",
        "are",
        "can",
        "does",
        "do",
        "should",
        "best",
        "top",
        "vs",
    ]
)


def record(row: SeoAiPrompt) -> schemas.AiPrompt:
    return schemas.AiPrompt(
        id=row.id,
        text=row.text,
        topic=row.topic,
        tags=list(row.tags),
        intent=row.intent,
        country=row.country,
        language=row.language,
        engines=list(row.engines),
        status=row.status,
        source=row.source,
        latest=schemas.AiPromptLatest.model_validate(row.latest) if row.latest else None,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


# --- prompts ------------------------------------------------------------------------------------


async def list_prompts(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListAiPromptsInput
) -> schemas.AiPromptPage:
    rows, total = await repository.prompts_page(
        session,
        tenant_id,
        filters=data.model_dump(
            include={"search", "tag", "topic", "status", "engine", "mentioned"}
        ),
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    return schemas.AiPromptPage(
        data=[record(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def _block(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, Any]:
    return seo.blocks_of(await seo_repository.stored_settings(session, tenant_id))["ai_visibility"]


async def create_prompts(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.CreateAiPromptsInput
) -> schemas.CreatedAiPrompts:
    await tenants.lock_tenant(session, tenant_id)
    stored = await seo_repository.stored_settings(session, tenant_id)
    country = data.country or (stored.country if stored else None)
    language = data.language or (stored.language if stored else None)
    engines = list(data.engines or (await _block(session, tenant_id))["engines"] or DEFAULT_ENGINES)
    taken = await repository.live_keys(session, tenant_id)
    room = MAX_ACTIVE - await repository.active_count(session, tenant_id)
    created: list[SeoAiPrompt] = []
    skipped: list[schemas.SkippedAiPrompt] = []
    now = utcnow()
    for prompt in data.prompts:
        key = schemas.text_key(prompt.text)
        if (key, country, language) in taken:
            skipped.append(schemas.SkippedAiPrompt(text=prompt.text, reason="duplicate"))
            continue
        if room <= 0:
            skipped.append(schemas.SkippedAiPrompt(text=prompt.text, reason="plan_limit"))
            continue
        taken.add((key, country, language))
        room -= 1
        row = SeoAiPrompt(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            text=prompt.text,
            text_key=key,
            topic=prompt.topic,
            tags=list(prompt.tags),
            intent=prompt.intent,
            country=country,
            language=language,
            engines=engines,
            status="active",
            source="manual",
            created_at=now,
            updated_at=now,
        )
        session.add(row)
        created.append(row)
    await session.flush()
    if created:
        await seo.start_ai_visibility_clock(session, tenant_id)
    return schemas.CreatedAiPrompts(created=[record(row) for row in created], skipped=skipped)


async def update_prompt(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateAiPromptInput
) -> schemas.AiPrompt:
    await tenants.lock_tenant(session, tenant_id)
    row = await require(session, tenant_id, data.id, for_update=True)
    sent = data.model_fields_set
    if "topic" in sent:
        row.topic = data.topic
    if "tags" in sent:
        row.tags = list(data.tags or [])
    if "engines" in sent and data.engines is not None:
        row.engines = list(data.engines)
    if "status" in sent and data.status is not None and data.status != row.status:
        if (
            data.status == "active"
            and await repository.active_count(session, tenant_id) >= MAX_ACTIVE
        ):
            raise AiPromptLimitReached(
                f"The organization tracks {MAX_ACTIVE} active prompts already: pause one first."
            )
        row.status = data.status
    row.updated_at = utcnow()
    await session.flush()
    return record(row)


async def delete_prompt(session: AsyncSession, tenant_id: uuid.UUID, prompt_id: uuid.UUID) -> None:
    row = await require(session, tenant_id, prompt_id, for_update=True)
    row.deleted_at = utcnow()
    row.status = "paused"
    await session.flush()


# --- suggestions --------------------------------------------------------------------------------


def _question(text: str) -> str:
    cleaned = re.sub(r"\s+", " ", text).strip().rstrip("?")
    return f"{cleaned[:1].upper()}{cleaned[1:]}?"


def _is_question(text: str) -> bool:
    first = text.split(" ", 1)[0].casefold()
    return first in QUESTION_WORDS


async def suggest(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.SuggestAiPromptsInput
) -> schemas.SuggestedAiPrompts:
    sources = list(data.sources or SUGGEST_SOURCES)
    stored = await seo_repository.stored_settings(session, tenant_id)
    brand = stored.brand_name if stored else None
    taken = {key for key, _, _ in await repository.live_keys(session, tenant_id)}
    found: list[schemas.SuggestedAiPrompt] = []

    def add(text: str, intent: str, source: str, evidence: str) -> None:
        text = text[:500]
        key = schemas.text_key(text)
        if key in taken or len(text) < 3:
            return
        taken.add(key)
        found.append(
            schemas.SuggestedAiPrompt(
                text=text,
                topic=data.topic,
                intent=intent,
                source=source,
                evidence=evidence[:300],
            )
        )

    for source in SUGGEST_SOURCES:
        if source not in sources:
            continue
        if source == "search_console":
            since = utcnow().date() - timedelta(days=90)
            for query, impressions in await repository.top_queries(session, tenant_id, since, 500):
                if _is_question(query):
                    add(
                        _question(query),
                        "informational",
                        source,
                        f"Search Console query with {impressions} impressions in 90 days",
                    )
        elif source == "tracked_keywords":
            for keyword in await repository.tracked_keywords(session, tenant_id, 200):
                if _is_question(keyword):
                    add(_question(keyword), "informational", source, f"tracked keyword '{keyword}'")
                else:
                    add(
                        f"What is the best {keyword}?",
                        "commercial",
                        source,
                        f"tracked keyword '{keyword}'",
                    )
        elif source == "competitors":
            for competitor in await seo_repository.competitors(session, tenant_id):
                if not competitor.track_ai:
                    continue
                if brand:
                    add(
                        f"{brand} vs {competitor.name}: which is better?",
                        "commercial",
                        source,
                        f"competitor {competitor.domain}",
                    )
                add(
                    f"What are the best alternatives to {competitor.name}?",
                    "commercial",
                    source,
                    f"competitor {competitor.domain}",
                )
        # knowledge: product terms need a model to be read from documents; the offline writer
        # makes none (see the operation's description).
    return schemas.SuggestedAiPrompts(
        data=found[: data.count], total=min(len(found), data.count), method=SUGGEST_METHOD
    )


# --- runs ---------------------------------------------------------------------------------------


def run_keys(key: str) -> tuple[str, str]:
    """The run key and the credit hold's key of a run asked for under `key`."""
    return (
        f"ai_visibility:{key}"[: sync_runs.MAX_RUN_KEY],
        f"seo.runAiVisibility:{key}"[: credits.MAX_KEY_LENGTH],
    )


def scheduled_keys(period: str) -> tuple[str, str]:
    """The keys of the scheduled run of `period`: `@` where a client's key has `:`, so no key a
    client sends can name them."""
    return f"ai_visibility@{period}", f"seo.runAiVisibility@{period}"


async def run(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    requested_by: str | None,
    data: schemas.RunAiVisibilityInput,
    *,
    trigger: str = "manual",
    keys: tuple[str, str] | None = None,
) -> sync_schemas.SyncRun:
    """Open a run (or answer the one its key or the one in flight names). `trigger` and `keys`:
    a scheduled run's (schedule.py)."""
    prompts = await repository.to_run(session, tenant_id, data.prompt_ids)
    if not prompts:
        raise NothingToAsk("There is no active tracked prompt to ask among those asked for.")
    routes = await routing.routes(session, tenant_id, settings)
    if data.engines:
        missing = [engine for engine in data.engines if engine not in routes]
        if missing:
            raise AnswerEngineNotConnected(
                f"No answer-engine provider is connected for {', '.join(missing)}: connect "
                "openai, perplexity, gemini, anthropic or dataforseo (seo.connect) first."
            )
    pairs = [
        (prompt, engine)
        for prompt in prompts
        for engine in (data.engines or prompt.engines)
        if engine in routes
    ]
    if not pairs:
        wanted = sorted({engine for prompt in prompts for engine in prompt.engines})
        raise AnswerEngineNotConnected(
            "No answer-engine provider is connected for the prompts' engines "
            f"({', '.join(wanted)})."
        )
    samples = data.samples or int((await _block(session, tenant_id))["samples_per_prompt"])
    run_key, credit_key = keys or run_keys(data.idempotency_key or str(uuid.uuid4()))
    await tenants.lock_tenant(session, tenant_id)
    running = await sync_runs.active_run(session, tenant_id, "ai_visibility")
    if running is not None:
        return sync_runs.record(running)
    by_provider = Counter(routes[engine].provider for _, engine in pairs)
    amount = len(pairs) * samples
    opened, created = await sync_runs.open_run(
        session,
        tenant_id,
        kind="ai_visibility",
        provider=by_provider.most_common(1)[0][0],
        run_key=run_key,
        trigger=trigger,
        params={
            "prompts": len({prompt.id for prompt, _ in pairs}),
            "engines": sorted({engine for _, engine in pairs}),
            "providers": {engine: routes[engine].provider for engine in sorted(routes)},
            "samples": samples,
            "answers": amount,
            "credits": amount,
        },
        created_by=requested_by,
    )
    if not created:
        return sync_runs.record(opened)
    hold = await credits.reserve(
        session,
        tenant_id,
        kind=KIND,
        idempotency_key=credit_key,
        amount=amount,
        ttl_seconds=min(24 * 3600, max(settings.credit_reservation_ttl_seconds, 6 * 3600)),
        monthly_grant=settings.monthly_credit_grant,
        creator=credits.Creator(resource_type="seo_sync_run", resource_id=str(opened.id)),
    )
    opened.params = {**opened.params, "reservation_id": str(hold.id)}
    opened.credits_reserved = amount
    now = utcnow()
    session.add_all(
        SeoAiAnswer(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            sync_run_id=opened.id,
            prompt_id=prompt.id,
            engine=engine,
            sample=sample,
            status="pending",
            provider=routes[engine].provider,
            country=prompt.country,
            mentions=[],
            citations=[],
            search_queries=[],
            brand_mentioned=False,
            cited=False,
            created_at=now,
            updated_at=now,
        )
        for prompt, engine in pairs
        for sample in range(1, samples + 1)
    )
    await session.flush()
    await sync_runs.record_progress(session, tenant_id, opened.id, done=0, total=amount)
    await session.refresh(opened)
    workflows.enqueue_after_commit(session, tenant_id, opened.id)
    return sync_runs.record(opened)


# --- answers ------------------------------------------------------------------------------------


def figures_of(row: SeoAiAnswer) -> metrics.Figures:
    return metrics.Figures(
        brand_mentioned=row.brand_mentioned,
        brand_position=row.brand_position,
        sentiment=row.sentiment,
        mentions=row.mentions,
        citations=row.citations,
    )


def _answer(row: SeoAiAnswer, prompt_text: str) -> dict[str, Any]:
    text = row.text or ""
    return {
        "id": row.id,
        "prompt_id": row.prompt_id,
        "prompt_text": prompt_text,
        "engine": row.engine,
        "provider": row.provider,
        "model": row.model,
        "country": row.country,
        "run_id": row.sync_run_id,
        "sample": row.sample,
        "answered_at": row.answered_at,
        "excerpt": text[:EXCERPT_CHARS],
        "brand_mentioned": row.brand_mentioned,
        "brand_position": row.brand_position,
        "sentiment": row.sentiment,
        "sentiment_method": row.sentiment_method or extraction.LEXICON,
        "citations": [
            {key: item.get(key) for key in ("url", "domain", "title", "position", "owner")}
            for item in row.citations
        ],
    }


async def list_answers(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListAiAnswersInput
) -> schemas.AiAnswerPage:
    rows, total = await repository.answers_page(
        session,
        tenant_id,
        filters=data.model_dump(
            include={
                "prompt_id",
                "engine",
                "run_id",
                "mentioned",
                "competitor_id",
                "cited",
                "start_date",
                "end_date",
            }
        ),
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    prompts = await repository.prompts_by_ids(session, tenant_id, [row.prompt_id for row in rows])
    answers = []
    for row in rows:
        found = _answer(row, prompts[row.prompt_id].text if row.prompt_id in prompts else "")
        found["mentions"] = [
            {
                key: item.get(key)
                for key in ("brand", "competitor_id", "name", "position", "sentiment")
            }
            for item in row.mentions
        ]
        answers.append(schemas.AiAnswer.model_validate(found))
    return schemas.AiAnswerPage(data=answers, total=total, page=data.page, limit=data.limit)


async def _samples(
    session: AsyncSession, tenant_id: uuid.UUID, row: SeoAiAnswer
) -> tuple[int, int]:
    """(answers mentioning the brand, answers) of the engine to the prompt in the row's run."""
    rows = await repository.answered(
        session,
        tenant_id,
        run_id=row.sync_run_id,
        prompt_ids=[row.prompt_id],
        engine=row.engine,
        live_only=False,
    )
    return sum(1 for found in rows if found.brand_mentioned), len(rows)


def _change(
    row: SeoAiAnswer, before: SeoAiAnswer, visibility: schemas.AiVisibilityDelta
) -> schemas.AiAnswerChange:
    def brands(answer: SeoAiAnswer) -> set[str]:
        return {str(item["name"]) for item in answer.mentions}

    def domains(answer: SeoAiAnswer) -> set[str]:
        return {str(item["domain"]) for item in answer.citations if item.get("domain")}

    diff = "\n".join(
        difflib.unified_diff(
            (before.text or "").splitlines(),
            (row.text or "").splitlines(),
            fromfile=f"run {before.sync_run_id}",
            tofile=f"run {row.sync_run_id}",
            lineterm="",
        )
    )
    return schemas.AiAnswerChange(
        previous_answer_id=before.id,
        previous_run_id=before.sync_run_id,
        brands_added=sorted(brands(row) - brands(before)),
        brands_dropped=sorted(brands(before) - brands(row)),
        domains_added=sorted(domains(row) - domains(before)),
        domains_dropped=sorted(domains(before) - domains(row)),
        diff=diff[:MAX_DIFF],
        visibility=visibility,
    )


async def get_answer(
    session: AsyncSession, tenant_id: uuid.UUID, answer_id: uuid.UUID
) -> schemas.AiAnswerDetail:
    row = await repository.get_answer(session, tenant_id, answer_id)
    if row is None or row.status != "answered":
        raise AiAnswerNotFound(answer_id)
    prompts = await repository.prompts_by_ids(session, tenant_id, [row.prompt_id])
    found = _answer(row, prompts[row.prompt_id].text if row.prompt_id in prompts else "")
    before = await repository.previous_answer(session, tenant_id, row)
    found.update(
        text=row.text or "",
        mentions=row.mentions,
        search_queries=list(row.search_queries),
        changes=(
            _change(
                row,
                before,
                metrics.difference(
                    await _samples(session, tenant_id, row),
                    await _samples(session, tenant_id, before),
                ),
            )
            if before is not None
            else None
        ),
    )
    return schemas.AiAnswerDetail.model_validate(found)
