"""Events: the transactional outbox every domain writes its changes to, its dispatcher to the
listening domains, and the activity trail read from it."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.events import durable, models, procedures

domain = Domain(name="events", routers=(procedures.router,), models=models, durable=(durable,))
