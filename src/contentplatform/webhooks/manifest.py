"""Outbound webhooks: endpoints, the signed deliveries of events to them, their delivery log."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.webhooks import durable, messages, models, procedures

domain = Domain(
    name="webhooks",
    routers=(procedures.router,),
    sent_requests=messages.SENT_REQUESTS,
    models=models,
    durable=(durable,),
)
