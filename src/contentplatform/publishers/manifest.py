"""Publishers: connections, and publish attempts run as DBOS workflows."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.publishers import durable, models, procedures
from contentplatform.publishers.strategies import webhook

domain = Domain(
    name="publishers",
    routers=(procedures.router,),
    sent_requests=webhook.SENT_REQUESTS,
    models=models,
    durable=(durable,),
)
