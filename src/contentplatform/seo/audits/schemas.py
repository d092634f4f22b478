"""Inputs and answers of the audits: inputs camelCase on the wire, records snake_case as the
catalog names their fields."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier
from contentplatform.seo.audits.definitions import Category, Severity

AuditStatus = Literal["queued", "running", "completed", "failed"]
AuditTrigger = Literal["manual", "after_scan", "schedule"]
Change = Literal["new", "persisting", "fixed"]
ChangeFilter = Literal["all", "new", "persisting", "fixed"]
CheckId = Annotated[Identifier, Field(pattern=r"^[a-z0-9_]{2,64}$")]
Search = Annotated[Identifier, Field(min_length=1, max_length=255)]
Suggestion = Literal["edit_draft", "regenerate_draft"]
# Identifier: visible characters only (no NUL, no control characters), as every input's text.
Glob = Annotated[Identifier, Field(min_length=1, max_length=255)]


class CreateAuditInput(Input):
    snapshot_id: uuid.UUID | None = Field(
        None, description="A completed website-scan snapshot; default the newest completed one."
    )
    force: bool = Field(
        False, description="Audit again even when this snapshot was audited with these checks."
    )


class ListAuditsInput(Input):
    status: AuditStatus | None = None
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class AuditIdInput(Input):
    id: uuid.UUID


class ListAuditIssuesInput(Input):
    id: uuid.UUID
    severity: Severity | None = None
    category: Category | None = None
    change: ChangeFilter = "all"
    search: Search | None = Field(None, description="Check id or title contains (any case).")
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class ListAuditIssueUrlsInput(Input):
    id: uuid.UUID
    check_id: CheckId
    change: ChangeFilter = "all"
    search: Search | None = Field(None, description="URL contains (any case).")
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(100, ge=1, le=500)


class ListAuditChecksInput(Input):
    category: Category | None = None
    severity: Severity | None = Field(None, description="The severity in force.")
    enabled: bool | None = None


class UpdateAuditCheckInput(Input):
    check_id: CheckId
    enabled: bool | None = None
    severity: Severity | None = Field(
        None, description="Null (or absent) restores the default severity."
    )
    threshold: dict[Annotated[Identifier, Field(max_length=64)], int] | None = Field(
        None,
        description="Keys per check: title_too_long {maxChars 30-120}, thin_content "
        "{minWords 50-2000}, deep_page {maxClickDepth 2-10}, slow_ttfb {maxMs 100-5000}, ... "
        "(seo.listAuditChecks shows each check's keys).",
    )
    exclude_url_patterns: list[Glob] | None = Field(
        None, max_length=50, description="Globs (fnmatch: * and ?) of URLs the check skips."
    )


class AuditRun(Record):
    id: uuid.UUID
    snapshot_id: uuid.UUID
    status: AuditStatus
    trigger: AuditTrigger
    checks_version: str = Field(description="A hash of the check settings frozen for it.")
    pages_analyzed: int = Field(description="Internal HTML URLs of the snapshot.")
    health_score: float | None = Field(
        description="0-100: the share of analysed URLs without an error-severity issue; null "
        "until completed."
    )
    issue_counts: dict[str, int] = Field(description="Failing checks by severity.")
    category_counts: dict[str, int] = Field(description="Failing checks by category.")
    not_evaluated: dict[str, int] = Field(
        description="Per check, the pages (or site files) it could not judge: crawled before "
        "the facts it reads were kept, or no PageSpeed data. Never counted as a pass."
    )
    new_issue_count: int
    fixed_issue_count: int
    previous_audit_id: uuid.UUID | None
    error: str | None
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class AuditRunPage(Page[AuditRun]):
    pass


class AuditSnapshot(BaseModel):
    id: uuid.UUID
    finished_at: datetime | None
    pages_crawled: int


class PreviousAudit(BaseModel):
    id: uuid.UUID
    health_score: float | None


class AuditIssue(BaseModel):
    check_id: str
    title: str
    category: Category
    severity: Severity
    affected_urls: int
    previous_affected_urls: int
    change: Change
    not_evaluated: int = Field(description="Pages the check could not judge.")
    sample_urls: list[str] = Field(max_length=5)
    how_to_fix: str
    docs_url: str
    action_id: uuid.UUID | None = Field(
        description="Always null until SEO actions exist (issue 42)."
    )


class AuditDetail(AuditRun):
    snapshot: AuditSnapshot | None = Field(description="Null once the snapshot is gone.")
    previous: PreviousAudit | None
    top_issues: list[AuditIssue] = Field(max_length=10)


class AuditIssuePage(Page[AuditIssue]):
    pass


class AuditIssueUrl(BaseModel):
    url: str
    page_id: uuid.UUID | None = Field(description="The website-scan page (websiteScan.getPage).")
    change: Change
    evidence: dict[str, Any] = Field(description="What the check found (per check).")
    draft_id: uuid.UUID | None = Field(
        description="The draft of ours published at this URL, if any."
    )
    suggested: list[Suggestion] = Field(
        description="What the front end may offer: edit or regenerate that draft."
    )


class AuditIssueUrlPage(Page[AuditIssueUrl]):
    pass


class AuditCheck(BaseModel):
    check_id: str
    title: str
    description: str
    category: Category
    default_severity: Severity
    severity: Severity
    enabled: bool
    threshold: dict[str, int]
    threshold_bounds: dict[str, list[int]] = Field(description="Each threshold key's [min, max].")
    exclude_url_patterns: list[str]
    customized: bool
    how_to_fix: str
    docs_url: str


class AuditCheckList(BaseModel):
    data: list[AuditCheck]
    total: int
