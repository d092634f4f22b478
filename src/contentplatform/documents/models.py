from __future__ import annotations

import array
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlite_vec
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, REAL
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import TypeEngine

from contentplatform.kit.db import (
    Base,
    RecordMixin,
    SoftDeleteMixin,
    TenantMixin,
    UTCDateTime,
    utcnow,
)

LIVE = text("deleted_at IS NULL")


@dataclass(frozen=True)
class Usage:
    """How generated articles have drawn on a document."""

    generation_count: int
    last_used_at: datetime | None


class Document(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    __tablename__ = "documents"
    __table_args__ = (
        # One live document per storage path: a new upload there is a new version of it.
        Index(
            "uq_documents_tenant_id_storage_path_live",
            "tenant_id",
            "storage_path",
            unique=True,
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        ),
        # At most one primary knowledge document per tenant, even under racing requests.
        Index(
            "uq_documents_tenant_id_primary",
            "tenant_id",
            unique=True,
            sqlite_where=text("is_primary AND deleted_at IS NULL"),
            postgresql_where=text("is_primary AND deleted_at IS NULL"),
        ),
        Index("ix_documents_tenant_id_content_hash", "tenant_id", "content_hash"),
        # The list and its count read live documents only (migration 0008).
        Index(
            "ix_documents_tenant_id_created_at_live",
            "tenant_id",
            "created_at",
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        ),
    )

    filename: Mapped[str] = mapped_column(String(255), nullable=False)
    file_type: Mapped[str] = mapped_column(String(10), nullable=False)
    storage_path: Mapped[str] = mapped_column(String(1024), nullable=False)
    source: Mapped[str] = mapped_column(String(20), nullable=False, default="upload")
    source_metadata: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    is_primary: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False, default="pending")
    error: Mapped[str | None] = mapped_column(Text)
    chunk_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    document_version: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    content_hash: Mapped[str | None] = mapped_column(String(64))
    size_bytes: Mapped[int | None] = mapped_column(Integer)
    # Where the extracted text of the current version lives in object storage.
    text_path: Mapped[str | None] = mapped_column(String(1100))
    # Each (re)try of an ingestion gets its own workflow id and credit reservation.
    ingest_attempt: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    ingest_reservation_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    ingest_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    archived_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    generation_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    @property
    def knowledge(self) -> dict[str, Any]:
        """The knowledge metadata people gave the document (camelCase, as stored); {} if none."""
        knowledge: dict[str, Any] = self.source_metadata.get("knowledge") or {}
        return knowledge

    @property
    def usage(self) -> Usage:
        return Usage(self.generation_count, self.last_used_at)


class DocumentCount(Base):
    """How many live documents a tenant has in a status, archived or not: a list's `total`
    without counting them. Kept by triggers on documents in the writing transaction (migration
    0030), never by the code."""

    __tablename__ = "document_counts"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    status: Mapped[str] = mapped_column(String(20), primary_key=True)
    archived: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    live: Mapped[int] = mapped_column(Integer, nullable=False)


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


class DocumentChunkStats(Base):
    """Per tenant, its chunks and their total length (char_end - char_start): what BM25 needs of
    them, read as one row. Kept by triggers on document_chunks (migration 0032), whatever
    deletes the chunks (a re-index, a document's or the tenant's deletion)."""

    __tablename__ = "document_chunk_stats"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    chunks: Mapped[int] = mapped_column(Integer, nullable=False)
    total_length: Mapped[int] = mapped_column(BigInteger, nullable=False)


class EmbeddingType(TypeDecorator[list[float]]):
    """A vector: `real[]` on PostgreSQL (cast to pgvector's `vector` when compared), sqlite-vec's
    float32 BLOB on SQLite. Neither needs pgvector's or sqlite-vec's type to store it."""

    impl = LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(ARRAY(REAL()))
        return dialect.type_descriptor(LargeBinary())

    def process_bind_param(self, value: list[float] | None, dialect: Dialect) -> Any:
        if value is None or dialect.name == "postgresql":
            return value
        return sqlite_vec.serialize_float32(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> list[float] | None:
        if value is None or dialect.name == "postgresql":
            return value  # type: ignore[no-any-return]
        return list(array.array("f", value))


class DocumentChunkVector(Base):
    """A chunk's embedding, by the model named (documents/vectors.py). Goes with its chunk."""

    __tablename__ = "document_chunk_vectors"
    __table_args__ = (Index("ix_document_chunk_vectors_tenant_id_model", "tenant_id", "model"),)

    chunk_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("document_chunks.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    model: Mapped[str] = mapped_column(String(200), nullable=False)
    dimensions: Mapped[int] = mapped_column(Integer, nullable=False)
    embedding: Mapped[list[float]] = mapped_column(EmbeddingType(), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


# The full-text index is made by migrations 0004_search and 0032_tenant_search with raw SQL,
# differently per dialect, so the models do not describe it: on SQLite an FTS5 table (plus the
# shadow tables FTS5 keeps beside it) filled by triggers, its `tenant_key` column holding
# TENANT_KEY_PREFIX and the tenant's hex id; on PostgreSQL a generated tsvector column with a GIN
# index on (tenant_id, the vector).
FTS_TABLE = "document_chunks_fts"
FTS_SHADOW_TABLES = frozenset(
    f"{FTS_TABLE}_{part}" for part in ("data", "idx", "content", "docsize", "config")
)
SEARCH_VECTOR = "search_vector"
SEARCH_VECTOR_INDEX = "ix_document_chunks_tenant_id_search_vector"
TENANT_KEY_PREFIX = "t"


def include_name(name: str | None, type_: str, parent_names: Mapping[str, str | None]) -> bool:
    """Alembic `include_name` hook: leave the full-text objects out of the drift check."""
    if type_ == "table":
        return name != FTS_TABLE and name not in FTS_SHADOW_TABLES
    if parent_names.get("table_name") == DocumentChunk.__tablename__:
        return name not in (SEARCH_VECTOR, SEARCH_VECTOR_INDEX)
    return True
