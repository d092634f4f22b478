"""A media asset remembers the licence alert it last raised (expiring or expired, and for which
expiry), so each is told once."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029_media_license_alerts"
down_revision = "0028_workflow_runs"


def upgrade() -> None:
    op.add_column("media_assets", sa.Column("license_alerted", sa.String(60), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("media_assets") as assets:
        assets.drop_column("license_alerted")
