"""Analytics: the period every report reads (here) and its parts, automation/, ai_usage/,
exports/ and content/, each a sub-package with the same rooms."""

from __future__ import annotations

from contentplatform.analytics import models
from contentplatform.analytics.ai_usage import procedures as ai_usage_procedures
from contentplatform.analytics.automation import procedures as automation_procedures
from contentplatform.analytics.content import durable as content_durable
from contentplatform.analytics.content import procedures as content_procedures
from contentplatform.analytics.exports import durable as export_durable
from contentplatform.analytics.exports import procedures as export_procedures
from contentplatform.core.manifest import Domain

domain = Domain(
    name="analytics",
    routers=(
        automation_procedures.router,
        ai_usage_procedures.router,
        export_procedures.router,
        content_procedures.router,
    ),
    models=models,
    durable=(export_durable, content_durable),
)
