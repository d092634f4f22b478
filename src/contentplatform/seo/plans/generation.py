"""A plan's generation: the stored signals gathered into candidates (never a provider call),
then planner.py's steps and writer.py's items, written onto the plan in one transaction
(durable.py runs it). Never commits.

Signals, each read as stored:

- `search_console`: the selected property's web query rows of the 28 final days (ending 3 days
  ago), per query: clicks, impressions, average position, and the page that earned most.
- `rank`: active tracked keywords, their volume, difficulty, intent, newest position and URL,
  and the top-10 URLs of their newest stored SERP (for clustering).
- `keyword_research`: the ideas of keyword research kept in the last 30 days.
- `actions`: open SEO actions of a content type (create_content, target_striking_distance,
  improve_snippet, refresh_content -> a refresh item; close_ai_gap, improve_geo -> a geo item);
  the item keeps the action's id.
- `knowledge`: YAKE! key terms of the organization's ready knowledge documents (documentIds, else
  every ready one, the primary first, at most 20), each term a candidate; the terms also make
  the knowledge-relevance score and the briefs' grounding sentences.
- `ai_visibility`: accepted, and reads nothing until AI visibility exists (issue 45).

Competitors' pages are not a signal yet: no competitor page store exists (only their positions
on our tracked keywords' SERPs, which clustering already reads).
"""

from __future__ import annotations

import calendar
import uuid
from collections import defaultdict
from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.kit.db import utcnow
from contentplatform.seo import service as seo
from contentplatform.seo.models import SeoPlan, SeoPlanItem
from contentplatform.seo.plans import planner, repository, writer
from contentplatform.seo.plans.planner import Candidate
from contentplatform.seo.research.ideas import brand_names, classify
from contentplatform.seo.search_console import service as search_console
from contentplatform.tenants import service as tenants

RECENT_DAYS = 183  # "targeted in the last 6 months"
RESEARCH_DAYS = 30
CONSOLE_DAYS = 28
FINAL_LAG_DAYS = 3
MIN_IMPRESSIONS = 10
MAX_CANDIDATES_PER_SOURCE = 500
TERMS_PER_DOCUMENT = 8
ACTION_KINDS = {
    "create_content": "new",
    "target_striking_distance": "refresh",
    "improve_snippet": "refresh",
    "refresh_content": "refresh",
    "close_ai_gap": "geo",
    "improve_geo": "geo",
}


class NoPublishDay(Exception):
    """No publish weekday of the month is left (after today, blackout dates aside)."""


async def _search_console(
    session: AsyncSession, tenant_id: uuid.UUID, today: date
) -> tuple[list[Candidate], set[str]]:
    """Candidates of the queries, and the queries we rank top 3 for."""
    selected = await search_console.selected_property(session, tenant_id)
    if selected is None:
        return [], set()
    end = today - timedelta(days=FINAL_LAG_DAYS)
    start = end - timedelta(days=CONSOLE_DAYS - 1)
    by_query: dict[str, list[tuple[str, int, int, float]]] = defaultdict(list)
    for query, page, clicks, impressions, position_sum in await repository.query_rows(
        session, tenant_id, selected.id, start, end
    ):
        by_query[planner.normalize(query)].append((page, clicks, impressions, position_sum))
    found, top = [], set()
    for keyword, rows in sorted(by_query.items()):
        impressions = sum(row[2] for row in rows)
        if not keyword or impressions < MIN_IMPRESSIONS:
            continue
        clicks = sum(row[1] for row in rows)
        position = round(sum(row[3] for row in rows) / impressions, 1)
        if position <= planner.TOP_POSITION:
            top.add(keyword)
            continue
        page = sorted(rows, key=lambda row: (-row[1], -row[2], row[0]))[0][0]
        found.append(
            Candidate(
                keyword=keyword,
                source="search_console",
                sources=["search_console"],
                kind="refresh" if position <= 20 else "new",
                impressions=impressions,
                clicks=clicks,
                position=position,
                url=page if position <= 20 else None,
                evidence={
                    "search_console": {
                        "impressions": impressions,
                        "clicks": clicks,
                        "position": position,
                        "page": page,
                        "days": CONSOLE_DAYS,
                    }
                },
            )
        )
    found.sort(key=lambda c: (-c.impressions, c.keyword))
    return found[:MAX_CANDIDATES_PER_SOURCE], top


async def _rank(session: AsyncSession, tenant_id: uuid.UUID) -> tuple[list[Candidate], set[str]]:
    rows = await repository.tracked(session, tenant_id)
    serps = await repository.serp_urls(session, tenant_id, [row.id for row in rows])
    found, top = [], set()
    for row in rows:
        keyword = planner.normalize(row.keyword)
        if row.position is not None and row.position <= planner.TOP_POSITION:
            top.add(keyword)
            continue
        found.append(
            Candidate(
                keyword=keyword,
                source="rank",
                sources=["rank"],
                kind="refresh" if row.position is not None and row.url else "new",
                intent=row.intent,
                search_volume=row.search_volume,
                keyword_difficulty=row.keyword_difficulty,
                cpc=row.cpc,
                position=row.position,
                url=row.url if row.position is not None else None,
                tracked=True,
                serp=serps.get(row.id, []),
                evidence={"rank": {"keyword_id": str(row.id), "position": row.position}},
            )
        )
    return found[:MAX_CANDIDATES_PER_SOURCE], top


async def _research(session: AsyncSession, tenant_id: uuid.UUID) -> list[Candidate]:
    since = utcnow() - timedelta(days=RESEARCH_DAYS)
    found = []
    for idea in await repository.research_ideas(session, tenant_id, since):
        keyword = planner.normalize(str(idea.get("keyword") or ""))
        if not keyword:
            continue
        volume, difficulty, cpc = (
            idea.get("search_volume"),
            idea.get("keyword_difficulty"),
            idea.get("cpc"),
        )
        found.append(
            Candidate(
                keyword=keyword,
                source="keyword_research",
                sources=["keyword_research"],
                intent=idea.get("intent") if isinstance(idea.get("intent"), str) else None,
                search_volume=int(volume) if isinstance(volume, int | float) else None,
                keyword_difficulty=int(difficulty) if isinstance(difficulty, int | float) else None,
                cpc=float(cpc) if isinstance(cpc, int | float) else None,
                evidence={"keyword_research": {"search_volume": volume}},
            )
        )
    return found[:MAX_CANDIDATES_PER_SOURCE]


async def _actions(session: AsyncSession, tenant_id: uuid.UUID) -> list[Candidate]:
    found = []
    for row in await repository.open_actions(session, tenant_id, tuple(ACTION_KINDS)):
        keyword = planner.normalize(row.keywords[0] if row.keywords else row.title)
        if not keyword:
            continue
        kind = ACTION_KINDS[row.type]
        url = row.target_urls[0] if row.target_urls else None
        if kind == "refresh" and url is None:
            kind = "new"
        found.append(
            Candidate(
                keyword=keyword,
                source="actions",
                sources=["actions"],
                kind=kind,
                url=url,
                action_id=str(row.id),
                action_title=row.title,
                action_impact=row.impact_score,
                evidence={"action": {"id": str(row.id), "type": row.type, "title": row.title}},
            )
        )
    return found[:MAX_CANDIDATES_PER_SOURCE]


async def _knowledge(
    session: AsyncSession, tenant_id: uuid.UUID, document_ids: list[str] | None
) -> list[writer.Knowledge]:
    ids = [uuid.UUID(value) for value in document_ids] if document_ids is not None else None
    found = []
    for document_id, filename, text in await documents.knowledge_texts(session, tenant_id, ids):
        terms = tuple(writer.key_terms(text, TERMS_PER_DOCUMENT))
        found.append(writer.Knowledge(str(document_id), filename, text, terms))
    return found


def _from_knowledge(knowledge: list[writer.Knowledge]) -> list[Candidate]:
    return [
        Candidate(
            keyword=planner.normalize(term),
            source="knowledge",
            sources=["knowledge"],
            document_ids=[document.document_id],
            evidence={"document": document.filename, "document_id": document.document_id},
        )
        for document in knowledge
        for term in document.terms
    ]


async def build(session: AsyncSession, tenant_id: uuid.UUID, plan: SeoPlan) -> int:
    """Write the plan's generated items (regenerating: beside those kept); how many it wrote.
    Raises NoPublishDay when the month has no publish day left."""
    params: dict[str, Any] = plan.params
    timezone = await tenants.timezone_of(session, tenant_id)
    today = utcnow().astimezone(ZoneInfo(timezone)).date()
    signals = set(params.get("signals") or [])
    existing = await repository.items(session, tenant_id, plan.id, for_update=True)
    keep_accepted = bool(params.get("keep_accepted", True))
    kept = [
        row
        for row in existing
        if row.locked or row.source == "manual" or (keep_accepted and row.status == "accepted")
    ]
    rejected = {row.primary_keyword for row in existing if row.status == "rejected"}
    rejected |= set(params.get("rejected_keywords") or [])
    for row in existing:
        if row not in kept:
            await session.delete(row)
    await session.flush()
    params = {**params, "rejected_keywords": sorted(rejected)}

    settings = await seo.get(session, tenant_id)
    brands = brand_names(
        settings.brand_terms + ([settings.brand_name] if settings.brand_name else []),
        settings.site_url,
    )
    pool: list[Candidate] = []
    top: set[str] = set()
    used: list[str] = []
    knowledge: list[writer.Knowledge] = []
    if "search_console" in signals:
        found, ranked = await _search_console(session, tenant_id, today)
        pool += found
        top |= ranked
        if found or ranked:
            used.append("search_console")
    if "rank" in signals:
        found, ranked = await _rank(session, tenant_id)
        pool += found
        top |= ranked
        if found or ranked:
            used.append("rank")
    if "actions" in signals:
        found = await _actions(session, tenant_id)
        pool += found
        if found:
            used.append("actions")
    if "keyword_research" in signals:
        found = await _research(session, tenant_id)
        pool += found
        if found:
            used.append("keyword_research")
    if "knowledge" in signals:
        knowledge = await _knowledge(session, tenant_id, params.get("document_ids"))
        found = _from_knowledge(knowledge)
        pool += found
        if found:
            used.append("knowledge")

    candidates = planner.merged(pool)
    since = utcnow() - timedelta(days=RECENT_DAYS)
    recent = await repository.recent_keywords(session, tenant_id, since, plan.id)
    titles = await drafts.titles_since(session, tenant_id, since)
    excluded = {planner.normalize(k) for k in params.get("exclude_keywords") or []}
    excluded |= {row.primary_keyword for row in kept} | rejected
    knowledge_stems = {stem for d in knowledge for term in d.terms for stem in planner.stems(term)}
    focus = [planner.stems(topic) for topic in params.get("focus_topics") or []]
    eligible = []
    for keyword, candidate in sorted(candidates.items()):
        if keyword in top or keyword in recent or keyword in excluded:
            continue
        if any(keyword == e or keyword.startswith(e + " ") for e in excluded if e):
            continue
        if planner.covered_by_titles(keyword, titles):
            continue
        if candidate.intent is None:
            candidate.intent = classify(keyword, brands)[0]
        if candidate.intent == "navigational":
            continue  # the brand's own pages answer those
        candidate.score = planner.score(candidate, knowledge_stems, focus)
        eligible.append(candidate)

    count = max(0, int(params.get("item_count") or 0) - len(kept))
    groups = planner.pick(planner.clusters(eligible), count, params.get("content_mix") or {})
    year, month = (int(part) for part in plan.month.split("-"))
    days = planner.publish_days(
        year,
        month,
        params.get("publish_weekdays") or ["tue", "thu"],
        [date.fromisoformat(day) for day in params.get("blackout_dates") or []],
        today,
    )
    if count and not days:
        raise NoPublishDay(
            f"No publish weekday ({', '.join(params.get('publish_weekdays') or [])}) of "
            f"{plan.month} is left after {today.isoformat()}."
        )
    month_name = f"{calendar.month_name[month]} {year}"
    ordinals: dict[date, int] = defaultdict(int)
    for row in kept:
        ordinals[row.target_date] = max(ordinals[row.target_date], row.position + 1)
    for group, day in zip(groups, planner.spread(len(groups), days), strict=True):
        head = group[0]
        documents_of = list(dict.fromkeys(d for member in group for d in member.document_ids))
        session.add(
            SeoPlanItem(
                id=uuid.uuid4(),
                tenant_id=tenant_id,
                plan_id=plan.id,
                title=writer.title(head, month_name),
                primary_keyword=head.keyword,
                secondary_keywords=[member.keyword for member in group[1:11]],
                kind=head.kind,
                intent=head.intent,
                target_date=day,
                target_url=head.url if head.kind == "refresh" else None,
                search_volume=head.search_volume,
                keyword_difficulty=head.keyword_difficulty,
                cpc=head.cpc,
                opportunity_score=head.score,
                source=head.source,
                rationale=writer.rationale(head),
                evidence={**head.evidence, "sources": head.sources, "cluster_size": len(group)},
                brief=writer.brief(head, group, knowledge),
                forecast=planner.forecast(head),
                document_ids=documents_of[:50],
                seo_action_id=uuid.UUID(head.action_id) if head.action_id else None,
                cluster=head.keyword,
                locked=False,
                status="proposed",
                position=ordinals[day],
            )
        )
        ordinals[day] += 1
    plan.params = params
    plan.signals_used = used
    await session.flush()
    return len(groups)
