"""Team: members and invitations kept in step with the identity provider, and its events."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.team import durable, models, procedures

domain = Domain(
    name="team",
    routers=(procedures.router, procedures.inbound),
    models=models,
    durable=(durable,),
)
