"""Event streams: the logs of resumable SSE streams (revision of 2026-11-25).

A stream's row hands out its event ids and says whether its terminal event came; its events are
kept until it expires (24 hours after its last event), when the row and its events are purged.
"""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0009_streams"
down_revision = "0008_hot_path"


def upgrade() -> None:
    op.create_table(
        "streams",
        sa.Column("id", sa.String(255), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("last_id", sa.Integer(), nullable=False),
        sa.Column("closed", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        *shapes.keys("streams"),
    )
    shapes.index_tenant("streams")
    op.create_index(op.f("ix_streams_expires_at"), "streams", ["expires_at"])
    op.create_table(
        "stream_events",
        sa.Column("stream_id", sa.String(255), nullable=False),
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("terminal", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("stream_id", "id", name=op.f("pk_stream_events")),
        shapes.references("stream_events", "stream_id", "streams"),
    )


def downgrade() -> None:
    op.drop_table("stream_events")
    op.drop_index(op.f("ix_streams_expires_at"), table_name="streams")
    op.drop_index(op.f("ix_streams_tenant_id"), table_name="streams")
    op.drop_table("streams")
