"""What the workflow runs, step by step: a whole article by the run's definition (research,
outline, the write, the steps after it, score, finalize), or some sections of a draft again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from contentplatform.drafts import html
from contentplatform.generation import grounding
from contentplatform.generation.article import (
    Article,
    Part,
    Section,
    assemble,
    plan_parts,
    refs_for,
    rewrite_sections,
    sections_of,
    sentences_of,
)
from contentplatform.generation.pipeline.fact_check import check_facts
from contentplatform.generation.pipeline.finalize import finalize, finish_without_article, score
from contentplatform.generation.pipeline.images import choose_images
from contentplatform.generation.pipeline.internal_links import link_internally
from contentplatform.generation.pipeline.model_calls import fingerprint
from contentplatform.generation.pipeline.optimize import keywords_for, metadata, optimize
from contentplatform.generation.pipeline.outline import bounded, make_outline, shape
from contentplatform.generation.pipeline.research import retrieve, retrieve_sections
from contentplatform.generation.pipeline.review_gate import review_gate
from contentplatform.generation.pipeline.run import Ids, Made, Reused, Start
from contentplatform.generation.pipeline.start import catalog_step
from contentplatform.generation.pipeline.write import write_or_reuse
from contentplatform.generation.prompts import Brief
from contentplatform.settings import rules as content_rules


async def write_article(ids: Ids, start: Start, reuse: dict[str, Reused]) -> None:
    """A whole article, by the run's definition: research, outline, the write (each part), then
    the steps after it in their order (optimize, internal links, fact check, images, review
    gates), then score and finalize. Images placed before the write choose from the outline."""
    brief = start["brief"]
    plan = _plan(start)
    research = _first(plan, "research") or catalog_step("research")
    topic = await retrieve(*ids, brief, research["config"], research["key"])
    outline_step = _first(plan, "outline")
    if outline_step is None:
        await finish_without_article(*ids)
        return
    brief = {**brief, **shape(outline_step, _first(plan, "write"))}  # type: ignore[typeddict-item]
    given = [asdict(s) for s in grounding.outline_sources(topic)]
    key = fingerprint("outline", brief, given)
    planned = await make_outline(*ids, brief, given, key, reuse.get(key), outline_step["key"])
    outline = bounded(planned["outline"], outline_step["config"])
    title = start["title"] or outline["title"]
    parts = plan_parts(outline)
    about = " ".join([title, *(p.heading or "" for p in parts), *brief["keywords"]])
    write_step = _first(plan, "write")
    order = [s["key"] for s in plan]
    for step in plan:
        if (
            step["type"] == "images"
            and write_step
            and order.index(step["key"]) < order.index(write_step["key"])
        ):
            await choose_images(*ids, step["config"], about, step["key"], early=True)
    if write_step is None:
        await finish_without_article(*ids)
        return
    headings = [part.heading or "" for part in parts if part.kind == "section"]
    grounded = grounding.ground(topic, parts, await retrieve_sections(*ids, brief, headings))
    written: list[str] = []
    for index, part in enumerate(parts):
        result = await write_or_reuse(
            ids,
            reuse,
            {**brief, "used_sentences": [*start["avoid"], *sentences_of(written)]},
            title,
            part,
            grounded.given(index),
            index,
            len(parts),
            [p.heading for p in parts[:index] if p.heading],
            step_key=write_step["key"],
        )
        written.append(result["text"])
    article = assemble(title, parts, written, grounded.sources, grounded.grounds)
    made = Made(article=article.model_dump(mode="json"), seo_meta=None, excerpt=None, more={})
    sources = {source.ref: source.text for source in grounded.sources}
    for step in plan[order.index(write_step["key"]) + 1 :]:
        made = await after_write(
            ids, start, reuse, brief, step, made, sources, about, planned["model"]
        )
    written_article = Article.model_validate(made["article"])
    seo_meta, excerpt = metadata(brief, written_article, made)
    scored = await score(*ids, written_article.title, written_article.content, seo_meta)
    await finalize(
        *ids,
        made["article"],
        seo_meta,
        excerpt,
        scored,
        planned["model"],
        {**_in_voice(brief, written_article), **made["more"]},
    )


async def after_write(
    ids: Ids,
    start: Start,
    reuse: dict[str, Reused],
    brief: Brief,
    step: dict[str, Any],
    made: Made,
    sources: dict[int, str],
    about: str,
    model: dict[str, str],
) -> Made:
    """One step after the write, on the article as the steps before it left it."""
    article = Article.model_validate(made["article"])
    config, step_key = step["config"], step["key"]
    if step["type"] == "optimize":
        wanted: Brief = {**brief, "keywords": keywords_for(brief["keywords"], config)}
        key = fingerprint("optimize", wanted, article.title, article.content)
        optimized = await optimize(
            *ids, wanted, article.title, article.content, key, reuse.get(key), step_key
        )
        return {**made, "seo_meta": optimized["seo_meta"], "excerpt": optimized["excerpt"]}
    if step["type"] == "internal_links":
        linked = await link_internally(*ids, article.content, about, config, step_key)
        more = {**made["more"], "internal_links": linked["links"]}
        return {**made, "article": {**made["article"], "content": linked["content"]}, "more": more}
    if step["type"] == "fact_check":
        citations = [c.model_dump(mode="json") for c in article.citations]
        found = await check_facts(*ids, citations, sources, config, step_key)
        return {**made, "more": {**made["more"], "fact_check": found}}
    if step["type"] == "images":
        await choose_images(*ids, config, about, step_key)
        return made
    if step["type"] == "review_gate":
        return await review_gate(ids, start, brief, step, made, model)
    return made


def _plan(start: Start) -> list[dict[str, Any]]:
    """The enabled steps the run follows, up to a test run's `stopAfterStep`."""
    plan = [step for step in start["steps"] if step.get("enabled", True)]
    stop = (start["test"] or {}).get("stop_after")
    keys = [step["key"] for step in plan]
    return plan[: keys.index(stop) + 1] if stop in keys else plan


def _first(plan: Sequence[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    return next((step for step in plan if step["type"] == type_), None)


async def rewrite_chosen_sections(ids: Ids, start: Start, reuse: dict[str, Reused]) -> None:
    """Some sections of a draft: retrieve for them, write each again, score, finalize; the rest
    of the draft (its title, other sections, excerpt, SEO metadata) as it was."""
    brief, title, content = start["brief"], start["title"], start["content"]
    assert title is not None and content is not None and start["sections"] is not None
    everything = sections_of(content)
    chosen = [section for section in everything if section.anchor in start["sections"]]
    topic = await retrieve(*ids, brief)
    planned_from = grounding.outline_sources(topic)
    parts = [
        Part(
            kind="section",
            heading=section.heading,
            sources=refs_for(section.heading, planned_from),
            points=[],
        )
        for section in chosen
    ]
    found = await retrieve_sections(*ids, brief, [section.heading for section in chosen])
    grounded = grounding.ground(
        topic, parts, found, cited_elsewhere=_cited_elsewhere(start["provenance"], chosen)
    )
    rewrites: list[tuple[Section, str]] = []
    model: dict[str, str] | None = None
    for index, (section, part) in enumerate(zip(chosen, parts, strict=True)):
        place = everything.index(section)
        result = await write_or_reuse(
            ids,
            reuse,
            {**brief, "used_sentences": [*start["avoid"], *sentences_of([t for _, t in rewrites])]},
            title,
            part,
            grounded.given(index),
            place + 1,  # after the introduction
            len(everything) + 1,
            [s.heading for s in everything[:place]],
            progress=(index, len(chosen)),
        )
        rewrites.append((section, result["text"]))
        model = model or result["model"]
    assert model is not None
    article = rewrite_sections(
        title,
        content,
        start["provenance"] or {},
        rewrites,
        grounded.sources,
        grounded.grounds,
    )
    seo_meta = start["seo_meta"] or {}
    scored = await score(*ids, article.title, article.content, seo_meta)
    # Priced by the words the sections now hold: a sentence the rest of the draft had was
    # dropped (article.py), and is not paid for.
    now = {section.anchor: section for section in sections_of(article.content)}
    delivered = sum(
        html.word_count(article.content[body.body_start : body.end])
        for section in chosen
        if (body := now.get(section.anchor)) is not None
    )
    await finalize(
        *ids,
        article.model_dump(mode="json"),
        seo_meta,
        start["excerpt"] or "",
        scored,
        model,
        {
            "regenerated_sections": [section.anchor for section in chosen],
            **_in_voice(brief, article),
        },
        delivered,
    )


def _in_voice(brief: Brief, article: Article) -> dict[str, Any]:
    """What the provenance says of the voice: the brand voice version the article was written
    with, and which of the voice's banned terms it still uses (a model may slip; the offline
    writer, which copies the documents' sentences, cannot follow a voice at all)."""
    guidance = brief.get("guidance") or {}
    found: dict[str, Any] = {"brand_voice_version": int(guidance.get("version") or 0)}
    banned = ((guidance.get("voice") or {}).get("vocabulary") or {}).get("banned") or []
    if banned:
        found["banned_terms_found"] = content_rules.banned_terms_in(
            banned, article.title, article.content
        )
    return found


def _cited_elsewhere(provenance: dict[str, Any] | None, chosen: Sequence[Section]) -> set[str]:
    """The chunks the draft's other sections cite, by its provenance (a regenerated section
    prefers passages they do not)."""
    rewritten = {section.heading for section in chosen}
    sections = (provenance or {}).get("sections")
    return {
        str(chunk_id)
        for section in (sections if isinstance(sections, list) else [])
        if isinstance(section, dict) and section.get("heading") not in rewritten
        for chunk_id in section.get("chunk_ids") or []
    }
