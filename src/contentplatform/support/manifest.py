"""Support: tickets with public replies and internal notes, the public contact form, and the
failed requests a ticket may cite."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.support import durable, models, procedures

domain = Domain(
    name="support",
    routers=(procedures.router, procedures.public, procedures.staff),
    models=models,
    durable=(durable,),
)
