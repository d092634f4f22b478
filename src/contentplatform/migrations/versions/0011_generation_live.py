"""Live generation runs: what each run's model calls used, so a cancelled run is charged for the
calls it made and a retry pays once for what it reuses (revision of 2026-11-26).
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_generation_live"
down_revision = "0010_chat"


def upgrade() -> None:
    with op.batch_alter_table("generation_runs") as batch:
        batch.add_column(sa.Column("usage", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("generation_runs") as batch:
        batch.drop_column("usage")
