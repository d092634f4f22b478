"""Chat: conversations over the tenant's knowledge, answers streamed over SSE."""

from __future__ import annotations

from contentplatform.chat import durable, models, procedures
from contentplatform.core.manifest import Domain

domain = Domain(
    name="chat",
    routers=(procedures.router,),
    models=models,
    durable=(durable,),
)
