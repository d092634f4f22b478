"""AI visibility's reports: the overview of a window of answers (seo.aiVisibilityOverview) and
its headline for the SEO control center, the cited sources (seo.listAiSources), and the gaps
the SEO actions' close_ai_gap rule reads. The prompts, runs and answers are service.py's."""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.schemas import offset_of
from contentplatform.seo import repository as seo_repository
from contentplatform.seo.ai_visibility import extraction, metrics, repository, schemas, service
from contentplatform.seo.models import SeoAiAnswer

OVERVIEW_DAYS = 30


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
    now = metrics.summary([service.figures_of(row) for row in rows])
    then = metrics.summary([service.figures_of(row) for row in before])
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
        found = metrics.summary([service.figures_of(row) for row in by_engine[engine]])
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
    figures = [service.figures_of(row) for row in rows]
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
        found = metrics.summary([service.figures_of(row) for row in by_day[day]])
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
    now = metrics.summary([service.figures_of(row) for row in rows])
    then = metrics.summary([service.figures_of(row) for row in before])
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
