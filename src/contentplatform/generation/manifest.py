"""Generation: the article pipeline, its runs and their queue."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.generation import events, models, procedures, workflows

domain = Domain(
    name="generation",
    routers=(procedures.router, procedures.workflow_runs),
    models=models,
    durable=(workflows, events),
)
