"""System: health, version, whoami."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.kit.streams import database_log
from contentplatform.system import durable, procedures

domain = Domain(
    name="system",
    routers=(procedures.router,),
    # The kit's event-stream log: its tables, and the purge of expired logs.
    models=database_log,
    durable=(database_log, durable),
)
