"""What seo.syncSearchConsole refuses (besides connections' SearchConsoleNotConnected, 409)."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest


class SyncWindowRefused(BadRequest):
    """The sync's window cannot be synced: startDate after endDate, endDate after today (in the
    organization's time zone), or startDate older than 16 months (what Search Console keeps)."""
