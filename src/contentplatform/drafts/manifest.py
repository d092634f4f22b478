"""Drafts: review, revisions and provenance."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.drafts import models, procedures

domain = Domain(
    name="drafts",
    routers=(procedures.router,),
    models=models,
    unmodelled=models.include_name,
)
