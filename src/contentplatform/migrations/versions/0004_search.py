"""Search: document chunks and their full-text index.

SQLite: an FTS5 table `document_chunks_fts` kept in step with `document_chunks` by triggers, so
inserts, deletes and ON DELETE CASCADE from documents or tenants all reach the index.
PostgreSQL: a generated tsvector column `search_vector` with a GIN index.
Neither is in the models (see contentplatform.documents.models.include_name).

Revision 0004_search of 2026-11-22.
"""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0004_search"
down_revision = "0003_documents"

# `document_key` holds the document id so a chunk's index row is found through the index itself
# (an UNINDEXED column would mean a full scan per deleted chunk); user queries never look at it.
# Porter stemming over unicode61 tokens, English like the PostgreSQL side.
SQLITE = [
    """
    CREATE VIRTUAL TABLE document_chunks_fts USING fts5(
        content, heading, document_key, chunk_id UNINDEXED, tokenize = 'porter unicode61'
    )
    """,
    """
    CREATE TRIGGER document_chunks_fts_insert AFTER INSERT ON document_chunks BEGIN
        INSERT INTO document_chunks_fts (content, heading, document_key, chunk_id)
        VALUES (new.content, coalesce(new.heading, ''), new.document_id, new.id);
    END
    """,
    """
    CREATE TRIGGER document_chunks_fts_delete AFTER DELETE ON document_chunks BEGIN
        DELETE FROM document_chunks_fts WHERE rowid IN (
            SELECT rowid FROM document_chunks_fts
            WHERE document_chunks_fts MATCH 'document_key:' || old.document_id
              AND chunk_id = old.id
        );
    END
    """,
    """
    CREATE TRIGGER document_chunks_fts_update AFTER UPDATE ON document_chunks BEGIN
        DELETE FROM document_chunks_fts WHERE rowid IN (
            SELECT rowid FROM document_chunks_fts
            WHERE document_chunks_fts MATCH 'document_key:' || old.document_id
              AND chunk_id = old.id
        );
        INSERT INTO document_chunks_fts (content, heading, document_key, chunk_id)
        VALUES (new.content, coalesce(new.heading, ''), new.document_id, new.id);
    END
    """,
]

# 'english' (stemming, stop words) to match SQLite's porter tokenizer: "pricing" finds "prices".
# Headings weigh less than the text itself.
POSTGRESQL = [
    """
    ALTER TABLE document_chunks ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', content), 'A')
        || setweight(to_tsvector('english', coalesce(heading, '')), 'B')
    ) STORED
    """,
    "CREATE INDEX ix_document_chunks_search_vector ON document_chunks USING gin (search_vector)",
]


def upgrade() -> None:
    op.create_table(
        "document_chunks",
        *shapes.owned(),
        sa.Column("document_id", sa.Uuid(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("char_start", sa.Integer(), nullable=False),
        sa.Column("char_end", sa.Integer(), nullable=False),
        sa.Column("heading", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        *shapes.keys("document_chunks"),
        shapes.references("document_chunks", "document_id", "documents"),
        sa.UniqueConstraint(
            "document_id", "ordinal", name=op.f("uq_document_chunks_document_id_ordinal")
        ),
    )
    shapes.index_tenant("document_chunks")
    dialect = op.get_bind().dialect.name
    for statement in SQLITE if dialect == "sqlite" else POSTGRESQL:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER document_chunks_fts_{trigger}")
        op.execute("DROP TABLE document_chunks_fts")
    op.drop_table("document_chunks")
