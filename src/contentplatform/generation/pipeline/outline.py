"""The outline step: the model plans the article from its sources, held to the step's config."""

from __future__ import annotations

import uuid
from typing import Any

from dbos import DBOS

from contentplatform.ai.base import Source
from contentplatform.generation import prompts
from contentplatform.generation.answers import Outline
from contentplatform.generation.pipeline.model_calls import (
    complete,
    model_of,
    record_call,
    take_reused,
    usage_of,
)
from contentplatform.generation.pipeline.run import Reused, enter_step
from contentplatform.generation.pipeline.start import catalog_step
from contentplatform.generation.prompts import Brief


@DBOS.step(name="generation.outline")
async def make_outline(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    brief: Brief,
    sources: list[dict[str, Any]],
    key: str,
    reused: Reused | None = None,
    step_key: str | None = None,
) -> dict[str, Any]:
    await enter_step(tenant_id, run_id, "outline", 10, step_key)
    if reused is not None:
        return await take_reused(tenant_id, run_id, key, "outline", reused)
    completion = await complete(prompts.outline(brief, [Source(**s) for s in sources]))
    await record_call(tenant_id, run_id, key, "outline", usage_of(completion), 0)
    outline = Outline.read(completion.text, topic=brief["topic"], sources=len(sources))
    return {
        "outline": outline.model_dump(mode="json"),
        "usage": usage_of(completion),
        "model": model_of(completion),
        "input": key,
    }


def shape(outline_step: dict[str, Any], write_step: dict[str, Any] | None) -> dict[str, Any]:
    """What the outline and write configs ask of the prompts, when it is not the built-in
    pipeline's (so its runs' prompts, and their fingerprints, stay as they were)."""
    builtin = {**catalog_step("outline")["config"], **catalog_step("write")["config"]}
    given = {**outline_step["config"], **(write_step or {}).get("config", {})}
    shape = {name: value for name, value in given.items() if builtin.get(name) != value}
    return {"shape": shape} if shape else {}


def bounded(outline: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The outline held to the step's config: at most maxSections sections, and no key
    takeaways when they are not wanted (the conclusion then has no points)."""
    sections = outline["sections"][: int(config.get("maxSections") or prompts.MAX_SECTIONS)]
    conclusion = outline["conclusion"]
    if config.get("keyTakeaways") is False:
        conclusion = {**conclusion, "points": []}
    return {**outline, "sections": sections, "conclusion": conclusion}
