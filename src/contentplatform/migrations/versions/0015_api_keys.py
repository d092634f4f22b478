"""API keys: a second credential kind, stored as a hash (issue 18)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0015_api_keys"
down_revision = "0014_team"


def upgrade() -> None:
    op.create_table(
        "api_keys",
        *shapes.owned(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("prefix", sa.String(20), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("role", sa.String(10), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_by", sa.String(255), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("api_keys"),
        shapes.references("api_keys", "user_id", "users"),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_api_keys_secret_hash")),
    )
    shapes.index_tenant("api_keys")


def downgrade() -> None:
    op.drop_index(op.f("ix_api_keys_tenant_id"), table_name="api_keys")
    op.drop_table("api_keys")
