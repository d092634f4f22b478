"""In-app notifications and watches (issue 20)."""

from __future__ import annotations

revision = "0023_notifications"
down_revision = "0022_webhook_endpoints"


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
