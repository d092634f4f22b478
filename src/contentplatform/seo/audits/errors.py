"""What the audits refuse."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict, RecordNotFound


class AuditNotFound(RecordNotFound):
    """There is no such audit in this organization."""

    record = "audit"


class AuditCheckNotFound(RecordNotFound):
    """There is no audit check of this id (seo.listAuditChecks lists them)."""

    record = "audit check"


class AuditSnapshotNotFound(RecordNotFound):
    """There is no such website-scan snapshot in this organization (or its scan has not
    finished)."""

    record = "website-scan snapshot"


class SnapshotNotAuditable(Conflict):
    """The snapshot is not a completed scan (cancelled or failed: partial), or the organization
    has no completed scan yet (websiteScan.startCrawl)."""


class AuditNotCompleted(Conflict):
    """The audit has not completed (queued, running or failed): it has no issues to list."""
