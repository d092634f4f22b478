"""Knowledge documents: uploads, ingestion and the chunk index."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.documents import durable, models, procedures

domain = Domain(
    name="documents",
    routers=(procedures.router,),
    models=models,
    durable=(durable,),
    unmodelled=models.include_name,
)
