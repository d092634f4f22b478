"""AI usage (issue 38): what each debit of a metered operation was for.

`credit_ledger` gains, on every row of a commit's debit: `model` (the model its calls used;
several: their names sorted and joined by "+"), `workflow_id`, `workflow_run_id` (a generation
run) and `job_instance_id`. Rows written before stay null: their usage reads under no model.
Indexes for the line items of one run or one instance, the tenant first; the reads by period
use `ix_credit_ledger_tenant_id_created_at`.

Revision 0034_ai_usage of 2026-12-06.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0034_ai_usage"
down_revision = "0033_automation_analytics"


def upgrade() -> None:
    # batch: SQLite adds the columns in place (ADD COLUMN needs no copy of the table).
    with op.batch_alter_table("credit_ledger") as ledger:
        ledger.add_column(sa.Column("model", sa.String(100), nullable=True))
        ledger.add_column(sa.Column("workflow_id", sa.Uuid(), nullable=True))
        ledger.add_column(sa.Column("workflow_run_id", sa.Uuid(), nullable=True))
        ledger.add_column(sa.Column("job_instance_id", sa.Uuid(), nullable=True))
    op.create_index(
        "ix_credit_ledger_tenant_id_workflow_run_id",
        "credit_ledger",
        ["tenant_id", "workflow_run_id"],
    )
    op.create_index(
        "ix_credit_ledger_tenant_id_job_instance_id",
        "credit_ledger",
        ["tenant_id", "job_instance_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_credit_ledger_tenant_id_job_instance_id", table_name="credit_ledger")
    op.drop_index("ix_credit_ledger_tenant_id_workflow_run_id", table_name="credit_ledger")
    with op.batch_alter_table("credit_ledger") as ledger:
        ledger.drop_column("job_instance_id")
        ledger.drop_column("workflow_run_id")
        ledger.drop_column("workflow_id")
        ledger.drop_column("model")
