"""The optimize step: the SEO metadata and excerpt, from the model (or made from the article when
the definition has no optimize step)."""

from __future__ import annotations

import uuid
from typing import Any

from dbos import DBOS

from contentplatform.drafts import html
from contentplatform.generation import prompts
from contentplatform.generation.answers import SeoAnswer, excerpt_from, seo_meta_from
from contentplatform.generation.article import Article
from contentplatform.generation.pipeline.model_calls import (
    complete,
    model_of,
    record_call,
    take_reused,
    usage_of,
)
from contentplatform.generation.pipeline.run import Made, Reused, enter_step
from contentplatform.generation.prompts import Brief


@DBOS.step(name="generation.optimize")
async def optimize(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    brief: Brief,
    title: str,
    content: str,
    key: str,
    reused: Reused | None = None,
    step_key: str | None = None,
) -> dict[str, Any]:
    await enter_step(tenant_id, run_id, "optimize", 80, step_key)
    if reused is not None:
        return await take_reused(tenant_id, run_id, key, "optimize", reused)
    first = html.first_paragraph(content)
    request = prompts.seo(brief, title=title, text=html.plain_text(content), first_paragraph=first)
    completion = await complete(request)
    await record_call(tenant_id, run_id, key, "optimize", usage_of(completion), 0)
    answer = SeoAnswer.read(completion.text)
    seo_meta = seo_meta_from(answer, brief, title=title, first_paragraph=first)
    return {
        "seo_meta": seo_meta.model_dump(mode="json"),
        "excerpt": excerpt_from(answer, first),
        "usage": usage_of(completion),
        "model": model_of(completion),
        "input": key,
    }


def keywords_for(keywords: list[str], config: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys([*keywords, *(config.get("targetKeywords") or [])]))[:20]


def metadata(brief: Brief, article: Article, made: Made) -> tuple[dict[str, Any], str]:
    """The SEO metadata and excerpt: the optimize step's, else made from the article itself."""
    if made["seo_meta"] is not None:
        return made["seo_meta"], made["excerpt"] or ""
    first = html.first_paragraph(article.content)
    meta = seo_meta_from(SeoAnswer(), brief, title=article.title, first_paragraph=first)
    return meta.model_dump(mode="json"), excerpt_from(SeoAnswer(), first)
