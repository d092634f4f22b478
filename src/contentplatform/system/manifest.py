"""System: health, version, whoami."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.system import procedures

domain = Domain(
    name="system",
    routers=(procedures.router,),
)
