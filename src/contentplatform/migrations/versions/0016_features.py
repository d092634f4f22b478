"""Feature flags: a tenant's override or opt-in of a flag declared in code (issue 18)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0016_features"
down_revision = "0015_api_keys"


def upgrade() -> None:
    op.create_table(
        "feature_overrides",
        *shapes.owned(),
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("set_by", sa.String(255), nullable=True),
        sa.Column("set_at", UTCDateTime(), nullable=False),
        *shapes.timestamps(),
        *shapes.keys("feature_overrides"),
        sa.UniqueConstraint("tenant_id", "key", name=op.f("uq_feature_overrides_tenant_id_key")),
    )
    shapes.index_tenant("feature_overrides")


def downgrade() -> None:
    op.drop_index(op.f("ix_feature_overrides_tenant_id"), table_name="feature_overrides")
    op.drop_table("feature_overrides")
