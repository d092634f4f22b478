"""The request path: partial indexes of live rows for the lists, their counts and stats
(revision of 2026-11-24).

Lists of drafts and documents, their totals and draft stats read only live rows (`deleted_at IS
NULL`). Indexes holding only those rows let a page and its count be read from the index; each
replaces the full index on the same columns, which no query needs any more.
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_hot_path"
down_revision = "0007_publishers"

LIVE = sa.text("deleted_at IS NULL")
# (table, old full index, new partial index, columns)
INDEXES = [
    (
        "drafts",
        "ix_drafts_tenant_id_created_at",
        "ix_drafts_tenant_id_created_at_live",
        ["tenant_id", "created_at"],
    ),
    (
        "drafts",
        "ix_drafts_tenant_id_status",
        "ix_drafts_tenant_id_status_live",
        ["tenant_id", "status"],
    ),
    (
        "documents",
        "ix_documents_tenant_id_created_at",
        "ix_documents_tenant_id_created_at_live",
        ["tenant_id", "created_at"],
    ),
]


def upgrade() -> None:
    for table, full, live, columns in INDEXES:
        op.create_index(live, table, columns, sqlite_where=LIVE, postgresql_where=LIVE)
        op.drop_index(full, table_name=table)


def downgrade() -> None:
    for table, full, live, columns in INDEXES:
        op.create_index(full, table, columns)
        op.drop_index(live, table_name=table)
