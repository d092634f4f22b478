"""Job instances: the occurrences of jobs."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.job_instances import models, procedures

domain = Domain(
    name="job_instances",
    routers=(procedures.router,),
    models=models,
)
