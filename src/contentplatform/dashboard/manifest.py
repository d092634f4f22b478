"""The Dashboard: reads of every domain's tables for the home screen."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.dashboard import procedures

domain = Domain(name="dashboard", routers=(procedures.router,))
