"""Website scan: crawl configurations and schedules, the durable crawler, its snapshots, pages,
diffs and broken links, pages imported as knowledge, and the site profile."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.website_scan import (
    discovery_procedures,
    import_procedures,
    models,
    procedures,
    profile_workflows,
    snapshot_procedures,
    workflows,
)

domain = Domain(
    name="website_scan",
    routers=(
        procedures.router,
        snapshot_procedures.router,
        import_procedures.router,
        discovery_procedures.router,
    ),
    models=models,
    durable=(workflows, profile_workflows),
)
