"""Website scan: crawl configurations and schedules (here), and its parts, each a sub-package with
the same rooms: crawl runs and the durable crawler (crawls/), over the crawl engine (crawling/);
snapshots, their pages, diffs and broken links (snapshots/); pages imported as knowledge
(imports/); the site profile (profiles/); a site's map without a crawl (discovery/)."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.website_scan import models, procedures
from contentplatform.website_scan.crawls import durable as crawl_durable
from contentplatform.website_scan.crawls import procedures as crawl_procedures
from contentplatform.website_scan.discovery import procedures as discovery_procedures
from contentplatform.website_scan.imports import procedures as import_procedures
from contentplatform.website_scan.profiles import durable as profile_durable
from contentplatform.website_scan.profiles import procedures as profile_procedures
from contentplatform.website_scan.snapshots import procedures as snapshot_procedures

domain = Domain(
    name="website_scan",
    routers=(
        procedures.router,
        crawl_procedures.router,
        snapshot_procedures.router,
        import_procedures.router,
        profile_procedures.router,
        discovery_procedures.router,
    ),
    models=models,
    durable=(crawl_durable, profile_durable),
)
