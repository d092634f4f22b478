"""Jobs: what to write and when."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.jobs import models, procedures

domain = Domain(
    name="jobs",
    routers=(procedures.router,),
    models=models,
)
