"""Mail: a durable outbox sent over SMTP (aiosmtplib), once per message id, retried with backoff."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.mail import durable, models

domain = Domain(name="mail", models=models, durable=(durable,))
