"""System: health, version, whoami."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.kit import streams
from contentplatform.system import procedures

domain = Domain(
    name="system",
    routers=(procedures.router,),
    # The kit's event-stream log: its tables, and the purge of expired logs.
    models=streams,
    durable=(streams,),
)
