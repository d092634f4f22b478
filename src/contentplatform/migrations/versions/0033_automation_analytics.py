"""Automation analytics (issue 38): why a job instance failed, and the indexes its figures read.

- `job_instances.problem`: the reason code of a failed instance (generation_error,
  provider_timeout, insufficient_credits, validation_error, review_rejected, cancelled,
  unknown; see job_instances.service.PROBLEMS), recorded when it fails. Instances that failed
  before this revision get `unknown`.
- `ix_job_instances_tenant_id_finished_at`: finished runs by the instant that places them in
  a period; `ix_job_instances_tenant_id_started_at`: runs still in flight by their start.

Revision 0033_automation_analytics of 2026-12-06.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0033_automation_analytics"
down_revision = "0032_tenant_search"


def upgrade() -> None:
    with op.batch_alter_table("job_instances") as batch:
        batch.add_column(sa.Column("problem", sa.String(40), nullable=True))
    op.execute("UPDATE job_instances SET problem = 'unknown' WHERE status = 'failed'")
    op.create_index(
        "ix_job_instances_tenant_id_finished_at", "job_instances", ["tenant_id", "finished_at"]
    )
    op.create_index(
        "ix_job_instances_tenant_id_started_at", "job_instances", ["tenant_id", "started_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_job_instances_tenant_id_started_at", table_name="job_instances")
    op.drop_index("ix_job_instances_tenant_id_finished_at", table_name="job_instances")
    with op.batch_alter_table("job_instances") as batch:
        batch.drop_column("problem")
