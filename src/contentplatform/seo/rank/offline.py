"""The `offline` SERP provider, local environment only: made-up results pages, labelled as
such (every title starts with LABEL; other sites are under `offline.example`), answered at
once and sending nothing anywhere.

Deterministic: the same keyword, market, device and day give the same page (random.Random
seeded with them, which Python hashes with SHA-512, so the same in every process). Our site
ranks for about two keywords in three, somewhere in the first 30; each competitor for about
half; a featured snippet, People Also Ask and an AI Overview (citing us now and then) show
on some.
"""

from __future__ import annotations

import random
from datetime import date
from typing import Any

from contentplatform.seo.connections.providers import OFFLINE_LABEL
from contentplatform.seo.rank.provider import Result, Task

LABEL = OFFLINE_LABEL
OFFLINE_SITE = "offline.example"


def serp(task: Task, own_host: str | None, competitor_hosts: list[str], day: date) -> Result:
    """The made-up SERP of `task` on `day`."""
    rng = random.Random(
        f"{task.keyword}:{task.location_code}:{task.language_code}:{task.device}:{day}"
    )
    own = own_host or OFFLINE_SITE
    placed: dict[int, str] = {}
    if rng.random() < 0.66:
        placed[rng.randint(1, 30)] = own
    for host in competitor_hosts:
        if rng.random() < 0.5:
            spot = rng.randint(1, 50)
            placed.setdefault(spot, host)
    slug = task.keyword.replace(" ", "-")
    items: list[dict[str, Any]] = []
    absolute = 0
    types: list[str] = []
    if rng.random() < 0.4:
        absolute += 1
        source = own if rng.random() < 0.3 else "wiki.offline.example"
        items.append(
            {
                "type": "ai_overview",
                "rank_group": 1,
                "rank_absolute": absolute,
                "title": f"{LABEL}: AI Overview",
                "references": [{"domain": source, "url": f"https://{source}/{slug}"}],
            }
        )
        types.append("ai_overview")
    for position in range(1, task.depth + 1):
        if position == 4 and rng.random() < 0.5:
            absolute += 1
            items.append(
                {
                    "type": "people_also_ask",
                    "rank_group": 1,
                    "rank_absolute": absolute,
                    "title": f"{LABEL}: People also ask",
                }
            )
            types.append("people_also_ask")
        host = placed.get(position, f"site{position}.offline.example")
        absolute += 1
        items.append(
            {
                "type": "organic",
                "rank_group": position,
                "rank_absolute": absolute,
                "domain": host,
                "url": f"https://{host}/{slug}",
                "title": f"{LABEL}: {task.keyword} #{position}",
            }
        )
        # Stopping at our domain ends the read at the end of the page we show on.
        shown = any(found == own and spot <= position for spot, found in placed.items())
        if task.stop_at and position % 10 == 0 and shown:
            break
    types.append("organic")
    pages = (max(item["rank_group"] for item in items if item["type"] == "organic") + 9) // 10
    return Result(items=items, item_types=list(dict.fromkeys(types)), pages_count=pages)
