"""Counts kept beside drafts and documents, so a list's `total` costs one row, not a count of the
tenant's rows (issue 36): `draft_counts` (tenant, status) and `document_counts` (tenant, status,
archived), each the number of live rows.

Triggers keep them, in the transaction of the write: every path that inserts, deletes (a tenant's
deletion cascading too), soft-deletes, archives or changes a status moves them, the bulk ones as
well, without the code having to remember. Decrements only update (a row being counted down was
counted up first), so a tenant's deletion never inserts a count that points at it. On
PostgreSQL the triggers are deferred to the commit (see _postgresql): a count is a row every
write of the tenant's drafts locks, and it must not be locked in the middle of a transaction.

The status index gains created_at: a page of one status is read in order from the index.

Revision 0030_list_counts of 2026-12-06.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030_list_counts"
down_revision = "0029_media_license_alerts"

LIVE = sa.text("deleted_at IS NULL")

# Per counted table: its count table, the bucket columns and how a row gives each ({row} is
# `new`/`old` in a row trigger, the transition table in a statement trigger), and the columns
# whose change can move a row between buckets.
COUNTED = {
    "drafts": (
        "draft_counts",
        {"tenant_id": "{row}.tenant_id", "status": "{row}.status"},
        ("tenant_id", "status", "deleted_at"),
    ),
    "documents": (
        "document_counts",
        {
            "tenant_id": "{row}.tenant_id",
            "status": "{row}.status",
            "archived": "{row}.archived_at IS NOT NULL",
        },
        ("tenant_id", "status", "deleted_at", "archived_at"),
    ),
}


def _of(buckets: dict[str, str], row: str) -> list[str]:
    return [expression.format(row=row) for expression in buckets.values()]


def _same_bucket(buckets: dict[str, str], row: str, counts: str) -> str:
    return " AND ".join(
        f"{counts}.{column} = ({expression})"
        for column, expression in zip(buckets, _of(buckets, row), strict=True)
    )


def _sqlite(
    table: str, counts: str, buckets: dict[str, str], watched: tuple[str, ...]
) -> list[str]:
    columns = ", ".join(buckets)
    key = ", ".join(buckets)

    def up(row: str) -> str:
        # WHERE: SQLite's parser needs one before ON CONFLICT in an INSERT ... SELECT.
        return (
            f"INSERT INTO {counts} ({columns}, live) SELECT {', '.join(_of(buckets, row))}, 1 "
            f"WHERE {row}.deleted_at IS NULL "
            f"ON CONFLICT ({key}) DO UPDATE SET live = live + 1;"
        )

    def down(row: str) -> str:
        return (
            f"UPDATE {counts} SET live = live - 1 "
            f"WHERE {row}.deleted_at IS NULL AND {_same_bucket(buckets, row, counts)};"
        )

    return [
        f"CREATE TRIGGER {counts}_insert AFTER INSERT ON {table} BEGIN {up('new')} END",
        f"CREATE TRIGGER {counts}_delete AFTER DELETE ON {table} BEGIN {down('old')} END",
        f"CREATE TRIGGER {counts}_update AFTER UPDATE OF {', '.join(watched)} ON {table} "
        f"BEGIN {down('old')} {up('new')} END",
    ]


def _postgresql(
    table: str, counts: str, buckets: dict[str, str], watched: tuple[str, ...]
) -> list[str]:
    columns = ", ".join(buckets)
    changed = " OR ".join(
        f"({old}) IS DISTINCT FROM ({new})"
        for old, new in zip(_of(buckets, "old"), _of(buckets, "new"), strict=True)
    )
    down = (
        "IF old.deleted_at IS NULL THEN "
        f"UPDATE {counts} SET live = live - 1 WHERE {_same_bucket(buckets, 'old', counts)}; "
        "END IF;"
    )
    up = (
        "IF new.deleted_at IS NULL THEN "
        f"INSERT INTO {counts} ({columns}, live) VALUES ({', '.join(_of(buckets, 'new'))}, 1) "
        f"ON CONFLICT ({columns}) DO UPDATE SET live = {counts}.live + 1; "
        "END IF;"
    )
    old_key = ", ".join(_of(buckets, "old"))
    new_key = ", ".join(_of(buckets, "new"))
    # Deferred to the commit: a count's row lock is the last lock its transaction takes, held
    # for the commit alone, so it never sits between locks the code takes (advisory locks,
    # rows) and cannot close a cycle with them. A moved row takes its two counts in one order.
    function = f"""
        CREATE FUNCTION {counts}_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN {up}
            ELSIF TG_OP = 'DELETE' THEN {down}
            ELSIF ROW({old_key}) < ROW({new_key}) THEN {down} {up}
            ELSE {up} {down}
            END IF;
            RETURN NULL;
        END $$
        """
    deferred = "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW"
    return [
        function,
        f"CREATE CONSTRAINT TRIGGER {counts}_insert AFTER INSERT ON {table} {deferred} "
        f"WHEN (new.deleted_at IS NULL) EXECUTE FUNCTION {counts}_changed()",
        f"CREATE CONSTRAINT TRIGGER {counts}_delete AFTER DELETE ON {table} {deferred} "
        f"WHEN (old.deleted_at IS NULL) EXECUTE FUNCTION {counts}_changed()",
        f"CREATE CONSTRAINT TRIGGER {counts}_update AFTER UPDATE OF {', '.join(watched)} "
        f"ON {table} {deferred} "
        f"WHEN ((old.deleted_at IS NULL) <> (new.deleted_at IS NULL) OR {changed}) "
        f"EXECUTE FUNCTION {counts}_changed()",
    ]


def _fill(table: str, counts: str, buckets: dict[str, str]) -> str:
    return (
        f"INSERT INTO {counts} ({', '.join(buckets)}, live) "
        f"SELECT {', '.join(_of(buckets, table))}, count(*) FROM {table} "
        f"WHERE deleted_at IS NULL GROUP BY {', '.join(_of(buckets, table))}"
    )


def upgrade() -> None:
    op.create_table(
        "draft_counts",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("live", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "status", name=op.f("pk_draft_counts")),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_draft_counts_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
    )
    op.create_table(
        "document_counts",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("live", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "status", "archived", name=op.f("pk_document_counts")),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_document_counts_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
    )
    dialect = op.get_bind().dialect.name
    for table, (counts, buckets, watched) in COUNTED.items():
        op.execute(_fill(table, counts, buckets))
        make = _sqlite if dialect == "sqlite" else _postgresql
        for statement in make(table, counts, buckets, watched):
            op.execute(statement)
    op.drop_index("ix_drafts_tenant_id_status_live", table_name="drafts")
    op.create_index(
        "ix_drafts_tenant_id_status_created_at_live",
        "drafts",
        ["tenant_id", "status", "created_at"],
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )


def downgrade() -> None:
    op.drop_index("ix_drafts_tenant_id_status_created_at_live", table_name="drafts")
    op.create_index(
        "ix_drafts_tenant_id_status_live",
        "drafts",
        ["tenant_id", "status"],
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )
    postgresql = op.get_bind().dialect.name == "postgresql"
    for table, (counts, _buckets, _watched) in COUNTED.items():
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER {counts}_{trigger}" + (f" ON {table}" if postgresql else ""))
        if postgresql:
            op.execute(f"DROP FUNCTION {counts}_changed()")
        op.drop_table(counts)
