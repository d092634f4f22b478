"""A run's duration stored with it, and held by the index automation analytics read.

`job_instances.duration_ms`: finished_at - started_at in whole milliseconds (never below 0) of
a run that ran to its end (completed or failed, having started), None otherwise; kept by the
model whenever a row is written (job_instances/models.py). Analytics summed and ranked a
duration worked out of two instants for every run of a period (on SQLite two julianday() calls
a row); now they read an integer from `ix_job_instances_runs`, which gains the column. Existing
runs get theirs here.

Revision 0053_job_run_durations of 2026-12-07 (issue 38: the reports beside a bare count).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0053_job_run_durations"
down_revision = "0052_seo_keyword_research"

RUNS = ["tenant_id", "finished_at", "started_at", "status", "job_id"]
TIMED = "status IN ('completed', 'failed') AND started_at IS NOT NULL AND finished_at IS NOT NULL"
MILLISECONDS = {
    "sqlite": "CAST(round((julianday(finished_at) - julianday(started_at)) * 86400000.0)"
    " AS INTEGER)",
    "postgresql": "CAST(round(extract(epoch FROM finished_at - started_at) * 1000) AS bigint)",
}


def upgrade() -> None:
    op.add_column("job_instances", sa.Column("duration_ms", sa.BigInteger(), nullable=True))
    milliseconds = MILLISECONDS[op.get_bind().dialect.name]
    op.execute(
        f"UPDATE job_instances SET duration_ms = CASE WHEN {milliseconds} < 0 THEN 0 "
        f"ELSE {milliseconds} END WHERE {TIMED}"
    )
    op.drop_index("ix_job_instances_runs", table_name="job_instances")
    op.create_index("ix_job_instances_runs", "job_instances", [*RUNS, "duration_ms"])


def downgrade() -> None:
    op.drop_index("ix_job_instances_runs", table_name="job_instances")
    op.create_index("ix_job_instances_runs", "job_instances", RUNS)
    with op.batch_alter_table("job_instances") as batch:
        batch.drop_column("duration_ms")
