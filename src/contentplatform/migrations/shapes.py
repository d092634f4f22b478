"""The columns and constraints the revisions share.

Frozen, like the revisions themselves: a revision must run on a new database exactly as it ran
on the first one, so what these functions return never changes. A new shape is a new function.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime


def owned() -> list[sa.Column[object]]:
    """The first columns of a tenant's table: its key and its tenant."""
    return [
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
    ]


def timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    ]


def keys(table: str) -> list[sa.Constraint]:
    """A tenant's table's primary key, and its tenant (whose deletion takes its rows along)."""
    return [
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
        references(table, "tenant_id", "tenants"),
    ]


def references(
    table: str, column: str, target: str, *, ondelete: str | None = "CASCADE"
) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=op.f(f"fk_{table}_{column}_{target}"), ondelete=ondelete
    )


def index_tenant(table: str) -> None:
    op.create_index(op.f(f"ix_{table}_tenant_id"), table, ["tenant_id"])
