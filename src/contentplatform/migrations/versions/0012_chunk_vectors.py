"""Chunk vectors for hybrid search when embeddings are configured (revision of 2026-11-25).

The vector is `real[]` on PostgreSQL, compared with pgvector at query time (`embedding::vector`),
and sqlite-vec's float32 BLOB on SQLite. pgvector's extension is created here when the server has
it; without it the table still works as storage, and a service configured with embeddings refuses
to start until pgvector is installed (core/runtime.py).
"""

import logging

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0012_chunk_vectors"
down_revision = "0011_generation_live"

log = logging.getLogger(__name__)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        _create_vector_extension(bind)
    op.create_table(
        "document_chunk_vectors",
        sa.Column("chunk_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column(
            "embedding",
            sa.LargeBinary().with_variant(postgresql.ARRAY(postgresql.REAL()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("chunk_id", name=op.f("pk_document_chunk_vectors")),
        shapes.references("document_chunk_vectors", "chunk_id", "document_chunks"),
        shapes.references("document_chunk_vectors", "tenant_id", "tenants"),
    )
    op.create_index(
        "ix_document_chunk_vectors_tenant_id_model",
        "document_chunk_vectors",
        ["tenant_id", "model"],
    )


def _create_vector_extension(bind: sa.Connection) -> None:
    available = bind.scalar(sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"))
    if not available:
        return
    # In a savepoint: a role that may not create extensions leaves the migration going on.
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
    except sa.exc.DBAPIError as error:
        log.warning("could not create pgvector's extension (CREATE EXTENSION vector): %s", error)


def downgrade() -> None:
    op.drop_index("ix_document_chunk_vectors_tenant_id_model", "document_chunk_vectors")
    op.drop_table("document_chunk_vectors")
