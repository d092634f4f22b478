"""Website scan: crawl configurations and their schedules (the crawler, snapshots and imports
come next)."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.website_scan import models, procedures

domain = Domain(name="website_scan", routers=(procedures.router,), models=models)
