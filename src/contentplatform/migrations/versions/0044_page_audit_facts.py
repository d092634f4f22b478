"""A crawled page keeps what the audits read beyond its record: its time to first byte apart
from its load time, and its images with their alt text, Open Graph and Twitter tags, viewport,
security headers and mixed content (website_scan/crawling/pages.AuditFacts). Null in the pages
crawled before, whose checks then say not evaluated.

Revision 0044_page_audit_facts of 2026-12-07 (issue 41).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0044_page_audit_facts"
down_revision = "0043_site_files"


def upgrade() -> None:
    with op.batch_alter_table("crawl_pages") as table:
        table.add_column(sa.Column("ttfb_ms", sa.Integer(), nullable=True))
        table.add_column(sa.Column("audit", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("crawl_pages") as table:
        table.drop_column("audit")
        table.drop_column("ttfb_ms")
