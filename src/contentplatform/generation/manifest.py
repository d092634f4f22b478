"""Generation: the article pipeline, its runs and their queue."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.generation import events, models, procedures
from contentplatform.generation.pipeline import (
    durable,
    endings,
    fact_check,
    finalize,
    images,
    internal_links,
    optimize,
    outline,
    research,
    review_gate,
    start,
    write,
)

domain = Domain(
    name="generation",
    routers=(procedures.router, procedures.workflows_router),
    models=models,
    # The pipeline's workflow, its queue and recovery, and each module registering its steps.
    durable=(
        durable,
        start,
        research,
        outline,
        write,
        optimize,
        internal_links,
        fact_check,
        images,
        review_gate,
        finalize,
        endings,
        events,
    ),
)
