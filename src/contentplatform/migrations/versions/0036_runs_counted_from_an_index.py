"""Automation analytics count runs from one index (issue 38's benchmark).

The reports count a period's runs in the database per span (job_instances.repository:
finished_counts, in_flight_counts, duration_percentiles). `ix_job_instances_runs` holds all
they read, so they never visit the table: runs that finished by (tenant_id, finished_at), runs
in flight (finished_at NULL) by their start, each with its status, start and job. It replaces
`ix_job_instances_tenant_id_finished_at`, its first two columns.

Revision 0036_runs_counted_from_an_index of 2026-12-06.
"""

from __future__ import annotations

from alembic import op

revision = "0036_runs_counted_from_an_index"
down_revision = "0035_analytics_exports"

RUNS = ["tenant_id", "finished_at", "started_at", "status", "job_id"]


def upgrade() -> None:
    op.create_index("ix_job_instances_runs", "job_instances", RUNS)
    op.drop_index("ix_job_instances_tenant_id_finished_at", table_name="job_instances")


def downgrade() -> None:
    op.create_index(
        "ix_job_instances_tenant_id_finished_at", "job_instances", ["tenant_id", "finished_at"]
    )
    op.drop_index("ix_job_instances_runs", table_name="job_instances")
