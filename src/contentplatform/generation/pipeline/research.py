"""Retrieval: the passages the article is planned from (`retrieve`, the research step), and each
section's own after the outline (`retrieve_sections`); grounding.py has the decisions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.documents import index as search
from contentplatform.documents import service as documents
from contentplatform.generation import grounding, passages
from contentplatform.generation.grounding import Found, Retrieval
from contentplatform.generation.pipeline.errors import NoSources
from contentplatform.generation.pipeline.run import enter_step
from contentplatform.generation.prompts import Brief

SEARCH_LIMIT = 10
PRIMARY_LIMIT = 3
MAX_SOURCES = 16
# Chunks searched for each section: room for the passages it takes (at most
# article.SECTION_SOURCES) when the best ones went to earlier sections.
SECTION_SEARCH_LIMIT = 8


@DBOS.step(name="generation.retrieve")
async def retrieve(
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    brief: Brief,
    config: dict[str, Any] | None = None,
    step_key: str | None = None,
) -> Retrieval:
    """The passages the article is planned from: the best matches of topic and keywords (above
    the search's relative cut), in the chosen documents only when given, plus the best of the
    primary knowledge document. The research step's config: at most `maxSources`, none scoring
    below `minRelevance` of the best, pages from the web only with `useWebsitePages`."""
    keywords = brief["keywords"]
    query = " ".join([brief["topic"], *keywords])
    chosen = [uuid.UUID(i) for i in brief["document_ids"]] if brief["document_ids"] else None
    config = config or {}
    await enter_step(tenant_id, run_id, "retrieve", 5, step_key)
    # Read-only, in a transaction of its own: no lock is held while searching.
    async with runtime.current().db.unit_of_work() as session:
        hits = await search.search_chunks(
            session, tenant_id, query, document_ids=chosen, limit=SEARCH_LIMIT
        )
        found = passages.relevant(hits, brief["topic"], keywords)
        if not found and chosen:
            found = passages.every(await search.leading_chunks(session, tenant_id, chosen))
        primary = await documents.primary_knowledge_id(session, tenant_id)
        if primary is not None:
            best = await search.search_chunks(
                session, tenant_id, query, document_ids=[primary], limit=PRIMARY_LIMIT
            )
            # The primary document's own passages come after the best matches, within the cap.
            found = found[: MAX_SOURCES - PRIMARY_LIMIT] + passages.relevant(
                best, brief["topic"], keywords, at_least_one=False
            )
        urls = await _public_urls(session, tenant_id, found)
    if config.get("useWebsitePages") is False:
        found = [p for p in found if p.hit.document_id not in urls]
    if found and config.get("minRelevance"):
        top = max(p.hit.score for p in found)
        found = [p for p in found if p.hit.score >= top * float(config["minRelevance"])]
    if not found:
        raise NoSources(
            "None of the organization's ready documents matches this topic. Ingest documents "
            "about it, or choose documentIds to write from."
        )
    kept = _found([(p, False) for p in found], urls)[: int(config.get("maxSources") or MAX_SOURCES)]
    return {"query": query, "passages": kept}


@DBOS.step(name="generation.retrieve_sections")
async def retrieve_sections(
    tenant_id: uuid.UUID, run_id: uuid.UUID, brief: Brief, headings: list[str]
) -> list[Retrieval]:
    """Each section's passages: the best matches of its heading and the topic (above the
    search's relative cut), in the chosen documents and the primary one when documents are
    chosen; only passages holding a word of the heading (passages.about; grounding.py)."""
    topic = brief["topic"]
    chosen = [uuid.UUID(i) for i in brief["document_ids"]] if brief["document_ids"] else None
    await enter_step(tenant_id, run_id, "outline", 12)
    found: list[tuple[str, list[tuple[passages.Passage, bool]]]] = []
    # One read-only transaction for every section's search.
    async with runtime.current().db.unit_of_work() as session:
        scope = chosen
        if chosen is not None:
            primary = await documents.primary_knowledge_id(session, tenant_id)
            scope = [*chosen, primary] if primary and primary not in chosen else chosen
        for heading in headings:
            query = grounding.section_query(heading, topic)
            hits = await search.search_chunks(
                session, tenant_id, query, document_ids=scope, limit=SECTION_SEARCH_LIMIT
            )
            found.append((query, passages.about(hits, heading, topic)))
        urls = await _public_urls(session, tenant_id, [p for _, kept in found for p, _ in kept])
    return [{"query": query, "passages": _found(kept, urls)} for query, kept in found]


async def _public_urls(
    session: AsyncSession, tenant_id: uuid.UUID, found: Sequence[passages.Passage]
) -> dict[uuid.UUID, str]:
    """Public pages may be cited as links; the tenant's own files are named only in the
    provenance (generation/article.py)."""
    ids = list(dict.fromkeys(passage.hit.document_id for passage in found))
    return await documents.public_urls(session, tenant_id, ids) if ids else {}


def _found(
    found: Sequence[tuple[passages.Passage, bool]], urls: dict[uuid.UUID, str]
) -> list[Found]:
    """The passages as a step's output, each once (by its words), best first; each found with
    whether it is under a heading like its section's."""
    kept: list[Found] = []
    seen: set[str] = set()
    for passage, under_heading in found:
        key = grounding.passage_key(passage.text)
        if key in seen:
            continue
        seen.add(key)
        kept.append(
            {
                "chunk_id": str(passage.hit.chunk_id),
                "document_id": str(passage.hit.document_id),
                "document_name": passage.hit.document_name,
                "heading": passage.heading,
                "text": passage.text,
                "url": urls.get(passage.hit.document_id),
                "score": passage.hit.score,
                "under_heading": under_heading,
            }
        )
    return kept
