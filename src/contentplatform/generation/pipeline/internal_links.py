"""The internal links step: links to the organization's own published posts and imported web
pages, in a "Related reading" section before the sources."""

from __future__ import annotations

import html as markup
import uuid
from collections.abc import Sequence
from typing import Any

from dbos import DBOS

from contentplatform.core import runtime
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.generation.article import SOURCES_ANCHOR
from contentplatform.generation.pipeline.run import enter_step, summarize
from contentplatform.generation.pipeline.words import claim_words
from contentplatform.workflows import catalog as wf_catalog

RELATED_HEADING = "Related reading"
RELATED_ANCHOR = "related-reading"
MIN_SHARED_WORDS = 1


def choose_links(
    about: str, candidates: Sequence[tuple[str, str]], limit: int, *, exclude_url: str | None = None
) -> list[tuple[str, str]]:
    """The `limit` candidates `(title, url)` whose titles share the most content words with
    `about` (the article's title, headings and keywords), at least one; each URL once."""
    wanted = claim_words(about)
    scored: list[tuple[int, int, str, str]] = []
    seen: set[str] = set()
    for index, (title, url) in enumerate(candidates):
        if url in seen or url == exclude_url:
            continue
        seen.add(url)
        shared = len(claim_words(title) & wanted)
        if shared >= MIN_SHARED_WORDS:
            scored.append((-shared, index, title, url))
    return [(title, url) for _, _, title, url in sorted(scored)[:limit]]


def related_block(links: Sequence[tuple[str, str]]) -> str:
    """The links as the article's "Related reading" section (escaped: titles are text)."""
    items = "".join(
        f'<li><a href="{markup.escape(url, quote=True)}">{markup.escape(title)}</a></li>'
        for title, url in links
    )
    return f'<h2 id="{RELATED_ANCHOR}">{RELATED_HEADING}</h2><ul>{items}</ul>'


def with_related(content: str, block: str, sources_marker: str) -> str:
    """`content` with the block before its sources list (at the end when it has none)."""
    at = content.find(sources_marker)
    if at < 0:
        return content + block
    return content[:at] + block + content[at:]


@DBOS.step(name="generation.internal_links")
async def link_internally(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    content: str,
    about: str,
    config: dict[str, Any],
    step_key: str,
) -> dict[str, Any]:
    """Links to the organization's own published posts and the web pages it imported as
    knowledge (the website scan's), those whose titles share most words with the article,
    listed in a "Related reading" section before its sources."""
    await enter_step(tenant_id, run_id, "optimize", 82, step_key)
    wanted = set(config.get("sources") or wf_catalog.LINK_SOURCES)
    async with runtime.current().db.unit_of_work() as session:
        candidates: list[tuple[str, str]] = []
        if "posts" in wanted:
            candidates += await drafts.published_links(session, tenant_id)
        if "site_pages" in wanted:
            candidates += await documents.web_pages(session, tenant_id)
    links = choose_links(about, candidates, int(config.get("maxLinks", 3)))
    if links:
        marker = f'<h2 id="{SOURCES_ANCHOR}">'
        content = with_related(content, related_block(links), marker)
    count = len(links)
    await summarize(
        tenant_id, run_id, step_key, f"{count} internal link{'s' if count != 1 else ''} added"
    )
    return {"content": content, "links": [{"title": t, "url": u} for t, u in links]}
