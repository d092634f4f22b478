"""What SEO plans hear: a job run that started, ended or failed, and a draft created, moved or
published (in the dispatcher's transaction) move the items that follow their job instances
(service.follow). In a savepoint: a failure is logged and breaks no other listener (the next
read of the plan follows again)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.seo.plans import following

log = logging.getLogger(__name__)

HEARD = frozenset(
    {
        "draft.created",
        "draft.status_changed",
        "draft.published",
        "job.run_completed",
        "job.run_failed",
    }
)


@events.listener("seo.plans")
async def heard(session: AsyncSession, taken: Sequence[Event]) -> None:
    tenants = sorted({event.tenant_id for event in taken if event.type in HEARD}, key=str)
    for tenant_id in tenants:
        try:
            async with session.begin_nested():
                await following.follow(session, tenant_id)
        except Exception:
            log.exception("SEO plans could not follow the events of tenant %s", tenant_id)
