"""The write step: one model call per part of the article (each its own checkpoint)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from dbos import DBOS

from contentplatform.ai.base import Source
from contentplatform.generation import prompts
from contentplatform.generation.answers import InvalidModelOutput, unfenced
from contentplatform.generation.article import Part, words_in
from contentplatform.generation.pipeline.model_calls import (
    complete,
    fingerprint,
    model_of,
    record_call,
    take_reused,
    usage_of,
)
from contentplatform.generation.pipeline.run import Ids, Reused, enter_step
from contentplatform.generation.prompts import Brief


@DBOS.step(name="generation.write")
async def write_part(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    brief: Brief,
    title: str,
    part: dict[str, Any],
    sources: list[dict[str, Any]],
    index: int,
    count: int,
    previous_headings: list[str],
    key: str,
    reused: Reused | None = None,
    *,
    done: int = 0,
    of: int = 1,
    step_key: str | None = None,
) -> dict[str, Any]:
    """One part of the article (`index` of `count`), the `done`th of the `of` parts this run
    writes (the progress moves by them)."""
    await enter_step(tenant_id, run_id, "write", 15 + (60 * done) // of, step_key)
    if reused is not None:
        return await take_reused(tenant_id, run_id, key, "write", reused)
    request = prompts.section(
        brief,
        title=title,
        part=Part.model_validate(part),
        sources=[Source(**s) for s in sources],
        index=index,
        count=count,
        previous_headings=previous_headings,
    )
    completion = await complete(request)
    text = unfenced(completion.text)
    words = words_in(text)
    await record_call(tenant_id, run_id, key, "write", usage_of(completion), words)
    if not text:
        raise InvalidModelOutput("The model wrote an empty section.")
    return {
        "text": text,
        "usage": usage_of(completion),
        "model": model_of(completion),
        "words": words,
        "input": key,
    }


async def write_or_reuse(
    ids: Ids,
    reuse: dict[str, Reused],
    brief: Brief,
    title: str,
    part: Part,
    sources: Sequence[Source],
    index: int,
    count: int,
    previous_headings: list[str],
    *,
    progress: tuple[int, int] | None = None,
    step_key: str = "write",
) -> dict[str, Any]:
    """`write_part`, with the output of the retried run's call of the same inputs if any."""
    given = [asdict(s) for s in sources]
    shape = part.model_dump(mode="json")
    key = fingerprint("write", brief, title, shape, given, index, count, previous_headings)
    done, total = progress or (index, count)
    return await write_part(
        *ids,
        brief,
        title,
        shape,
        given,
        index,
        count,
        previous_headings,
        key,
        reuse.get(key),
        done=done,
        of=total,
        step_key=step_key,
    )
