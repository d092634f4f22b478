"""A sync run keeps what it fetched and has not stored yet (the Search Console sync's window
totals), so a run resumed after a crash asks Google for no day twice.

Revision 0046_sync_run_checkpoint of 2026-12-07 (issue 39).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0046_sync_run_checkpoint"
down_revision = "0045_seo_llms_txt"


def upgrade() -> None:
    with op.batch_alter_table("seo_sync_runs") as table:
        table.add_column(sa.Column("checkpoint", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("seo_sync_runs") as table:
        table.drop_column("checkpoint")
