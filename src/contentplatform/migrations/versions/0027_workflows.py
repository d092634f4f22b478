"""Workflows and their versions; jobs may name one (issue 22)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0027_workflows"
down_revision = "0026_media"

DEFAULT = sa.text("is_default AND deleted_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "workflows",
        *shapes.owned(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("published_version", sa.Integer(), nullable=True),
        sa.Column("latest_version", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=True),
        *shapes.timestamps(),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *shapes.keys("workflows"),
    )
    shapes.index_tenant("workflows")
    op.create_index("ix_workflows_tenant_id_updated_at", "workflows", ["tenant_id", "updated_at"])
    op.create_index(
        "uq_workflows_tenant_id_default",
        "workflows",
        ["tenant_id"],
        unique=True,
        sqlite_where=DEFAULT,
        postgresql_where=DEFAULT,
    )

    op.create_table(
        "workflow_versions",
        *shapes.owned(),
        sa.Column("workflow_id", sa.Uuid(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("source_version", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.String(255), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        *shapes.keys("workflow_versions"),
        shapes.references("workflow_versions", "workflow_id", "workflows"),
        sa.UniqueConstraint(
            "workflow_id", "version", name=op.f("uq_workflow_versions_workflow_id_version")
        ),
    )
    shapes.index_tenant("workflow_versions")

    # A job may name the workflow its runs use; a workflow a job names is never deleted (soft
    # deletes only, refused while a job names it), so the reference has no ON DELETE.
    if op.get_bind().dialect.name == "sqlite":
        # SQLite adds a column with its reference in place; a batch copy of `jobs` would drop
        # the table under foreign keys, taking its instances along.
        op.execute(
            "ALTER TABLE jobs ADD COLUMN workflow_id CHAR(32) "
            "CONSTRAINT fk_jobs_workflow_id_workflows REFERENCES workflows (id)"
        )
    else:
        op.add_column("jobs", sa.Column("workflow_id", sa.Uuid(), nullable=True))
        op.create_foreign_key(
            op.f("fk_jobs_workflow_id_workflows"), "jobs", "workflows", ["workflow_id"], ["id"]
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # SQLite drops a referencing column only by copying the table, whose old copy is
        # dropped: with foreign keys on, that would delete the jobs' instances along with it.
        op.execute("PRAGMA foreign_keys=OFF")
        with op.batch_alter_table("jobs") as jobs:
            jobs.drop_column("workflow_id")
        op.execute("PRAGMA foreign_keys=ON")
    else:
        op.drop_constraint(op.f("fk_jobs_workflow_id_workflows"), "jobs", type_="foreignkey")
        op.drop_column("jobs", "workflow_id")
    for table in ("workflow_versions", "workflows"):
        op.drop_table(table)
