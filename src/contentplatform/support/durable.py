"""Support's background work: the retention of the failed requests tickets cite."""

from __future__ import annotations

from contentplatform.kit import durable
from contentplatform.kit.db import Database
from contentplatform.support import request_log


@durable.maintenance("support.failed_requests.retention")
async def forget_old_failed_requests(db: Database) -> int:
    """Failed requests are kept 30 days (request_log.RETENTION)."""
    return await request_log.forget_old(db)
