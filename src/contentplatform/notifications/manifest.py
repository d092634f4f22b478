"""Notifications: in-app notifications per user, made from the events outbox by a listener and
chosen by watches (per resource, and the tenant watch of role defaults)."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.notifications import durable, models, procedures

domain = Domain(
    name="notifications",
    routers=(procedures.notifications, procedures.watches),
    models=models,
    durable=(durable,),
)
