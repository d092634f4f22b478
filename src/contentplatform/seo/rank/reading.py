"""What one SERP says about us and our competitors: our organic position and URL (the first
organic result on our domain; `rank_group`, the position among organic results, as rank
trackers count it), each competitor's, the SERP features, the AI Overview and whether it
cites us, and cannibalization (two or more of our URLs on the one SERP). Items are kept
trimmed to what seo.getKeywordSerp shows, each with its owner.

A domain is ours (or a competitor's) when it is the domain or a subdomain of it; our domain
is the SEO profile's site_url host without `www.`.

With stop-at-own-domain, the provider stops reading at the page we show on: a competitor not
seen by then has an unknown position (`known` false), not "not ranking".
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from contentplatform.seo.rank.provider import Result

MAX_TITLE = 300
MAX_URL = 2048
MAX_REFERENCES = 20


@dataclass(frozen=True)
class Reading:
    position: int | None
    url: str | None
    serp_features: list[str]
    ai_overview_present: bool
    ai_overview_cited: bool
    competitors: list[dict[str, Any]]
    cannibalization: list[dict[str, Any]]
    items: list[dict[str, Any]]
    item_types: list[str]
    stopped: bool
    pages: int


def owns(domain: str | None, host: str) -> bool:
    if not domain or not host:
        return False
    domain = domain.lower().rstrip(".")
    return domain == host or domain.endswith(f".{host}")


def _text(value: Any, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Owners:
    """Who a domain belongs to: us (`self`), one of the competitors, or `other`."""

    def __init__(self, own_host: str | None, competitors: dict[str, uuid.UUID]) -> None:
        self.own = (own_host or "").lower().removeprefix("www.")
        self.competitors = competitors

    def of(self, domain: str | None) -> tuple[str, uuid.UUID | None]:
        if owns(domain, self.own):
            return "self", None
        for host, competitor_id in self.competitors.items():
            if owns(domain, host):
                return "competitor", competitor_id
        return "other", None


def _references(item: dict[str, Any], owners: Owners) -> list[dict[str, Any]]:
    """An item's references (an AI Overview's sources), nested items' too."""
    found: list[dict[str, Any]] = []
    sources = [item, *[part for part in item.get("items") or [] if isinstance(part, dict)]]
    for source in sources:
        for reference in source.get("references") or []:
            if isinstance(reference, dict) and len(found) < MAX_REFERENCES:
                domain = _text(reference.get("domain"), 253)
                found.append(
                    {
                        "url": _text(reference.get("url"), MAX_URL),
                        "domain": domain,
                        "owner": owners.of(domain)[0],
                    }
                )
    return found


def read(result: Result, owners: Owners, depth: int, stop_at_own_domain: bool) -> Reading:
    items: list[dict[str, Any]] = []
    ours: list[dict[str, Any]] = []
    seen: dict[uuid.UUID, dict[str, Any]] = {}
    deepest = 0
    for raw in result.items:
        kind = _text(raw.get("type"), 50) or "unknown"
        domain = _text(raw.get("domain"), 253)
        owner, competitor_id = owners.of(domain)
        rank = _int(raw.get("rank_group"))
        url = _text(raw.get("url"), MAX_URL)
        item: dict[str, Any] = {
            "type": kind,
            "rank_group": rank,
            "rank_absolute": _int(raw.get("rank_absolute")),
            "title": _text(raw.get("title"), MAX_TITLE),
            "url": url,
            "domain": domain,
            "owner": owner,
            "competitor_id": str(competitor_id) if competitor_id else None,
            "references": _references(raw, owners),
        }
        items.append(item)
        if kind != "organic" or rank is None:
            continue
        deepest = max(deepest, rank)
        if owner == "self" and url:
            ours.append({"url": url, "position": rank})
        elif competitor_id is not None and competitor_id not in seen:
            seen[competitor_id] = {"position": rank, "url": url}
    types = list(dict.fromkeys(result.item_types or [item["type"] for item in items]))
    ai = [item for item in items if item["type"] == "ai_overview"]
    first = ours[0] if ours else None
    # Stopped early: our domain was found before the depth asked for was read.
    stopped = stop_at_own_domain and first is not None and deepest < depth
    competitors = [
        {
            "competitor_id": str(competitor_id),
            "position": seen[competitor_id]["position"] if competitor_id in seen else None,
            "url": seen[competitor_id]["url"] if competitor_id in seen else None,
            "known": competitor_id in seen or not stopped,
        }
        for competitor_id in owners.competitors.values()
    ]
    pages_wanted = depth // 10
    pages = result.pages_count or pages_wanted
    return Reading(
        position=first["position"] if first else None,
        url=first["url"] if first else None,
        serp_features=sorted({kind for kind in types if kind != "organic"}),
        ai_overview_present=bool(ai),
        ai_overview_cited=any(ref["owner"] == "self" for item in ai for ref in item["references"]),
        competitors=competitors,
        cannibalization=ours if len(ours) > 1 else [],
        items=items,
        item_types=types,
        stopped=stopped,
        pages=max(1, min(pages, pages_wanted)),
    )
