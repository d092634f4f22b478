"""Draft comments and archiving (issue 20)."""

from __future__ import annotations

revision = "0020_draft_comments"
down_revision = "0019_events"


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
