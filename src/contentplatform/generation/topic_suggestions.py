"""generation.suggestTopics' rules: topics from the passages of the tenant's ready knowledge,
leaving out (or marking) what its drafts already cover (the proposing itself: topics.py)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.documents import index as search
from contentplatform.documents import service as documents
from contentplatform.documents.schemas import ListDocumentsInput
from contentplatform.drafts import service as drafts
from contentplatform.drafts.schemas import ListDraftsInput
from contentplatform.generation import passages, repository, schemas, topics
from contentplatform.settings import service as settings

# The drafts (newest first) whose titles and topics count as covered for suggestTopics.
COVERING_DRAFT_PAGES = 5
COVERING_PAGE = 100
COVERING_RUNS = 2000
# The documents suggestTopics draws from when none are named, and the passages of each.
TOPIC_DOCUMENTS = 100
TOPIC_PASSAGES_PER_DOCUMENT = 100


async def suggest_topics(
    session: AsyncSession,
    tenant: TenantAccess,
    data: schemas.SuggestTopicsInput,
    *,
    also_covered: Sequence[topics.Covering] = (),
) -> schemas.TopicList:
    """Topics from the passages of the tenant's ready knowledge (the chosen documents, else the
    newest ready ones), weighted by the seed keywords (topics.py); what the tenant's drafts
    (their titles and the topics their runs were asked) and `also_covered` cover is left out,
    or marked, as asked."""
    tenant_id = tenant.tenant_id
    if data.document_ids:
        await documents.check_usable_for_generation(session, tenant_id, data.document_ids)
        chosen = list(data.document_ids)
    else:
        ready = await documents.list_documents(
            session, tenant, ListDocumentsInput(status="ready", limit=TOPIC_DOCUMENTS)
        )
        chosen = [document.id for document in ready.data]
    chunks = await search.leading_chunks(
        session, tenant_id, chosen, per_document=TOPIC_PASSAGES_PER_DOCUMENT
    )
    # Each chunk cut at its heading lines: every section is a passage under its own heading.
    found_passages = [
        topics.Passage(
            chunk_id=chunk.chunk_id,
            document_id=chunk.document_id,
            document_name=chunk.document_name,
            heading=passage.heading,
            content=passage.text,
        )
        for chunk in chunks
        for passage in passages.split(chunk)
    ]
    covered = [*await _drafts_covering(session, tenant_id), *also_covered]
    strategy = await settings.topic_strategy(session, tenant_id)
    found = topics.propose(
        found_passages,
        seed_keywords=data.seed_keywords,
        count=data.count,
        covered=covered,
        exclude_covered=data.exclude_covered,
        pillars=strategy.pillars,
        excluded=strategy.excludes,
    )
    return schemas.TopicList(data=found, total=len(found))


async def _drafts_covering(session: AsyncSession, tenant_id: uuid.UUID) -> list[topics.Covering]:
    """The newest drafts' titles, and the topics their runs were asked."""
    live: dict[uuid.UUID, str] = {}
    for page in range(1, COVERING_DRAFT_PAGES + 1):
        listed = await drafts.list_drafts(
            session, tenant_id, ListDraftsInput(page=page, limit=COVERING_PAGE)
        )
        live.update((draft.id, draft.title) for draft in listed.data)
        if page * COVERING_PAGE >= listed.total:
            break
    covering = [topics.Covering(title, draft_id, "a draft") for draft_id, title in live.items()]
    for topic, draft_id in await repository.requested_topics(session, tenant_id, COVERING_RUNS):
        if draft_id in live:
            covering.append(topics.Covering(topic, draft_id, "a draft"))
    return covering
