"""Draft comments and archiving (issue 20): review comments, threaded one level deep.

Archiving needs no column: `archived` is one more value of `drafts.status` (String(20)).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0020_draft_comments"
down_revision = "0019_events"


def upgrade() -> None:
    op.create_table(
        "draft_comments",
        *shapes.owned(),
        sa.Column("draft_id", sa.Uuid(), nullable=False),
        sa.Column("parent_id", sa.Uuid(), nullable=True),
        sa.Column("author_id", sa.String(255), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("anchor", sa.JSON(), nullable=True),
        sa.Column("mentions", sa.JSON(), nullable=False),
        sa.Column("resolved_at", UTCDateTime(), nullable=True),
        sa.Column("resolved_by", sa.String(255), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("draft_comments"),
        shapes.references("draft_comments", "draft_id", "drafts"),
        shapes.references("draft_comments", "parent_id", "draft_comments"),
    )
    shapes.index_tenant("draft_comments")
    op.create_index(
        "ix_draft_comments_tenant_id_draft_id_created_at",
        "draft_comments",
        ["tenant_id", "draft_id", "created_at"],
    )
    op.create_index("ix_draft_comments_parent_id", "draft_comments", ["parent_id"])


def downgrade() -> None:
    op.drop_table("draft_comments")
