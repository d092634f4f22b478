"""Billing: plans, the subscription, invoices and plan limits on Stripe, and its events."""

from __future__ import annotations

from contentplatform.billing import durable, models, procedures
from contentplatform.core.manifest import Domain

domain = Domain(
    name="billing",
    routers=(procedures.router, procedures.inbound),
    models=models,
    durable=(durable,),
)
