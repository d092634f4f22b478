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
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import date, timedelta
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
OVERVIEW_DAYS = 30
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


def _figures(row: SeoAiAnswer) -> metrics.Figures:
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


# --- the overview -------------------------------------------------------------------------------


def _window(first: date, last: date) -> tuple[date, date]:
    """The preceding window of equal length."""
    days = (last - first).days + 1
    return first - timedelta(days=days), first - timedelta(days=1)


async def _answers(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    first: date,
    last: date,
    *,
    engine: str | None,
    prompt_ids: Sequence[uuid.UUID] | None,
    country: str | None = None,
) -> list[SeoAiAnswer]:
    return await repository.answered(
        session,
        tenant_id,
        first=first,
        last=last,
        prompt_ids=prompt_ids,
        engine=engine,
        country=country,
    )


async def overview(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.AiOverviewInput
) -> schemas.AiVisibilityOverview:
    first, last = data.dates(OVERVIEW_DAYS)
    prompt_ids = (
        await repository.prompt_ids_matching(session, tenant_id, tag=data.tag, topic=data.topic)
        if data.tag or data.topic
        else None
    )

    async def answers(start: date, end: date) -> list[SeoAiAnswer]:
        return await _answers(
            session,
            tenant_id,
            start,
            end,
            engine=data.engine,
            prompt_ids=prompt_ids,
            country=data.country,
        )

    rows = await answers(first, last)
    before = await answers(*_window(first, last))
    now = metrics.summary([_figures(row) for row in rows])
    then = metrics.summary([_figures(row) for row in before])
    by_engine: dict[str, list[SeoAiAnswer]] = defaultdict(list)
    by_day: dict[date, list[SeoAiAnswer]] = defaultdict(list)
    by_prompt: dict[uuid.UUID, list[SeoAiAnswer]] = defaultdict(list)
    for row in rows:
        by_engine[row.engine].append(row)
        if row.answer_date is not None:
            by_day[row.answer_date].append(row)
        by_prompt[row.prompt_id].append(row)
    engines = []
    for engine in schemas.ENGINES:
        if engine not in by_engine:
            continue
        found = metrics.summary([_figures(row) for row in by_engine[engine]])
        engines.append(
            schemas.AiEngineFigures(
                engine=engine,
                answers=len(by_engine[engine]),
                visibility=found.visibility,
                share_of_voice=found.share_of_voice,
                avg_position=found.avg_position,
                sentiment=found.sentiment,
                citation_share=found.citation_share,
            )
        )
    competitors = []
    figures = [_figures(row) for row in rows]
    for competitor in await seo_repository.competitors(session, tenant_id):
        if not competitor.track_ai:
            continue
        theirs = metrics.competitor_summary(figures, str(competitor.id))
        competitors.append(
            schemas.AiCompetitorFigures(
                competitor_id=competitor.id,
                name=competitor.name,
                visibility=theirs.visibility,
                share_of_voice=theirs.share_of_voice,
                avg_position=theirs.avg_position,
                sentiment=theirs.sentiment,
            )
        )
    trend = []
    for day in sorted(by_day):
        found = metrics.summary([_figures(row) for row in by_day[day]])
        trend.append(
            schemas.AiTrendPoint(
                date=day,
                visibility=found.visibility,
                share_of_voice=found.share_of_voice,
                citation_share=found.citation_share,
            )
        )
    competitor_only = sum(
        1
        for answers in by_prompt.values()
        if not any(row.brand_mentioned for row in answers)
        and any(m.get("brand") == "competitor" for row in answers for m in row.mentions)
    )
    not_cited = sum(1 for answers in by_prompt.values() if not any(row.cited for row in answers))
    return schemas.AiVisibilityOverview(
        start_date=first,
        end_date=last,
        visibility=now.visibility,
        share_of_voice=now.share_of_voice,
        avg_position=now.avg_position,
        sentiment=now.sentiment,
        citation_share=now.citation_share,
        answers=len(rows),
        prompts=len(by_prompt),
        min_sample=metrics.MIN_SAMPLE,
        change=schemas.AiVisibilityChange(
            **{
                name: metrics.difference(now.counts[name], then.counts[name])
                for name in ("visibility", "share_of_voice", "citation_share")
            }
        ),
        by_engine=engines,
        competitors=competitors,
        trend=trend,
        gaps=schemas.AiGaps(prompts_competitor_only=competitor_only, prompts_not_cited=not_cited),
    )


async def headline(
    session: AsyncSession, tenant_id: uuid.UUID, first: date, last: date
) -> dict[str, Any] | None:
    """The SEO overview's tile: visibility, share of voice and citation share over the window
    (values, null below the minimum sample) and the visibility change against the window
    before; None when the organization has no stored answer in it."""
    rows = await _answers(session, tenant_id, first, last, engine=None, prompt_ids=None)
    if not rows:
        return None
    before = await _answers(session, tenant_id, *_window(first, last), engine=None, prompt_ids=None)
    now = metrics.summary([_figures(row) for row in rows])
    then = metrics.summary([_figures(row) for row in before])
    return {
        "visibility": now.visibility.value,
        "share_of_voice": now.share_of_voice.value,
        "citation_share": now.citation_share.value,
        "change": metrics.change(now.visibility, then.visibility),
    }


# --- gaps (the SEO actions' close_ai_gap rule reads them) -----------------------------------------


async def active_prompt_ids(session: AsyncSession, tenant_id: uuid.UUID) -> set[str]:
    return {str(row.id) for row in await repository.to_run(session, tenant_id, None)}


async def gaps(session: AsyncSession, tenant_id: uuid.UUID) -> list[dict[str, Any]]:
    """The live active prompts whose newest run named a competitor and not the brand:
    {prompt_id, text, topic, competitors, answers, run_id}, oldest prompt first."""
    found = []
    for row in await repository.to_run(session, tenant_id, None):
        latest = row.latest or {}
        if latest and not latest.get("mentioned") and latest.get("competitors_mentioned"):
            found.append(
                {
                    "prompt_id": str(row.id),
                    "text": row.text,
                    "topic": row.topic,
                    "competitors": list(latest["competitors_mentioned"]),
                    "answers": int(latest.get("answers") or 0),
                    "run_id": latest.get("run_id"),
                }
            )
    return found


# --- sources ------------------------------------------------------------------------------------


async def sources(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListAiSourcesInput
) -> schemas.AiSourcePage:
    first, last = data.dates(OVERVIEW_DAYS)
    prompt_ids = [data.prompt_id] if data.prompt_id else None
    rows = await _answers(
        session, tenant_id, first, last, engine=data.engine, prompt_ids=prompt_ids
    )
    before = await _answers(
        session, tenant_id, *_window(first, last), engine=data.engine, prompt_ids=prompt_ids
    )

    def key(item: dict[str, Any]) -> str:
        return str(item.get("url") if data.group_by == "url" else item.get("domain") or "")

    earlier = Counter(key(item) for row in before for item in row.citations)
    total = sum(len(row.citations) for row in rows)
    groups: dict[str, dict[str, Any]] = {}
    for row in rows:
        for item in row.citations:
            if data.owner != "all" and item.get("owner") != data.owner:
                continue
            found = groups.setdefault(
                key(item),
                {
                    "domain": item.get("domain"),
                    "url": item.get("url") if data.group_by == "url" else None,
                    "owner": item.get("owner") or "third_party",
                    "competitor_id": item.get("competitor_id"),
                    "citations": 0,
                    "prompts": set(),
                    "engines": Counter(),
                },
            )
            found["citations"] += 1
            found["prompts"].add(row.prompt_id)
            found["engines"][row.engine] += 1
    ordered = sorted(groups.items(), key=lambda item: (-item[1]["citations"], item[0]))
    offset = offset_of(data.page, data.limit)
    page = []
    for name, found in ordered[offset : offset + data.limit]:
        previous = earlier.get(name, 0)
        page.append(
            schemas.AiSource(
                domain=found["domain"],
                url=found["url"],
                owner=found["owner"],
                competitor_id=found["competitor_id"],
                category=extraction.category(found["domain"], found["owner"]),
                citations=found["citations"],
                citation_share=round(100 * found["citations"] / total, 2) if total else 0.0,
                prompts=len(found["prompts"]),
                engines=dict(found["engines"]),
                change_pct=round(100 * (found["citations"] - previous) / previous, 2)
                if previous
                else None,
            )
        )
    return schemas.AiSourcePage(data=page, total=len(ordered), page=data.page, limit=data.limit)
