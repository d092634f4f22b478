"""What chat retrieves from the knowledge index, for an answer and for `chat.retrieve` alike:
the best chunks for the query in the scope asked (every ready document when none), with the
primary knowledge document always searched and its best chunks always kept."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.chat.errors import UnknownDocuments
from contentplatform.documents import index
from contentplatform.documents import service as documents
from contentplatform.documents.errors import DocumentNotFound
from contentplatform.documents.index import ChunkHit
from contentplatform.kit.errors import FieldError

# The primary document's best chunks kept beside the best of the scope.
PRIMARY_LIMIT = 2


async def search(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    query: str,
    *,
    document_ids: Sequence[uuid.UUID] | None,
    limit: int,
    min_score: float | None = None,
) -> list[ChunkHit]:
    """Up to `limit` chunks, best first: the best of `document_ids` (None or []: every ready
    document), and the best PRIMARY_LIMIT of the primary knowledge document among them
    whatever the scope, in place of the scope's weakest."""
    scope = list(document_ids) if document_ids else None
    hits = await index.search_chunks(session, tenant_id, query, document_ids=scope, limit=limit)
    primary = await documents.primary_knowledge_id(session, tenant_id)
    extra: list[ChunkHit] = []
    if primary is not None:
        seen = {hit.chunk_id for hit in hits}
        best = await index.search_chunks(
            session, tenant_id, query, document_ids=[primary], limit=min(PRIMARY_LIMIT, limit)
        )
        extra = [hit for hit in best if hit.chunk_id not in seen]
    kept = sorted(hits[: max(0, limit - len(extra))] + extra, key=lambda hit: -hit.score)
    if min_score is not None:
        kept = [hit for hit in kept if hit.score >= min_score]
    return kept


async def check_documents(
    session: AsyncSession, tenant: TenantAccess, document_ids: Sequence[uuid.UUID]
) -> None:
    """Each id must be a document of the organization (any state: one still processing is
    searched once ready); 400 naming every one that is not."""
    unknown: list[FieldError] = []
    for position, document_id in enumerate(document_ids):
        try:
            await documents.require(session, tenant, document_id)
        except DocumentNotFound:
            unknown.append(
                FieldError(f"documentIds.{position}", f"{document_id} is no document here")
            )
    if unknown:
        names = ", ".join(error.message.split()[0] for error in unknown)
        raise UnknownDocuments(
            f"These documentIds are not documents of this organization: {names}.",
            errors=unknown,
        )
