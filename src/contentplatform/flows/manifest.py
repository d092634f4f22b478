"""Flows: the operations and durable work that cross domains (publishing a draft, running
jobs, the scheduler)."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.flows import durable, job_runs, procedures, workflow_procedures

domain = Domain(
    name="flows",
    routers=(
        procedures.drafts_router,
        procedures.jobs_router,
        procedures.instances_router,
        procedures.generation_router,
        procedures.billing_router,
        workflow_procedures.workflows_router,
    ),
    durable=(
        job_runs,
        durable,
    ),
)
