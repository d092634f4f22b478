"""SEO: the tenant's SEO profile and competitors (here), and its parts, each a sub-package with
the same rooms: provider connections over OAuth or API keys (connections/), the sync runs every
provider call runs inside (sync_runs/), Search Console's performance data and its reads
(search_console/), sitemaps and URL inspections (inspections/), and the opportunities found in
that data (insights/)."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.seo import models, procedures
from contentplatform.seo.connections import procedures as connection_procedures
from contentplatform.seo.insights import procedures as insight_procedures
from contentplatform.seo.inspections import durable as inspection_durable
from contentplatform.seo.inspections import procedures as inspection_procedures
from contentplatform.seo.search_console import durable as search_console_durable
from contentplatform.seo.search_console import procedures as search_console_procedures
from contentplatform.seo.sync_runs import procedures as sync_run_procedures

domain = Domain(
    name="seo",
    routers=(
        procedures.router,
        connection_procedures.router,
        sync_run_procedures.router,
        search_console_procedures.router,
        insight_procedures.router,
        inspection_procedures.router,
    ),
    models=models,
    durable=(
        search_console_durable,
        inspection_durable,
    ),
)
