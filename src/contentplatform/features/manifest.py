"""Features: feature flags evaluated per tenant (global default, rollout, tenant override,
opt-in for betas); operations declared behind a flag answer 403 while it is off."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.features import models, procedures

domain = Domain(name="features", routers=(procedures.router,), models=models)
