"""DataForSEO Labs (Google) as the SERP stand-in (tests/seo/rank/standin.py) also serves it, on
the same loopback base and Basic auth: live endpoints, one task a request, answered with the
envelope, task and result shapes of DataForSEO's documentation (v3, the structure since
2022-03-19):

- `POST /v3/dataforseo_labs/google/related_keywords/live`: result {seed_keyword, items
  [{se_type, keyword_data, depth, related_keywords}]}, the seed itself first at depth 0;
- `POST .../keyword_suggestions/live`: result {seed_keyword, seed_keyword_data (with
  include_seed_keyword), items [keyword data]} of the keywords containing the seed, `filters`
  [["keyword", "regex", pattern]] applied;
- `POST .../keyword_overview/live`: result {items [keyword data]} of the keywords it knows
  (one it has no data for is left out, as DataForSEO does).

Each seed has the ideas `ideas_of` makes of it (a near-duplicate plural among them, some without a
search intent); a test may give a seed its own (`ideas`) and fail a seed's requests (`fail`:
task status 40501, DataForSEO's "Invalid Field"), or leave a keyword out of the overview
(`no_data`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

LABS = "/v3/dataforseo_labs/google"
TASK_COST, ITEM_COST = 0.01, 0.0001
Idea = tuple[str, int, int, str | None]  # keyword, monthly volume, difficulty, main intent


def ideas_of(seed: str) -> list[Idea]:
    return [
        (seed, 5400, 48, "commercial"),
        (f"best {seed}", 2900, 62, "commercial"),
        (f"{seed}s", 880, 47, "commercial"),  # a plural: the seed is kept, this dropped
        (f"buy {seed}", 720, 55, "transactional"),
        (f"how to choose {seed}", 590, 21, "informational"),
        (f"what is {seed}", 480, 12, "informational"),
        (f"{seed} for beginners", 320, 18, None),
        (f"{seed} price", 260, 30, None),
        (f"cheap {seed} online", 140, 25, "transactional"),
        (f"why {seed} matters", 90, 8, "informational"),
    ]


class LabsStandIn:
    def __init__(self) -> None:
        self.own: dict[str, list[Idea]] = {}
        self.failing: set[str] = set()
        self.no_data: set[str] = set()
        self.posted: list[tuple[str, dict[str, Any]]] = []

    def ideas(self, seed: str, ideas: list[Idea]) -> None:
        self.own[seed] = ideas

    def fail(self, *seeds: str) -> None:
        self.failing.update(seeds)

    def sent_for(self, seed: str) -> list[dict[str, Any]]:
        return [
            task
            for _, task in self.posted
            if task.get("keyword") == seed or seed in (task.get("keywords") or [])
        ]

    def _of(self, seed: str) -> list[Idea]:
        return self.own.get(seed) or ideas_of(seed)

    def answer(self, path: str, body: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tasks of a Labs request (one task each)."""
        task = body[0]
        self.posted.append((path, task))
        task_id = str(uuid.uuid4())
        if task.get("keyword") in self.failing:
            return [_task(task_id, path, task, None, status=(40501, "Invalid Field: 'keyword'."))]
        serve: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            f"{LABS}/related_keywords/live": self._related,
            f"{LABS}/keyword_suggestions/live": self._suggestions,
            f"{LABS}/keyword_overview/live": self._overview,
        }
        if path not in serve:
            return [_task(task_id, path, task, None, status=(40400, "Not Found."))]
        return [_task(task_id, path, task, serve[path](task))]

    def _related(self, task: dict[str, Any]) -> dict[str, Any]:
        seed, limit = task["keyword"], int(task.get("limit", 100))
        found = self._of(seed)
        items = [
            {
                "se_type": "google",
                "keyword_data": _data(idea, task),
                "depth": 0 if idea[0] == seed else 1,
                "related_keywords": [other[0] for other in found[1:4] if other != idea],
            }
            for idea in found
        ][:limit]
        return {**_market(task), "seed_keyword": seed, **_counts(len(found), items)}

    def _suggestions(self, task: dict[str, Any]) -> dict[str, Any]:
        seed, limit = task["keyword"], int(task.get("limit", 100))
        found = [idea for idea in self._of(seed) if seed in idea[0] and idea[0] != seed]
        for field, operator, pattern in task.get("filters") or []:
            assert (field, operator) == ("keyword", "regex"), task["filters"]
            found = [idea for idea in found if re.search(pattern, idea[0])]
        items = [_data(idea, task) for idea in found][:limit]
        result = {**_market(task), "seed_keyword": seed, **_counts(len(found), items)}
        own = [idea for idea in self._of(seed) if idea[0] == seed]
        if task.get("include_seed_keyword") and own:
            result["seed_keyword_data"] = _data(own[0], task)
        return result

    def _overview(self, task: dict[str, Any]) -> dict[str, Any]:
        seeds = (*self.own, *task["keywords"])
        known = {idea[0]: idea for seed in seeds for idea in self._of(seed)}
        asked = [word for word in task["keywords"] if word in known and word not in self.no_data]
        items = [_data(known[word], task) for word in asked]
        return {**_market(task), **_counts(len(items), items)}


def _market(task: dict[str, Any]) -> dict[str, Any]:
    return {
        "se_type": "google",
        "location_code": task["location_code"],
        "language_code": task["language_code"],
    }


def _counts(total: int, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"total_count": total, "items_count": len(items), "offset": 0, "items": items}


def _data(idea: Idea, task: dict[str, Any]) -> dict[str, Any]:
    """One keyword's data, as Labs gives it."""
    keyword, volume, difficulty, intent = idea
    months = [(2026, 11 - n) if n < 11 else (2025, 23 - n) for n in range(12)]
    return {
        "se_type": "google",
        "keyword": keyword,
        **_market(task),
        "keyword_info": {
            "se_type": "google",
            "last_updated_time": "2026-12-01 08:10:21 +00:00",
            "competition": round(min(1.0, difficulty / 80), 2),
            "competition_level": "HIGH" if difficulty > 50 else "MEDIUM",
            "cpc": round(0.35 + difficulty / 40, 2),
            "search_volume": volume,
            "low_top_of_page_bid": 0.41,
            "high_top_of_page_bid": 2.96,
            "categories": [10021, 10178],
            "monthly_searches": [
                {"year": year, "month": month, "search_volume": volume + 10 * n}
                for n, (year, month) in enumerate(months)
            ],
            "search_volume_trend": {"monthly": -2, "quarterly": 5, "yearly": 22},
        },
        "clickstream_keyword_info": None,
        "keyword_properties": {
            "se_type": "google",
            "core_keyword": None,
            "synonym_clustering_algorithm": "text_processing",
            "keyword_difficulty": difficulty,
            "detected_language": "en",
            "is_another_language": False,
            "words_count": len(keyword.split()),
        },
        "serp_info": {
            "se_type": "google",
            "check_url": f"https://www.google.com/search?q={keyword.replace(' ', '+')}",
            "serp_item_types": ["organic", "people_also_ask", "related_searches"]
            + (["ai_overview"] if intent == "informational" else []),
            "se_results_count": 1250000,
            "last_updated_time": "2026-11-28 02:15:40 +00:00",
            "previous_updated_time": "2026-10-30 11:02:07 +00:00",
        },
        "avg_backlinks_info": None,
        "search_intent_info": None
        if intent is None
        else {
            "se_type": "google",
            "main_intent": intent,
            "foreign_intent": ["commercial"] if intent == "informational" else None,
            "last_updated_time": "2026-06-12 09:41:36 +00:00",
        },
    }


def _task(
    task_id: str,
    path: str,
    data: dict[str, Any],
    result: dict[str, Any] | None,
    *,
    status: tuple[int, str] = (20000, "Ok."),
) -> dict[str, Any]:
    items = len(result["items"]) if result else 0
    return {
        "id": task_id,
        "status_code": status[0],
        "status_message": status[1],
        "time": "0.4127 sec.",
        "cost": round(TASK_COST + ITEM_COST * items, 4) if result else 0,
        "result_count": 1 if result else 0,
        "path": path.strip("/").split("/"),
        "data": {"api": "dataforseo_labs", "function": path.split("/")[-2], **data},
        "result": [result] if result else None,
    }
