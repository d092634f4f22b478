"""Media: uploads through signed URLs, stock search and import, licences, attachments to drafts."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.media import durable, models, procedures

domain = Domain(name="media", routers=(procedures.router,), models=models, durable=(durable,))
