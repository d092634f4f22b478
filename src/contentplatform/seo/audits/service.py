"""The rules of the audits' operations: the check catalog with the tenant's overrides, starting
an audit, and reading audits, their issues and their URLs. Never commits. The audit's work
itself is done in work.py, run by a durable workflow (durable.py) once createAudit commits.

An audit freezes the check settings in force when it is asked for (`checks`, hashed as
`checks_version`): a later updateAuditCheck applies from the next audit. Asking again for a
snapshot already audited (or being audited) with the same settings answers that audit unless
`force`.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Required, lock_rows, utcnow
from contentplatform.kit.errors import BadRequest, FieldError
from contentplatform.kit.schemas import window_of
from contentplatform.seo.audits import checks as catalog
from contentplatform.seo.audits import definitions, repository, schemas
from contentplatform.seo.audits import durable as workflows
from contentplatform.seo.audits.errors import (
    AuditCheckNotFound,
    AuditNotCompleted,
    AuditNotFound,
    AuditSnapshotNotFound,
    SnapshotNotAuditable,
)
from contentplatform.seo.models import SeoAuditCheckSetting, SeoAuditIssue, SeoAuditRun
from contentplatform.website_scan.errors import SnapshotNotFound
from contentplatform.website_scan.models import CrawlSnapshot
from contentplatform.website_scan.snapshots import service as snapshots

require_audit = Required(repository.get_audit, AuditNotFound)
SUGGESTED: list[schemas.Suggestion] = ["edit_draft", "regenerate_draft"]


# --- the check catalog ------------------------------------------------------------------------


def _override_dict(row: SeoAuditCheckSetting) -> dict[str, Any]:
    return {
        "enabled": row.enabled,
        "severity": row.severity,
        "threshold": row.threshold,
        "exclude_url_patterns": row.exclude_url_patterns,
    }


async def effective_checks(
    session: AsyncSession, tenant_id: uuid.UUID
) -> dict[str, dict[str, Any]]:
    """The check settings in force now: the defaults under the tenant's overrides."""
    rows = await repository.overrides(session, tenant_id)
    return catalog.effective({row.check_id: _override_dict(row) for row in rows})


def _check_record(check: definitions.Check, row: SeoAuditCheckSetting | None) -> schemas.AuditCheck:
    config = catalog.effective({check.check_id: _override_dict(row)} if row else {})
    mine = config[check.check_id]
    return schemas.AuditCheck(
        check_id=check.check_id,
        title=check.title,
        description=check.description,
        category=check.category,
        default_severity=check.severity,
        severity=mine["severity"],
        enabled=mine["enabled"],
        threshold=mine["threshold"],
        threshold_bounds={k: [b.low, b.high] for k, b in check.threshold.items()},
        exclude_url_patterns=mine["exclude_url_patterns"],
        customized=row is not None
        and (
            not row.enabled
            or row.severity is not None
            or bool(row.threshold)
            or bool(row.exclude_url_patterns)
        ),
        how_to_fix=check.how_to_fix,
        docs_url=check.docs_url,
    )


async def list_checks(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListAuditChecksInput
) -> schemas.AuditCheckList:
    rows = {row.check_id: row for row in await repository.overrides(session, tenant_id)}
    found = [_check_record(check, rows.get(check.check_id)) for check in catalog.CHECKS.values()]
    found = [
        check
        for check in found
        if (data.category is None or check.category == data.category)
        and (data.severity is None or check.severity == data.severity)
        and (data.enabled is None or check.enabled == data.enabled)
    ]
    return schemas.AuditCheckList(data=found, total=len(found))


def _check_threshold(check: definitions.Check, threshold: dict[str, int]) -> None:
    errors = []
    for key, value in threshold.items():
        bound = check.threshold.get(key)
        if bound is None:
            known = ", ".join(check.threshold) or "none"
            errors.append(
                FieldError(
                    path=f"threshold.{key}",
                    message=f"{check.check_id} has no threshold {key} (its keys: {known})",
                )
            )
        elif not bound.low <= value <= bound.high:
            errors.append(
                FieldError(
                    path=f"threshold.{key}",
                    message=f"must be between {bound.low} and {bound.high}",
                )
            )
    if errors:
        raise BadRequest(f"Invalid threshold for {check.check_id}.", errors=errors)


async def update_check(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    actor: str | None,
    data: schemas.UpdateAuditCheckInput,
) -> schemas.AuditCheck:
    check = catalog.CHECKS.get(data.check_id)
    if check is None:
        raise AuditCheckNotFound(data.check_id)
    if data.threshold is not None:
        _check_threshold(check, data.threshold)
    row = await repository.override(session, tenant_id, data.check_id)
    if row is None:
        row = SeoAuditCheckSetting(
            tenant_id=tenant_id,
            check_id=data.check_id,
            enabled=True,
            severity=None,
            threshold={},
            exclude_url_patterns=[],
        )
        session.add(row)
    given = data.model_fields_set
    if "enabled" in given and data.enabled is not None:
        row.enabled = data.enabled
    if "severity" in given:
        row.severity = data.severity
    if data.threshold is not None:
        row.threshold = {**row.threshold, **data.threshold}
    if data.exclude_url_patterns is not None:
        row.exclude_url_patterns = list(data.exclude_url_patterns)
    row.updated_by = actor
    row.updated_at = utcnow()
    await session.flush()
    return _check_record(check, row)


# --- starting an audit ------------------------------------------------------------------------


async def _snapshot(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID | None
) -> CrawlSnapshot:
    if snapshot_id is None:
        latest = await snapshots.latest_site_files(session, tenant_id)
        if not latest:
            raise SnapshotNotAuditable(
                "There is no completed website scan to audit yet (websiteScan.startCrawl)."
            )
        snapshot_id = latest[0].snapshot_id
    try:
        snapshot = await snapshots.require_snapshot(session, tenant_id, snapshot_id)
    except SnapshotNotFound:
        raise AuditSnapshotNotFound(snapshot_id) from None
    if snapshot.partial:
        raise SnapshotNotAuditable(
            f"The website scan of snapshot {snapshot_id} did not complete (cancelled or "
            "failed): audit a completed one."
        )
    return snapshot


async def start(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    snapshot_id: uuid.UUID | None,
    trigger: str,
    force: bool,
    created_by: str | None,
) -> SeoAuditRun:
    """The audit of the snapshot with the checks in force (an existing one unless `force`),
    queued to run once this commits."""
    snapshot = await _snapshot(session, tenant_id, snapshot_id)
    config = await effective_checks(session, tenant_id)
    version = catalog.version(config)
    # One decision at a time per snapshot: two racing asks make one audit.
    await lock_rows(
        session,
        CrawlSnapshot,
        CrawlSnapshot.tenant_id == tenant_id,
        CrawlSnapshot.id == snapshot.id,
    )
    await snapshots.require_snapshot(session, tenant_id, snapshot.id)
    if not force:
        found = await repository.existing(session, tenant_id, snapshot.id, version)
        if found is not None:
            return found
    now = utcnow()
    row = SeoAuditRun(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        config_id=snapshot.config_id,
        snapshot_id=snapshot.id,
        status="queued",
        trigger=trigger,
        checks_version=version,
        checks=config,
        pages_analyzed=0,
        issue_counts={},
        category_counts={},
        not_evaluated={},
        new_issue_count=0,
        fixed_issue_count=0,
        created_by=created_by,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    workflows.enqueue_after_commit(session, tenant_id, row.id)
    return row


async def create(
    session: AsyncSession, tenant_id: uuid.UUID, actor: str | None, data: schemas.CreateAuditInput
) -> schemas.AuditRun:
    row = await start(
        session,
        tenant_id,
        snapshot_id=data.snapshot_id,
        trigger="manual",
        force=data.force,
        created_by=actor,
    )
    return schemas.AuditRun.model_validate(row)


# --- reading audits ---------------------------------------------------------------------------


async def list_audits(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListAuditsInput
) -> schemas.AuditRunPage:
    rows, total = await repository.audits_page(
        session, tenant_id, status=data.status, **window_of(data)
    )
    return schemas.AuditRunPage(
        data=[schemas.AuditRun.model_validate(row) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


def issue_record(row: SeoAuditIssue) -> schemas.AuditIssue:
    check = catalog.CHECKS[row.check_id]
    return schemas.AuditIssue(
        check_id=row.check_id,
        title=check.title,
        category=check.category,
        severity=row.severity,
        affected_urls=row.affected_urls,
        previous_affected_urls=row.previous_affected_urls,
        change=row.change,
        not_evaluated=row.not_evaluated,
        sample_urls=row.sample_urls[:5],
        how_to_fix=check.how_to_fix,
        docs_url=check.docs_url,
        action_id=None,
    )


async def get_audit(
    session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID
) -> schemas.AuditDetail:
    row = await require_audit(session, tenant_id, audit_id)
    snapshot = None
    try:
        found = await snapshots.require_snapshot(session, tenant_id, row.snapshot_id)
        snapshot = schemas.AuditSnapshot(
            id=found.id, finished_at=found.finished_at, pages_crawled=found.page_count
        )
    except SnapshotNotFound:
        pass
    previous = None
    if row.previous_audit_id is not None:
        before = await repository.get_audit(session, tenant_id, row.previous_audit_id)
        if before is not None:
            previous = schemas.PreviousAudit(id=before.id, health_score=before.health_score)
    top: list[SeoAuditIssue] = []
    if row.status == "completed":
        top, _ = await repository.issues_page(
            session,
            tenant_id,
            row.id,
            severity=None,
            category=None,
            change="failing",
            check_ids=None,
            limit=10,
            offset=0,
        )
    return schemas.AuditDetail(
        **schemas.AuditRun.model_validate(row).model_dump(),
        snapshot=snapshot,
        previous=previous,
        top_issues=[issue_record(issue) for issue in top],
    )


async def _completed(session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID) -> None:
    row = await require_audit(session, tenant_id, audit_id)
    if row.status != "completed":
        raise AuditNotCompleted(f"The audit {audit_id} is {row.status}: it has no issues yet.")


async def list_issues(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListAuditIssuesInput
) -> schemas.AuditIssuePage:
    await _completed(session, tenant_id, data.id)
    check_ids = None
    if data.search:
        needle = data.search.lower()
        check_ids = [
            check.check_id
            for check in catalog.CHECKS.values()
            if needle in check.check_id or needle in check.title.lower()
        ]
    rows, total = await repository.issues_page(
        session,
        tenant_id,
        data.id,
        severity=data.severity,
        category=data.category,
        change=None if data.change == "all" else data.change,
        check_ids=check_ids,
        **window_of(data),
    )
    return schemas.AuditIssuePage(
        data=[issue_record(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def list_issue_urls(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListAuditIssueUrlsInput
) -> schemas.AuditIssueUrlPage:
    if data.check_id not in catalog.CHECKS:
        # The audit's own 404 first: another organization's audit is not confirmed.
        await require_audit(session, tenant_id, data.id)
        raise AuditCheckNotFound(data.check_id)
    await _completed(session, tenant_id, data.id)
    rows, total = await repository.urls_page(
        session,
        tenant_id,
        data.id,
        data.check_id,
        change=None if data.change == "all" else data.change,
        search=data.search,
        **window_of(data),
    )
    return schemas.AuditIssueUrlPage(
        data=[
            schemas.AuditIssueUrl(
                url=row.url,
                page_id=row.page_id,
                change=row.change,
                evidence=row.evidence,
                draft_id=row.draft_id,
                suggested=SUGGESTED if row.draft_id is not None else [],
            )
            for row in rows
        ],
        total=total,
        page=data.page,
        limit=data.limit,
    )
