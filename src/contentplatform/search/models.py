from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import ForeignKey, Integer, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, TenantMixin, UTCDateTime, utcnow


class DocumentChunk(TenantMixin, Base):
    """One chunk of a document's extracted text. Rows are replaced, never updated."""

    __tablename__ = "document_chunks"
    # Also the index behind "this document's chunks" (document_id leads it).
    __table_args__ = (UniqueConstraint("document_id", "ordinal"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    document_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("documents.id", ondelete="CASCADE"), nullable=False
    )
    ordinal: Mapped[int] = mapped_column(Integer, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    token_count: Mapped[int] = mapped_column(Integer, nullable=False)
    # The chunk's span in the document's extracted text (see documents.chunking.Chunk).
    char_start: Mapped[int] = mapped_column(Integer, nullable=False)
    char_end: Mapped[int] = mapped_column(Integer, nullable=False)
    heading: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


# The full-text index is made by migration 0004_search with raw SQL, differently per dialect, so
# the models do not describe it: on SQLite an FTS5 table (plus the shadow tables FTS5 keeps beside
# it) filled by triggers; on PostgreSQL a generated tsvector column with a GIN index.
FTS_TABLE = "document_chunks_fts"
FTS_SHADOW_TABLES = frozenset(
    f"{FTS_TABLE}_{part}" for part in ("data", "idx", "content", "docsize", "config")
)
SEARCH_VECTOR = "search_vector"
SEARCH_VECTOR_INDEX = "ix_document_chunks_search_vector"


def include_name(name: str | None, type_: str, parent_names: Mapping[str, str | None]) -> bool:
    """Alembic `include_name` hook: leave the full-text objects out of the drift check."""
    if type_ == "table":
        return name != FTS_TABLE and name not in FTS_SHADOW_TABLES
    if parent_names.get("table_name") == DocumentChunk.__tablename__:
        return name not in (SEARCH_VECTOR, SEARCH_VECTOR_INDEX)
    return True
