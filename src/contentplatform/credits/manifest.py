"""Credits: a ledger per tenant and its holds; stale holds are swept on every reconcile pass."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.credits import models, workflows

domain = Domain(
    name="credits",
    models=models,
    durable=(workflows,),
)
