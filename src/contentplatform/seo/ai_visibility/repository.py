"""Every query of AI visibility, the tenant first (but for the reconciler's, which looks across
tenants for runs with answers still pending)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import String, cast, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, counts_by, cross_tenant, page_of, utcnow
from contentplatform.seo.models import SeoAiAnswer, SeoAiPrompt, SeoQueryDay, SeoTrackedKeyword

get = Owned(SeoAiPrompt)
get_answer = Owned(SeoAiAnswer)


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _json_has(column: Any, value: str) -> Any:
    """A short JSON list of strings holding `value`, matched through its text form."""
    quoted = value.replace("\\", "\\\\").replace('"', '\\"')
    return cast(column, String).contains(f'"{quoted}"', autoescape=True)


def _live(tenant_id: uuid.UUID) -> list[Any]:
    return [SeoAiPrompt.tenant_id == tenant_id, SeoAiPrompt.deleted_at.is_(None)]


async def prompts_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    filters: dict[str, Any],
    limit: int,
    offset: int,
) -> tuple[list[SeoAiPrompt], int]:
    """A page of the tenant's live prompts, newest first (those made together by text)."""
    criteria = _live(tenant_id)
    if filters.get("search"):
        needle = _escaped(filters["search"].casefold())
        criteria.append(SeoAiPrompt.text_key.like(f"%{needle}%", escape="\\"))
    if filters.get("topic") is not None:
        criteria.append(SeoAiPrompt.topic == filters["topic"])
    if filters.get("status") is not None:
        criteria.append(SeoAiPrompt.status == filters["status"])
    if filters.get("mentioned") is not None:
        criteria.append(SeoAiPrompt.latest_mentioned.is_(bool(filters["mentioned"])))
    if filters.get("tag"):
        criteria.append(_json_has(SeoAiPrompt.tags, filters["tag"]))
    if filters.get("engine"):
        criteria.append(_json_has(SeoAiPrompt.engines, filters["engine"]))
    statement = select(SeoAiPrompt).where(*criteria)
    return await page_of(
        session,
        statement,
        SeoAiPrompt.created_at.desc(),
        SeoAiPrompt.text_key,
        SeoAiPrompt.id,
        limit=limit,
        offset=offset,
    )


async def live_keys(session: AsyncSession, tenant_id: uuid.UUID) -> set[tuple[str, Any, Any]]:
    """(text_key, country, language) of every live prompt: what a new one duplicates."""
    statement = select(SeoAiPrompt.text_key, SeoAiPrompt.country, SeoAiPrompt.language).where(
        *_live(tenant_id)
    )
    return {tuple(row) for row in (await session.execute(statement)).tuples()}  # type: ignore[misc]


async def active_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    statement = select(func.count()).where(*_live(tenant_id), SeoAiPrompt.status == "active")
    return int(await session.scalar(statement) or 0)


async def to_run(
    session: AsyncSession, tenant_id: uuid.UUID, ids: Sequence[uuid.UUID] | None
) -> list[SeoAiPrompt]:
    """The active live prompts among `ids` (None: all the tenant's), oldest first."""
    statement = select(SeoAiPrompt).where(*_live(tenant_id), SeoAiPrompt.status == "active")
    if ids is not None:
        statement = statement.where(SeoAiPrompt.id.in_(list(ids)))
    statement = statement.order_by(SeoAiPrompt.created_at, SeoAiPrompt.id)
    return list((await session.execute(statement)).scalars())


async def prompts_by_ids(
    session: AsyncSession, tenant_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, SeoAiPrompt]:
    """The tenant's prompts by id, deleted ones too (their answers still name them)."""
    if not ids:
        return {}
    statement = select(SeoAiPrompt).where(
        SeoAiPrompt.tenant_id == tenant_id, SeoAiPrompt.id.in_(list(set(ids)))
    )
    return {row.id: row for row in (await session.execute(statement)).scalars()}


# --- answers ------------------------------------------------------------------------------------


async def of_run(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, statuses: Sequence[str]
) -> list[SeoAiAnswer]:
    statement = (
        select(SeoAiAnswer)
        .where(
            SeoAiAnswer.tenant_id == tenant_id,
            SeoAiAnswer.sync_run_id == run_id,
            SeoAiAnswer.status.in_(list(statuses)),
        )
        .order_by(SeoAiAnswer.prompt_id, SeoAiAnswer.engine, SeoAiAnswer.sample)
    )
    return list((await session.execute(statement)).scalars())


async def run_counts(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> dict[str, int]:
    return await counts_by(
        session,
        SeoAiAnswer.status,
        SeoAiAnswer.tenant_id == tenant_id,
        SeoAiAnswer.sync_run_id == run_id,
    )


async def sentiment_tokens(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> tuple[int, int]:
    """The language model's tokens for the run's answers' sentiment: (in, out)."""
    row = (
        await session.execute(
            select(
                func.coalesce(func.sum(SeoAiAnswer.sentiment_input_tokens), 0),
                func.coalesce(func.sum(SeoAiAnswer.sentiment_output_tokens), 0),
            ).where(SeoAiAnswer.tenant_id == tenant_id, SeoAiAnswer.sync_run_id == run_id)
        )
    ).one()
    return int(row[0]), int(row[1])


async def run_failures(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, limit: int
) -> list[dict[str, Any]]:
    statement = (
        select(SeoAiAnswer.prompt_id, SeoAiAnswer.engine, SeoAiAnswer.sample, SeoAiAnswer.error)
        .where(
            SeoAiAnswer.tenant_id == tenant_id,
            SeoAiAnswer.sync_run_id == run_id,
            SeoAiAnswer.status == "failed",
        )
        .order_by(SeoAiAnswer.engine, SeoAiAnswer.prompt_id, SeoAiAnswer.sample)
        .limit(limit)
    )
    return [
        {"prompt_id": str(prompt), "engine": engine, "sample": sample, **(error or {})}
        for prompt, engine, sample, error in (await session.execute(statement)).tuples()
    ]


async def failed_engines(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> list[str]:
    statement = (
        select(SeoAiAnswer.engine)
        .where(
            SeoAiAnswer.tenant_id == tenant_id,
            SeoAiAnswer.sync_run_id == run_id,
            SeoAiAnswer.status == "failed",
        )
        .distinct()
    )
    return sorted(str(engine) for engine in (await session.execute(statement)).scalars())


async def answered(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    first: date | None = None,
    last: date | None = None,
    run_id: uuid.UUID | None = None,
    prompt_ids: Sequence[uuid.UUID] | None = None,
    engine: str | None = None,
    country: str | None = None,
    live_only: bool = True,
) -> list[SeoAiAnswer]:
    """The answered answers matching, oldest first; of live prompts only unless said."""
    criteria: list[Any] = [SeoAiAnswer.tenant_id == tenant_id, SeoAiAnswer.status == "answered"]
    if first is not None:
        criteria.append(SeoAiAnswer.answer_date >= first)
    if last is not None:
        criteria.append(SeoAiAnswer.answer_date <= last)
    if run_id is not None:
        criteria.append(SeoAiAnswer.sync_run_id == run_id)
    if prompt_ids is not None:
        criteria.append(SeoAiAnswer.prompt_id.in_(list(prompt_ids)))
    if engine is not None:
        criteria.append(SeoAiAnswer.engine == engine)
    if country is not None:
        criteria.append(SeoAiAnswer.country == country)
    statement = select(SeoAiAnswer).where(*criteria)
    if live_only:
        statement = statement.join(SeoAiPrompt, SeoAiPrompt.id == SeoAiAnswer.prompt_id).where(
            SeoAiPrompt.deleted_at.is_(None)
        )
    statement = statement.order_by(SeoAiAnswer.answered_at, SeoAiAnswer.id)
    return list((await session.execute(statement)).scalars())


async def prompt_ids_matching(
    session: AsyncSession, tenant_id: uuid.UUID, *, tag: str | None, topic: str | None
) -> list[uuid.UUID]:
    statement = select(SeoAiPrompt.id).where(*_live(tenant_id))
    if tag:
        statement = statement.where(_json_has(SeoAiPrompt.tags, tag))
    if topic is not None:
        statement = statement.where(SeoAiPrompt.topic == topic)
    return list((await session.execute(statement)).scalars())


async def answers_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    filters: dict[str, Any],
    limit: int,
    offset: int,
) -> tuple[list[SeoAiAnswer], int]:
    """A page of answered answers, newest first."""
    criteria: list[Any] = [SeoAiAnswer.tenant_id == tenant_id, SeoAiAnswer.status == "answered"]
    for name, column in (
        ("prompt_id", SeoAiAnswer.prompt_id),
        ("engine", SeoAiAnswer.engine),
        ("run_id", SeoAiAnswer.sync_run_id),
    ):
        if filters.get(name) is not None:
            criteria.append(column == filters[name])
    if filters.get("mentioned") is not None:
        criteria.append(SeoAiAnswer.brand_mentioned.is_(bool(filters["mentioned"])))
    if filters.get("cited") is not None:
        criteria.append(SeoAiAnswer.cited.is_(bool(filters["cited"])))
    if filters.get("start_date") is not None:
        criteria.append(SeoAiAnswer.answer_date >= filters["start_date"])
    if filters.get("end_date") is not None:
        criteria.append(SeoAiAnswer.answer_date <= filters["end_date"])
    if filters.get("competitor_id") is not None:
        criteria.append(_json_has(SeoAiAnswer.mentions, str(filters["competitor_id"])))
    statement = select(SeoAiAnswer).where(*criteria)
    return await page_of(
        session,
        statement,
        SeoAiAnswer.answered_at.desc(),
        SeoAiAnswer.id.desc(),
        limit=limit,
        offset=offset,
    )


async def previous_answer(
    session: AsyncSession, tenant_id: uuid.UUID, answer: SeoAiAnswer
) -> SeoAiAnswer | None:
    """The same prompt's answered answer from the same engine in the newest earlier run (its
    first sample)."""
    statement = (
        select(SeoAiAnswer)
        .where(
            SeoAiAnswer.tenant_id == tenant_id,
            SeoAiAnswer.prompt_id == answer.prompt_id,
            SeoAiAnswer.engine == answer.engine,
            SeoAiAnswer.status == "answered",
            SeoAiAnswer.sync_run_id != answer.sync_run_id,
            SeoAiAnswer.answered_at < (answer.answered_at or utcnow()),
        )
        .order_by(SeoAiAnswer.answered_at.desc(), SeoAiAnswer.sample)
        .limit(1)
    )
    return (await session.execute(statement)).scalars().first()


async def touch_prompts(
    session: AsyncSession, tenant_id: uuid.UUID, values: dict[uuid.UUID, dict[str, Any]]
) -> None:
    """Each prompt's `latest` and `latest_mentioned` set."""
    for prompt_id, latest in values.items():
        await session.execute(
            update(SeoAiPrompt)
            .where(SeoAiPrompt.tenant_id == tenant_id, SeoAiPrompt.id == prompt_id)
            .values(latest=latest, latest_mentioned=bool(latest.get("mentioned")))
            .execution_options(synchronize_session=False)
        )


@cross_tenant("the reconciler looks for AI visibility runs with answers pending, of every tenant")
async def open_runs(session: AsyncSession) -> list[tuple[uuid.UUID, uuid.UUID, datetime]]:
    """(tenant, run, when an answer of it last moved) of every run with answers pending."""
    pending = (
        select(SeoAiAnswer.tenant_id, SeoAiAnswer.sync_run_id)
        .where(SeoAiAnswer.status == "pending")
        .distinct()
        .subquery()
    )
    statement = (
        select(SeoAiAnswer.tenant_id, SeoAiAnswer.sync_run_id, func.max(SeoAiAnswer.updated_at))
        .join(
            pending,
            (pending.c.tenant_id == SeoAiAnswer.tenant_id)
            & (pending.c.sync_run_id == SeoAiAnswer.sync_run_id),
        )
        .group_by(SeoAiAnswer.tenant_id, SeoAiAnswer.sync_run_id)
    )
    return [(t, r, moved) for t, r, moved in (await session.execute(statement)).tuples()]


# --- what suggestions are made from -------------------------------------------------------------


async def top_queries(
    session: AsyncSession, tenant_id: uuid.UUID, since: date, limit: int
) -> list[tuple[str, int]]:
    """Search Console's queries since `since`, by impressions (most first, then the query)."""
    impressions = func.sum(SeoQueryDay.impressions)
    statement = (
        select(SeoQueryDay.query, impressions)
        .where(SeoQueryDay.tenant_id == tenant_id, SeoQueryDay.day >= since)
        .group_by(SeoQueryDay.query)
        .order_by(impressions.desc(), SeoQueryDay.query)
        .limit(limit)
    )
    return [(str(q), int(n or 0)) for q, n in (await session.execute(statement)).tuples()]


async def tracked_keywords(session: AsyncSession, tenant_id: uuid.UUID, limit: int) -> list[str]:
    """The active tracked keywords' texts, oldest first, once each."""
    statement = (
        select(SeoTrackedKeyword.keyword, func.min(SeoTrackedKeyword.created_at))
        .where(SeoTrackedKeyword.tenant_id == tenant_id, SeoTrackedKeyword.status == "active")
        .group_by(SeoTrackedKeyword.keyword)
        .order_by(func.min(SeoTrackedKeyword.created_at), SeoTrackedKeyword.keyword)
        .limit(limit)
    )
    return [str(keyword) for keyword, _ in (await session.execute(statement)).tuples()]
