"""Drafts' search through an index instead of a scan of their text (issue 36).

`drafts.list?search=` matches part of a word, punctuation and all ("Lyon.", "100%", "snake_case"),
ignoring case: a substring, so trigrams on both dialects.
SQLite: an FTS5 table `drafts_search` with the trigram tokenizer over the drafts' title and
content_text, its rows the drafts' rowids (external content: the text is not stored twice), kept
in step by triggers (ON DELETE CASCADE from tenants reaches them too). detail=none: it keeps which
drafts hold a trigram, not where (measured on generated 4 KB drafts: 24x smaller, written twice
as fast as with positions), so it finds the drafts that hold every trigram of the search and the
query checks those drafts' text. A rowid is stable unless the database is VACUUMed:
`INSERT INTO drafts_search (drafts_search) VALUES ('rebuild')` then.
PostgreSQL: pg_trgm GIN indexes on lower(title) and lower(content_text), which a LIKE '%...%'
uses.
Neither is in the models (see contentplatform.drafts.models.include_name).

Revision 0031_drafts_search of 2026-12-06.
"""

from __future__ import annotations

from alembic import op

revision = "0031_drafts_search"
down_revision = "0030_list_counts"

_INDEX_NEW = (
    "INSERT INTO drafts_search (rowid, title, content_text) "
    "VALUES (new.rowid, new.title, new.content_text);"
)
_FORGET_OLD = (
    "INSERT INTO drafts_search (drafts_search, rowid, title, content_text) "
    "VALUES ('delete', old.rowid, old.title, old.content_text);"
)

SQLITE = [
    """
    CREATE VIRTUAL TABLE drafts_search USING fts5(
        title, content_text, content = 'drafts', tokenize = 'trigram', detail = none
    )
    """,
    f"CREATE TRIGGER drafts_search_insert AFTER INSERT ON drafts BEGIN {_INDEX_NEW} END",
    f"CREATE TRIGGER drafts_search_delete AFTER DELETE ON drafts BEGIN {_FORGET_OLD} END",
    "CREATE TRIGGER drafts_search_update AFTER UPDATE OF title, content_text ON drafts "
    f"BEGIN {_FORGET_OLD} {_INDEX_NEW} END",
    "INSERT INTO drafts_search (drafts_search) VALUES ('rebuild')",
]

POSTGRESQL = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX ix_drafts_title_trigrams ON drafts USING gin (lower(title) gin_trgm_ops)",
    "CREATE INDEX ix_drafts_content_text_trigrams ON drafts "
    "USING gin (lower(content_text) gin_trgm_ops)",
]


def upgrade() -> None:
    for statement in SQLITE if op.get_bind().dialect.name == "sqlite" else POSTGRESQL:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER drafts_search_{trigger}")
        op.execute("DROP TABLE drafts_search")
    else:
        op.execute("DROP INDEX ix_drafts_content_text_trigrams")
        op.execute("DROP INDEX ix_drafts_title_trigrams")
