"""The fact check step: each cited claim held against the passages it cites."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from dbos import DBOS

from contentplatform.generation.pipeline.errors import ClaimsUnsupported
from contentplatform.generation.pipeline.run import enter_step, summarize
from contentplatform.generation.pipeline.words import claim_words


def fact_check(
    citations: Sequence[dict[str, Any]], sources: dict[int, str], min_support: float
) -> dict[str, Any]:
    """Each cited sentence of the article held against the passages it cites: the share of its
    content words those passages hold (its support). A claim below `min_support`, or citing a
    number no passage has, is unsupported. Word overlap is a floor, not a reading: a claim it
    passes may still misstate its source, which is why a review gate can follow."""
    checked = 0
    unsupported: list[dict[str, Any]] = []
    for citation in citations:
        text = str(citation.get("text") or "")
        words = claim_words(text)
        if not words:
            continue
        checked += 1
        refs = [int(n) for n in citation.get("sources") or []]
        cited = (
            set().union(*(claim_words(sources[n]) for n in refs if n in sources)) if refs else set()
        )
        support = len(words & cited) / len(words)
        if support < min_support:
            unsupported.append(
                {
                    "text": text[:500],
                    "section": citation.get("section"),
                    "sources": refs,
                    "support": round(support, 2),
                }
            )
    return {
        "checked": checked,
        "supported": checked - len(unsupported),
        "unsupported": unsupported,
        "min_support": min_support,
    }


@DBOS.step(name="generation.fact_check")
async def check_facts(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    citations: list[dict[str, Any]],
    sources: dict[int, str],
    config: dict[str, Any],
    step_key: str,
) -> dict[str, Any]:
    """Each cited claim held against its sources (fact_check); unsupported ones are
    recorded in the provenance, or fail the run (`onUnsupported: fail`)."""
    await enter_step(tenant_id, run_id, "optimize", 84, step_key)
    # A checkpoint's JSON turns the numbers keying `sources` into strings.
    numbered = {int(ref): text for ref, text in sources.items()}
    found = fact_check(citations, numbered, float(config.get("minSupport", 0.5)))
    unsupported = len(found["unsupported"])
    summary = f"{found['checked']} claims checked, {unsupported} unsupported"
    await summarize(tenant_id, run_id, step_key, summary)
    if unsupported and config.get("onUnsupported") == "fail":
        first = found["unsupported"][0]["text"][:200]
        raise ClaimsUnsupported(
            f"The fact check found {unsupported} claim(s) their sources do not support, "
            f'e.g. "{first}".'
        )
    return found
