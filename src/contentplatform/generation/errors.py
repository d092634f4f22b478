"""What the generation domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict, RecordNotFound


class RunNotFound(RecordNotFound):
    """There is no such generation run in this organization."""

    record = "generation run"


class IdempotencyKeyReused(Conflict):
    """The idempotencyKey was already used for a different request."""
