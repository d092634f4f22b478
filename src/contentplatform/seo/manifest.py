"""SEO: the tenant's SEO profile and competitors (here), and its parts, each a sub-package with
the same rooms: provider connections over OAuth or API keys (connections/), the sync runs every
provider call runs inside (sync_runs/), Search Console's performance data and its reads
(search_console/), sitemaps and URL inspections (inspections/), the opportunities found in
that data (insights/), readiness for AI answers: crawlers' access, llms.txt, citability
(geo/), the page inventory joining them per URL (pages/), technical SEO audits of the
website scans (audits/), PageSpeed's Lighthouse and field data (pagespeed/), rank tracking
through a SERP provider (rank/), keyword research (research/), how AI answer engines speak of
the brand (ai_visibility/), the SEO to-do list made from all of them (actions/), monthly
content plans approved into jobs (plans/), and the control center over them all (overview/)."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.seo import models, procedures
from contentplatform.seo.actions import listeners as action_listeners
from contentplatform.seo.actions import procedures as action_procedures
from contentplatform.seo.ai_visibility import durable as ai_visibility_durable
from contentplatform.seo.ai_visibility import procedures as ai_visibility_procedures
from contentplatform.seo.audits import durable as audit_durable
from contentplatform.seo.audits import procedures as audit_procedures
from contentplatform.seo.audits import scans as audit_scans
from contentplatform.seo.connections import procedures as connection_procedures
from contentplatform.seo.geo import procedures as geo_procedures
from contentplatform.seo.insights import procedures as insight_procedures
from contentplatform.seo.inspections import durable as inspection_durable
from contentplatform.seo.inspections import procedures as inspection_procedures
from contentplatform.seo.inspections import scans as inspection_scans
from contentplatform.seo.overview import procedures as overview_procedures
from contentplatform.seo.pages import listeners as page_listeners
from contentplatform.seo.pages import procedures as page_procedures
from contentplatform.seo.pagespeed import durable as pagespeed_durable
from contentplatform.seo.pagespeed import procedures as pagespeed_procedures
from contentplatform.seo.plans import durable as plan_durable
from contentplatform.seo.plans import listeners as plan_listeners
from contentplatform.seo.plans import procedures as plan_procedures
from contentplatform.seo.rank import durable as rank_durable
from contentplatform.seo.rank import procedures as rank_procedures
from contentplatform.seo.research import procedures as research_procedures
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
        geo_procedures.router,
        page_procedures.router,
        audit_procedures.router,
        pagespeed_procedures.router,
        rank_procedures.router,
        research_procedures.router,
        ai_visibility_procedures.router,
        action_procedures.router,
        overview_procedures.router,
        plan_procedures.router,
    ),
    models=models,
    unmodelled=models.include_name,
    durable=(
        search_console_durable,
        inspection_durable,
        inspection_scans,
        page_listeners,
        audit_durable,
        audit_scans,
        pagespeed_durable,
        rank_durable,
        ai_visibility_durable,
        action_listeners,
        plan_durable,
        plan_listeners,
    ),
)
