"""The images step: images of the media library chosen by their words and attached to the
draft."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from dbos import DBOS

from contentplatform.core import runtime
from contentplatform.generation.pipeline.run import advance, enter_step, summarize
from contentplatform.generation.pipeline.words import claim_words
from contentplatform.media import schemas as media_schemas
from contentplatform.media import service as media


def rank_images(
    about: str, candidates: Sequence[dict[str, Any]], count: int
) -> list[dict[str, Any]]:
    """The `count` candidates ({id, title, alt_text, tags, ...}) that share the most words with
    `about`, newest first among equals; none that shares no word."""
    wanted = claim_words(about)
    scored = []
    for index, candidate in enumerate(candidates):
        words = claim_words(
            " ".join(
                [
                    candidate.get("title") or "",
                    candidate.get("alt_text") or "",
                    *candidate.get("tags", []),
                ]
            )
        )
        shared = len(words & wanted)
        if shared:
            scored.append((-shared, index, candidate))
    return [candidate for _, _, candidate in sorted(scored, key=lambda s: (s[0], s[1]))[:count]]


@DBOS.step(name="generation.images")
async def choose_images(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    config: dict[str, Any],
    about: str,
    step_key: str,
    *,
    early: bool = False,
) -> dict[str, Any]:
    """Images from the media library chosen by their titles, alt texts and tags, attached to the
    draft: the featured one (unless the draft has one) and `count` inline. A stock provider's
    photos are a person's choice (Unsplash's terms): that source chooses nothing."""
    # Before the write (from the outline) the run is still outlining.
    stage, percent = ("outline", 14) if early else ("optimize", 86)
    await enter_step(tenant_id, run_id, stage, percent, step_key)
    chosen: list[str] = []
    if config.get("source", "media_library") == "media_library":
        async with runtime.current().db.unit_of_work() as session:
            run = await advance(session, tenant_id, run_id, stage, percent)
            candidates = await media.for_automated_selection(session, tenant_id)
            featured = bool(config.get("featured", True))
            if featured and await media.featured_id(session, tenant_id, run.draft_id):
                featured = False
            wanted = int(config.get("count", 1)) + (1 if featured else 0)
            ranked = rank_images(about, candidates, wanted)
            for index, image in enumerate(ranked):
                role = "featured" if featured and index == 0 else "inline"
                await media.attach(
                    session,
                    tenant_id,
                    media_schemas.AttachMediaInput(
                        id=uuid.UUID(image["id"]), draft_id=run.draft_id, role=role
                    ),
                )
                chosen.append(image["id"])
        summary = f"{len(chosen)} image{'s' if len(chosen) != 1 else ''} chosen from the library"
    else:
        summary = "Stock photos are chosen by a person (the provider's terms); none chosen"
    await summarize(tenant_id, run_id, step_key, summary)
    return {"chosen": chosen}
