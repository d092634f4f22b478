"""Support: tickets with public replies and internal notes, and the public contact form."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.support import models, procedures

domain = Domain(
    name="support",
    routers=(procedures.router, procedures.public, procedures.staff),
    models=models,
)
