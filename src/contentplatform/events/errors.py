"""What the events domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Forbidden


class AuditNeedsAdmin(Forbidden):
    """`scope=audit` (security and settings events, with addresses) is for admins."""

    def __init__(self) -> None:
        super().__init__("The audit trail (scope=audit) is for admins; members see scope=activity.")
