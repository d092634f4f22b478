"""Webhook connections' signing-secret rotation (issue 20): the secret a rotation replaced, kept
(sealed) until its overlap ends."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0021_publisher_secrets"
down_revision = "0020_draft_comments"


def upgrade() -> None:
    with op.batch_alter_table("publisher_connections") as connections:
        connections.add_column(
            sa.Column("previous_signing_secret_sealed", sa.Text(), nullable=True)
        )
        connections.add_column(
            sa.Column("previous_secret_expires_at", UTCDateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("publisher_connections") as connections:
        connections.drop_column("previous_secret_expires_at")
        connections.drop_column("previous_signing_secret_sealed")
