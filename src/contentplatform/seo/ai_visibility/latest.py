"""Each prompt's reading of the run that just ended (`latest` on the prompt: what
seo.listAiPrompts shows and filters on), written when the run settles."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import utcnow
from contentplatform.seo.ai_visibility import metrics, repository
from contentplatform.seo.models import SeoAiAnswer


def reading(run_id: uuid.UUID, rows: list[SeoAiAnswer]) -> dict[str, Any]:
    mentioned = [row for row in rows if row.brand_mentioned]
    positions = [row.brand_position for row in mentioned if row.brand_position is not None]
    sentiments = [row.sentiment for row in mentioned if row.sentiment is not None]
    competitors = sorted(
        {
            str(mention["name"])
            for row in rows
            for mention in row.mentions
            if mention.get("brand") == "competitor"
        }
    )
    return {
        "run_id": str(run_id),
        "run_at": utcnow().isoformat(),
        "answers": len(rows),
        "mentioned": bool(mentioned),
        "visibility": metrics.share(len(mentioned), len(rows)).model_dump(),
        "position": round(sum(positions) / len(positions), 2) if positions else None,
        "sentiment": round(sum(sentiments) / len(sentiments), 2) if sentiments else None,
        "cited": any(row.cited for row in rows),
        "competitors_mentioned": competitors,
    }


async def write(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    rows = await repository.answered(session, tenant_id, run_id=run_id, live_only=False)
    by_prompt: dict[uuid.UUID, list[SeoAiAnswer]] = defaultdict(list)
    for row in rows:
        by_prompt[row.prompt_id].append(row)
    await repository.touch_prompts(
        session,
        tenant_id,
        {prompt_id: reading(run_id, found) for prompt_id, found in by_prompt.items()},
    )
