"""Generation runs follow a workflow definition, frozen on the run (issue 22)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0028_workflow_runs"
down_revision = "0027_workflows"

COLUMNS = (
    "workflow_id",
    "workflow_version",
    "definition",
    "trigger",
    "steps",
    "waiting_until",
    "result",
)


def upgrade() -> None:
    # Plain columns (no reference: a run keeps the definition it ran, whatever becomes of the
    # workflow), added in place on both databases.
    op.add_column("generation_runs", sa.Column("workflow_id", sa.Uuid(), nullable=True))
    op.add_column("generation_runs", sa.Column("workflow_version", sa.Integer(), nullable=True))
    op.add_column("generation_runs", sa.Column("definition", sa.JSON(), nullable=True))
    op.add_column(
        "generation_runs",
        sa.Column("trigger", sa.String(20), nullable=False, server_default="api"),
    )
    op.add_column("generation_runs", sa.Column("steps", sa.JSON(), nullable=True))
    op.add_column("generation_runs", sa.Column("waiting_until", UTCDateTime(), nullable=True))
    op.add_column("generation_runs", sa.Column("result", sa.JSON(), nullable=True))
    op.execute("UPDATE generation_runs SET trigger = 'job_instance' WHERE instance_id IS NOT NULL")
    # A job may pin its workflow's version (None: the live version when a run starts).
    op.add_column("jobs", sa.Column("workflow_version", sa.Integer(), nullable=True))
    op.create_index(
        "ix_generation_runs_tenant_id_workflow_id",
        "generation_runs",
        ["tenant_id", "workflow_id", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_generation_runs_tenant_id_workflow_id", "generation_runs")
    with op.batch_alter_table("jobs") as jobs:
        jobs.drop_column("workflow_version")
    with op.batch_alter_table("generation_runs") as runs:
        for column in COLUMNS:
            runs.drop_column(column)
