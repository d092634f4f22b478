"""What the page inventory refuses."""

from __future__ import annotations

from contentplatform.kit.errors import RecordNotFound


class PageNotFound(RecordNotFound):
    """There is no such page in this organization's SEO page inventory."""

    record = "SEO page"
