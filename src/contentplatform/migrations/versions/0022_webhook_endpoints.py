"""Outbound webhook endpoints and their deliveries (issue 20)."""

from __future__ import annotations

revision = "0022_webhook_endpoints"
down_revision = "0021_publisher_secrets"


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
