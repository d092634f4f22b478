"""What the sync runs refuse."""

from __future__ import annotations

from contentplatform.kit.errors import RecordNotFound


class SyncRunNotFound(RecordNotFound):
    """There is no such sync run in this organization (another organization's, or none)."""

    record = "sync run"
