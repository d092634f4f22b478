"""Public: what anyone may read without a token (a tenant's blog feed)."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.public import procedures

domain = Domain(
    name="public",
    routers=(procedures.router,),
)
