"""Full-text search that reads only the tenant's own chunks (issue 36).

- `document_chunk_stats`: per tenant, how many chunks it has and their total length, kept by
  triggers on `document_chunks` (inserts, deletes, and the cascades from documents and tenants),
  so BM25's statistics are one row read, not a scan of the tenant's chunks. Filled from the
  chunks there are.
- SQLite: the FTS5 table gains `tenant_key` (`t` and the tenant's hex id), so a search says
  `tenant_key:"t<hex>" AND (...)` and FTS5 intersects the two doclists: another tenant's chunks
  holding the same words are skipped inside the index rather than joined and thrown away. FTS5
  cannot add a column: the table is made again and filled from the chunks.
- PostgreSQL: the GIN index on the search vector leads with `tenant_id` (btree_gin), so a match
  is found among the tenant's entries rather than among every tenant's.

Revision 0032_tenant_search of 2026-12-06.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032_tenant_search"
down_revision = "0031_drafts_search"

_FTS_TRIGGERS = ("insert", "delete", "update")


def _sqlite_fts(tenant_key: bool) -> list[str]:
    """The FTS5 table and its triggers, with `tenant_key` or as 0004 made them."""
    key_column = " tenant_key," if tenant_key else ""
    key_value = " 't' || new.tenant_id," if tenant_key else ""
    insert = f"""
        INSERT INTO document_chunks_fts (content, heading, document_key,{key_column} chunk_id)
        VALUES (new.content, coalesce(new.heading, ''), new.document_id,{key_value} new.id);
    """
    delete = """
        DELETE FROM document_chunks_fts WHERE rowid IN (
            SELECT rowid FROM document_chunks_fts
            WHERE document_chunks_fts MATCH 'document_key:' || old.document_id
              AND chunk_id = old.id
        );
    """
    return [
        f"""
        CREATE VIRTUAL TABLE document_chunks_fts USING fts5(
            content, heading, document_key,{key_column} chunk_id UNINDEXED,
            tokenize = 'porter unicode61'
        )
        """,
        f"""
        INSERT INTO document_chunks_fts (content, heading, document_key,{key_column} chunk_id)
        SELECT content, coalesce(heading, ''), document_id,
               {"'t' || tenant_id," if tenant_key else ""} id
        FROM document_chunks ORDER BY tenant_id, document_id, ordinal
        """,
        f"CREATE TRIGGER document_chunks_fts_insert AFTER INSERT ON document_chunks BEGIN {insert}"
        " END",
        f"CREATE TRIGGER document_chunks_fts_delete AFTER DELETE ON document_chunks BEGIN {delete}"
        " END",
        f"CREATE TRIGGER document_chunks_fts_update AFTER UPDATE ON document_chunks BEGIN {delete}"
        f" {insert} END",
    ]


def _drop_sqlite_fts() -> None:
    for trigger in _FTS_TRIGGERS:
        op.execute(f"DROP TRIGGER document_chunks_fts_{trigger}")
    op.execute("DROP TABLE document_chunks_fts")


# A chunk's length is char_end - char_start, as BM25 reads it (documents/index.py).
SQLITE_STATS = [
    """
    CREATE TRIGGER document_chunk_stats_insert AFTER INSERT ON document_chunks BEGIN
        INSERT INTO document_chunk_stats (tenant_id, chunks, total_length)
        VALUES (new.tenant_id, 1, new.char_end - new.char_start)
        ON CONFLICT (tenant_id) DO UPDATE SET
            chunks = chunks + 1, total_length = total_length + excluded.total_length;
    END
    """,
    """
    CREATE TRIGGER document_chunk_stats_delete AFTER DELETE ON document_chunks BEGIN
        UPDATE document_chunk_stats SET
            chunks = chunks - 1, total_length = total_length - (old.char_end - old.char_start)
        WHERE tenant_id = old.tenant_id;
    END
    """,
]

# Once per statement, from its transition table: an ingestion's one insert of many chunks is one
# update of each tenant's row, taken in the order of tenant ids (two transactions lock alike).
POSTGRESQL_STATS = [
    """
    CREATE FUNCTION document_chunk_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO document_chunk_stats (tenant_id, chunks, total_length)
        SELECT tenant_id, count(*), sum(char_end - char_start) FROM inserted
        GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id) DO UPDATE SET
            chunks = document_chunk_stats.chunks + excluded.chunks,
            total_length = document_chunk_stats.total_length + excluded.total_length;
        RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION document_chunk_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE document_chunk_stats AS stats SET
            chunks = stats.chunks - gone.chunks, total_length = stats.total_length - gone.length
        FROM (
            SELECT tenant_id, count(*) AS chunks, sum(char_end - char_start) AS length
            FROM deleted GROUP BY tenant_id ORDER BY tenant_id
        ) AS gone
        WHERE stats.tenant_id = gone.tenant_id;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER document_chunk_stats_insert AFTER INSERT ON document_chunks
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
    EXECUTE FUNCTION document_chunk_stats_insert()
    """,
    """
    CREATE TRIGGER document_chunk_stats_delete AFTER DELETE ON document_chunks
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT
    EXECUTE FUNCTION document_chunk_stats_delete()
    """,
]

POSTGRESQL_INDEX = [
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    "CREATE INDEX ix_document_chunks_tenant_id_search_vector ON document_chunks "
    "USING gin (tenant_id, search_vector)",
    "DROP INDEX ix_document_chunks_search_vector",
]


def upgrade() -> None:
    op.create_table(
        "document_chunk_stats",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("chunks", sa.Integer(), nullable=False),
        sa.Column("total_length", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_document_chunk_stats")),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_document_chunk_stats_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
    )
    op.execute(
        """
        INSERT INTO document_chunk_stats (tenant_id, chunks, total_length)
        SELECT tenant_id, count(*), sum(char_end - char_start) FROM document_chunks
        GROUP BY tenant_id
        """
    )
    if op.get_bind().dialect.name == "sqlite":
        _drop_sqlite_fts()
        statements = [*_sqlite_fts(tenant_key=True), *SQLITE_STATS]
    else:
        statements = [*POSTGRESQL_INDEX, *POSTGRESQL_STATS]
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "delete"):
            op.execute(f"DROP TRIGGER document_chunk_stats_{trigger}")
        _drop_sqlite_fts()
        for statement in _sqlite_fts(tenant_key=False):
            op.execute(statement)
    else:
        for trigger in ("insert", "delete"):
            op.execute(f"DROP TRIGGER document_chunk_stats_{trigger} ON document_chunks")
            op.execute(f"DROP FUNCTION document_chunk_stats_{trigger}()")
        op.execute(
            "CREATE INDEX ix_document_chunks_search_vector ON document_chunks "
            "USING gin (search_vector)"
        )
        op.execute("DROP INDEX ix_document_chunks_tenant_id_search_vector")
        # btree_gin stays: another index may use it, and it costs nothing unused.
    op.drop_table("document_chunk_stats")
