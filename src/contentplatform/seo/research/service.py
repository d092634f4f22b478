"""seo.researchKeywords: keyword ideas (or metrics) for seeds in a market. Never commits the
request's transaction.

Where ideas come from, in order:

1. **The 30-day store**: the same request (mode, normalized seeds, limit) in the same market,
   answered by the provider less than 30 days ago: `cached` true, nothing charged.
2. **The keyword provider**, DataForSEO Labs over the `dataforseo` connection (labs.py): its
   credits (kind `seo.researchKeywords`, one per provider request: a seed's ideas, or the
   seeds' metrics) are held under the idempotency key in a transaction of their own, so no
   lock is kept while the provider answers and a crash leaves only a hold that expires; the
   requests that succeeded are committed, the rest given back; the answer is stored when every
   request succeeded (a partial one is answered, not kept). Every request failed: 503, nothing
   charged. A key already spent on an answer no longer kept: 409.
3. **The organization's Search Console queries** (the selected property's stored rows of the
   last 90 days, summed in the database, web search), free: related, queries containing a
   word of a seed; matching, containing a whole seed; questions, starting with a question word
   and containing a word of a seed; metrics, the seeds themselves. search_volume is the
   monthly average of their impressions (a demand proxy, `estimate` true); difficulty, CPC,
   competition and SERP features are unknown. Source `search_console`.
4. **Neither**: source `offline`: no idea in the idea modes (nothing to suggest from), the
   seeds themselves with unknown figures in metrics mode (their intent and our positions are
   still known).

Then, whatever the source: de-duplicated (metrics: one per seed asked, none merged: they were
asked for by name), given an intent (ideas.py), joined to our rank
tracking (our_position: the best position of the keyword's tracked devices in this market at
their newest check, read from the tracked keywords' rows; tracked), filtered, sorted and cut to
the limit. planned_in stays null until SEO Plans exist.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.credits import pricing
from contentplatform.credits import service as credits
from contentplatform.credits.errors import ReservationSettled
from contentplatform.kit.db import utcnow
from contentplatform.seo import repository as seo_repository
from contentplatform.seo import service as seo
from contentplatform.seo.connections import access as connections
from contentplatform.seo.rank import provider
from contentplatform.seo.rank import service as rank
from contentplatform.seo.research import ideas, labs, repository, schemas
from contentplatform.seo.research.errors import KeywordProviderFailed, ResearchKeyUsed
from contentplatform.seo.search_console import service as search_console

KIND = pricing.KEYWORD_RESEARCH
CACHE_DAYS = 30
SEARCH_CONSOLE_DAYS = 90
# Provider requests in flight at once for one research (at most 20 seeds).
CONCURRENCY = 4
# Stored queries read per research: room for de-duplication and the filters past the limit.
OVERREAD = 2


def request_hash(mode: str, seeds: list[str], limit: int) -> str:
    """What identifies a request in the store: its mode, its seeds (normalized, in any order)
    and its limit."""
    key = json.dumps({"mode": mode, "seeds": sorted(seeds), "limit": limit}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()


async def research(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.ResearchKeywordsInput,
) -> schemas.KeywordResearch:
    # Read without writing: the provider's credits are held in transactions of their own,
    # which a write of this one (the settings' first read makes a row) would wait for.
    profile = await seo_repository.stored_settings(session, tenant_id)
    location = data.location_code or (profile.location_code if profile else None)
    location = location or rank.DEFAULT_LOCATION
    language = data.language_code or (profile.language if profile else None)
    language = language or rank.DEFAULT_LANGUAGE
    key = request_hash(data.mode, data.seeds, data.limit)
    source: schemas.Source = "dataforseo"
    found = await repository.cached(
        session, tenant_id, location, language, key, utcnow() - timedelta(days=CACHE_DAYS)
    )
    cached, spent = found is not None, 0
    if found is not None:
        pool = list(found.ideas)
    else:
        connected = await connections.serp_provider(session, tenant_id, settings)
        if connected is not None and connected[0] == connections.DATAFORSEO:
            pool, spent = await _from_provider(
                settings, tenant_id, data, location, language, key, connected[1] or {}
            )
        else:
            source, pool = await _from_search_console(session, tenant_id, data)
    brands = ideas.brand_names(
        await seo.brand_terms(session, tenant_id), profile.site_url if profile else None
    )
    if data.mode == "metrics":
        # Each seed asked about, as given: one the source knows nothing of has unknown figures.
        known = {idea["keyword"]: idea for idea in pool}
        pool = ideas.ordered(known.get(seed) or _estimated(seed, None) for seed in data.seeds)
    else:
        pool = ideas.dedupe(pool)
    pool = [ideas.with_intent(idea, brands) for idea in pool]
    if data.mode == "questions":
        pool = [idea for idea in pool if labs.is_question(idea["keyword"])]
    kept = [
        idea
        for idea in pool
        if ideas.passes(idea, data.min_volume, data.max_difficulty, data.intents)
    ]
    shown = kept[: data.limit]
    positions = await _positions(session, tenant_id, location, language, shown)
    return schemas.KeywordResearch(
        data=[
            schemas.KeywordIdea(
                **idea,
                estimate=source == "search_console",
                our_position=positions.get(idea["keyword"], (None, False))[0],
                tracked=positions.get(idea["keyword"], (None, False))[1],
            )
            for idea in shown
        ],
        total=len(kept),
        source=source,
        cached=cached,
        credits_used=spent,
    )


async def _positions(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    location: int,
    language: str,
    shown: list[dict[str, Any]],
) -> dict[str, tuple[int | None, bool]]:
    """(our best position, tracked) of each idea tracked in this market."""
    found: dict[str, tuple[int | None, bool]] = {}
    keywords = [idea["keyword"] for idea in shown]
    for keyword, position in await repository.tracked(
        session, tenant_id, location, language, keywords
    ):
        best = found.get(keyword, (None, True))[0]
        if position is not None and (best is None or position < best):
            best = position
        found[keyword] = (best, True)
    return found


# --- the keyword provider ---------------------------------------------------------------------


async def _from_provider(
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.ResearchKeywordsInput,
    location: int,
    language: str,
    key: str,
    credentials: dict[str, Any],
) -> tuple[list[dict[str, Any]], int]:
    """The provider's ideas and the credits they cost."""
    db = runtime.current().db
    calls = labs.requests_of(data.mode, data.seeds, location, language, data.limit)
    spent = ResearchKeyUsed(
        "This idempotencyKey was already spent on another research, or on one whose answer is "
        "not kept: send another key."
    )
    try:
        async with db.unit_of_work() as own:
            hold = await credits.reserve(
                own,
                tenant_id,
                kind=KIND,
                idempotency_key=f"{KIND}:{data.idempotency_key or uuid.uuid4()}"[
                    : credits.MAX_KEY_LENGTH
                ],
                amount=len(calls),
                monthly_grant=settings.monthly_credit_grant,
                creator=credits.Creator(resource_type="seo_keyword_research", resource_id=key),
            )
    except ReservationSettled:
        raise spent from None  # the key holds another amount: another request's
    if hold.status != "held":
        raise spent
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(call: labs.Request) -> list[dict[str, Any]] | provider.Failed:
        async with gate:
            return await labs.send(settings, credentials, call)

    # No transaction is held while the provider answers.
    answers = await asyncio.gather(*(one(call) for call in calls))
    succeeded = [answer for answer in answers if not isinstance(answer, provider.Failed)]
    failures = [answer for answer in answers if isinstance(answer, provider.Failed)]
    pool = [idea for answer in succeeded for idea in answer]
    async with db.unit_of_work() as own:
        if not succeeded:
            await credits.release(own, tenant_id, hold.id)
        else:
            await credits.commit(
                own,
                tenant_id,
                hold.id,
                len(succeeded),
                description=f"seo.researchKeywords: {len(succeeded)} DataForSEO Labs requests "
                f"({data.mode})",
            )
            if not failures:
                await repository.store(
                    own,
                    tenant_id,
                    {
                        "location_code": location,
                        "language_code": language,
                        "request_hash": key,
                        "mode": data.mode,
                        "seeds": list(data.seeds),
                        "limit": data.limit,
                        "source": "dataforseo",
                        "ideas": pool,
                        "credits_used": len(succeeded),
                        "fetched_at": utcnow(),
                    },
                )
    if not succeeded:
        raise KeywordProviderFailed(
            f"DataForSEO answered no request ({failures[0].code}: {failures[0].message}); "
            "nothing was charged."
        )
    return pool, len(succeeded)


# --- the organization's Search Console queries ------------------------------------------------


async def _from_search_console(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ResearchKeywordsInput
) -> tuple[schemas.Source, list[dict[str, Any]]]:
    chosen = await search_console.selected_property(session, tenant_id)
    if chosen is None or chosen.fresh_through is None:
        return "offline", []
    last = chosen.fresh_through
    first = last - timedelta(days=SEARCH_CONSOLE_DAYS - 1)
    words = ideas.tokens(data.seeds)
    matches: dict[str, dict[str, Any]] = {
        "related": {"containing": words},
        "matching": {"containing": data.seeds},
        "questions": {"containing": words, "starting": labs.QUESTION_WORDS},
        "metrics": {"exact": data.seeds},
    }
    rows = await repository.queries(
        session,
        tenant_id,
        chosen.id,
        first,
        last,
        limit=data.limit * OVERREAD,
        **matches[data.mode],
    )
    return "search_console", [_estimated(query, impressions) for query, impressions in rows]


def _estimated(keyword: str, impressions: int | None) -> dict[str, Any]:
    """An idea from Search Console: its 90 days of impressions as a monthly figure."""
    monthly = None if impressions is None else math.ceil(impressions * 30 / SEARCH_CONSOLE_DAYS)
    return {
        "keyword": keyword,
        "search_volume": monthly,
        "keyword_difficulty": None,
        "cpc": None,
        "competition": None,
        "intent": None,
        "secondary_intents": [],
        "monthly_searches": [],
        "serp_features": [],
    }
