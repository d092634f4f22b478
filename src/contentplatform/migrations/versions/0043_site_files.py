"""A snapshot keeps the site's robots.txt and llms.txt as the crawl found them, and which
sitemaps list which URLs (website_scan/crawling/site_files.py): what SEO's robots.txt sitemaps,
its sitemap cross-check and the audits read. Null in the snapshots made before.

Revision 0043_site_files of 2026-12-07 (issues 39 and 41).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0043_site_files"
down_revision = "0042_failed_requests"

COLUMNS = ("robots_txt", "llms_txt", "sitemaps")


def upgrade() -> None:
    with op.batch_alter_table("crawl_snapshots") as table:
        for name in COLUMNS:
            table.add_column(sa.Column(name, sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("crawl_snapshots") as table:
        for name in reversed(COLUMNS):
            table.drop_column(name)
