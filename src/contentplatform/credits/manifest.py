"""Credits: buckets, the ledger and holds, the operations on them; stale holds and expired
buckets are swept on every reconcile pass."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.credits import durable, models, procedures

domain = Domain(
    name="credits",
    routers=(procedures.router,),
    models=models,
    durable=(durable,),
)
