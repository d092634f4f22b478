"""Webhook connections' signing-secret rotation (issue 20)."""

from __future__ import annotations

revision = "0021_publisher_secrets"
down_revision = "0020_draft_comments"


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
