"""Settings: the tenant's settings, the brand voice generation writes in, its content strategy
and its content rules (editorial lint, which also holds auto-publish)."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.settings import models, procedures

domain = Domain(name="settings", routers=(procedures.router,), models=models)
