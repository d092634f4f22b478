"""Outbound webhooks: endpoints, the signed deliveries of events to them, their delivery log."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.webhooks import messages, models, procedures, workflows

domain = Domain(
    name="webhooks",
    routers=(procedures.router,),
    webhooks=messages.WEBHOOKS,
    models=models,
    durable=(workflows,),
)
