"""DataForSEO Labs API v3 (Google), the keyword provider of seo.researchKeywords, called through
rank/provider.py's `request` (Basic auth from the `dataforseo` connection, the guarded client,
`dataforseo_api_base`). Live endpoints, one task a request (Labs takes one per live call):

- related: `POST /v3/dataforseo_labs/google/related_keywords/live` {keyword, location_code,
  language_code, depth, limit, include_serp_info}: the seed's "searches related to" graph,
  `depth` hops (1: at most 8 keywords, 2: 72, 3: 584, 4: 4680; the smallest that covers the
  limit, as each hop costs); items [{keyword_data: {...}, depth, related_keywords}];
- matching: `POST .../keyword_suggestions/live` {keyword, location_code, language_code, limit,
  include_seed_keyword, include_serp_info}: keywords containing the seed; items are the data,
  the seed's own in `seed_keyword_data`;
- questions: keyword_suggestions with `filters` [["keyword", "regex", QUESTION_PATTERN]], so
  only questions come back (and are paid for); the answer is held to the pattern here too;
- metrics: `POST .../keyword_overview/live` {keywords (<= 700), location_code, language_code,
  include_serp_info}: the seeds' own data, one request for all.

A keyword's data: keyword_info {search_volume, cpc, competition (0-1), monthly_searches
[{year, month, search_volume}]}, keyword_properties {keyword_difficulty (0-100)}, serp_info
{serp_item_types}, search_intent_info {main_intent, foreign_intent} (DataForSEO's intents are
ours: informational, navigational, commercial, transactional). Statuses as rank/provider.py
reads them: a request-level failure raises there, a task-level one is that request's Failed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from contentplatform.config import Settings
from contentplatform.seo.rank import provider
from contentplatform.seo.rank.schemas import keyword_of
from contentplatform.seo.research.schemas import INTENTS

LABS = "/v3/dataforseo_labs/google"
PATHS = {
    "related": f"{LABS}/related_keywords/live",
    "matching": f"{LABS}/keyword_suggestions/live",
    "questions": f"{LABS}/keyword_suggestions/live",
    "metrics": f"{LABS}/keyword_overview/live",
}
QUESTION_WORDS = (
    "how", "what", "why", "when", "where", "who", "whom", "whose", "which", "can", "could",
    "does", "do", "did", "is", "are", "was", "were", "should", "will", "would",
)  # fmt: skip
QUESTION_PATTERN = rf"^({'|'.join(QUESTION_WORDS)})\s"
# Keywords at most `depth` hops of "searches related to" give (DataForSEO's figures).
RELATED_DEPTHS = ((1, 8), (2, 72), (3, 584), (4, 4680))


@dataclass(frozen=True)
class Request:
    """One live call: its path and its one task."""

    path: str
    task: dict[str, Any]


def requests_of(
    mode: str, seeds: list[str], location_code: int, language_code: str, limit: int
) -> list[Request]:
    """The calls a research makes: one per seed, each for its share of the limit (metrics: one
    for every seed). How many there are is what the research holds credits for."""
    market = {"location_code": location_code, "language_code": language_code}
    if mode == "metrics":
        return [Request(PATHS[mode], {"keywords": seeds, **market, "include_serp_info": True})]
    share = min(1000, math.ceil(limit / len(seeds)))
    found = []
    for seed in seeds:
        task: dict[str, Any] = {"keyword": seed, **market, "limit": share}
        task["include_serp_info"] = True
        if mode == "related":
            task["depth"] = next((d for d, most in RELATED_DEPTHS if most >= share), 4)
        else:
            task["include_seed_keyword"] = mode == "matching"
        if mode == "questions":
            task["filters"] = [["keyword", "regex", QUESTION_PATTERN]]
        found.append(Request(PATHS[mode], task))
    return found


def is_question(keyword: str) -> bool:
    return re.match(QUESTION_PATTERN, keyword) is not None


async def send(
    settings: Settings, credentials: dict[str, Any], request: Request
) -> list[dict[str, Any]] | provider.Failed:
    """The ideas one call answers (each as KeywordIdea's provider fields), or why it failed."""
    try:
        tasks = await provider.request(settings, credentials, "POST", request.path, [request.task])
    except provider.RequestFailed as error:
        return provider.Failed(error.code, error.message)
    if not tasks:
        return provider.Failed("invalid_response", "DataForSEO answered no task.")
    task = tasks[0]
    if task.get("status_code") != provider.OK:
        return provider.Failed(
            str(task.get("status_code") or "invalid_response"),
            str(task.get("status_message") or "The task failed.")[:500],
        )
    ideas = []
    for result in task.get("result") or []:
        if not isinstance(result, dict):
            continue
        # keyword_suggestions gives the seed's own data apart (include_seed_keyword).
        items = list(result.get("items") or [])
        if isinstance(result.get("seed_keyword_data"), dict):
            items.insert(0, result["seed_keyword_data"])
        for item in items:
            if not isinstance(item, dict):
                continue
            # related_keywords nests the data; the other endpoints answer it flat.
            nested = item.get("keyword_data")
            idea = idea_of(nested if isinstance(nested, dict) else item)
            if idea is not None:
                ideas.append(idea)
    return ideas


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return round(value)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _monthly(value: Any) -> list[dict[str, Any]]:
    """monthly_searches, newest first: DataForSEO's list [{year, month, search_volume}] (or a
    {"YYYY-MM": volume} object, as some of its answers give it)."""
    points: list[dict[str, Any]] = []
    if isinstance(value, dict):
        value = [
            {"year": key[:4], "month": key[5:7], "search_volume": volume}
            for key, volume in value.items()
            if isinstance(key, str) and len(key) == 7
        ]
    for point in value if isinstance(value, list) else []:
        if not isinstance(point, dict):
            continue
        try:
            year, month = int(point["year"]), int(point["month"])
        except (KeyError, TypeError, ValueError):
            continue
        if 1 <= month <= 12:
            points.append(
                {"year": year, "month": month, "volume": _int(point.get("search_volume"))}
            )
    return sorted(points, key=lambda point: (point["year"], point["month"]), reverse=True)[:24]


def idea_of(data: dict[str, Any]) -> dict[str, Any] | None:
    """One keyword's data as an idea (our fields, but ours to join), None when it names no
    keyword we would accept (blank, longer than 100 characters, markup)."""
    try:
        keyword = keyword_of(str(data.get("keyword") or ""))
    except ValueError:
        return None
    info = _dict(data.get("keyword_info"))
    intent = _dict(data.get("search_intent_info"))
    main = intent.get("main_intent") if intent.get("main_intent") in INTENTS else None
    foreign = intent.get("foreign_intent")
    foreign = foreign if isinstance(foreign, list) else []
    kinds = _dict(data.get("serp_info")).get("serp_item_types")
    difficulty = _int(_dict(data.get("keyword_properties")).get("keyword_difficulty"))
    return {
        "keyword": keyword,
        "search_volume": _int(info.get("search_volume")),
        "keyword_difficulty": None if difficulty is None else max(0, min(100, difficulty)),
        "cpc": _float(info.get("cpc")),
        "competition": _float(info.get("competition")),
        "intent": main,
        "secondary_intents": [kind for kind in INTENTS if kind in foreign and kind != main],
        "monthly_searches": _monthly(info.get("monthly_searches")),
        "serp_features": sorted(
            {kind for kind in kinds or [] if isinstance(kind, str) and kind != "organic"}
        ),
    }
