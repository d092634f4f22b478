"""Publishers: connections, and publish attempts run as workflows."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.publishers import models, procedures, workflows
from contentplatform.publishers.strategies import webhook

domain = Domain(
    name="publishers",
    routers=(procedures.router,),
    webhooks=webhook.WEBHOOKS,
    models=models,
    durable=(workflows,),
)
