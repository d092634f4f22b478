"""Declarations only: seo.createAudit, listAudits, getAudit, listAuditIssues,
listAuditIssueUrls, listAuditChecks, updateAuditCheck."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.seo.audits import schemas, service
from contentplatform.seo.audits.errors import (
    AuditCheckNotFound,
    AuditNotCompleted,
    AuditNotFound,
    AuditSnapshotNotFound,
    SnapshotNotAuditable,
)

router = ProcedureRouter("seo", tag="SEO")


@router.post(
    "createAudit",
    "/v1/seo/audits",
    access=Access.editor,
    errors=[AuditSnapshotNotFound, SnapshotNotAuditable],
)
async def create_audit(ctx: Context, data: schemas.CreateAuditInput) -> schemas.AuditRun:
    """Run a technical SEO audit over a completed website-scan snapshot.

    Audits never crawl: they evaluate a completed scan's stored facts (status codes,
    redirects, HTML head and headings, links, images, JSON-LD, hreflang, response headers,
    robots.txt, llms.txt, sitemaps, the link graph) and the newest PageSpeed results, with 65
    checks (seo.listAuditChecks) and the organization's check settings frozen into the audit
    (`checks_version`). It is queued and run in the background by a durable workflow: poll
    getAudit until `completed` or `failed` (`error` says why). `snapshotId` defaults to the
    newest completed scan. The same snapshot and checks_version answers the existing audit
    (queued, running or completed) unless `force`. A page crawled before a fact a check reads
    was kept (older snapshots: no response headers, images, social tags, time to first byte),
    or without PageSpeed data, is `not_evaluated` for that check, never a pass. Also started
    after each completed scan when settings.audit.trigger is `after_scan` (the default), and
    once a week on the newest completed scan when it is `weekly` (trigger `schedule`).
    404 for an unknown snapshot (or another organization's); 409 when the scan did not
    complete (cancelled, failed) or when there is no completed scan."""
    return await service.create(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.get("listAudits", "/v1/seo/audits", access=Access.member)
async def list_audits(ctx: Context, data: schemas.ListAuditsInput) -> schemas.AuditRunPage:
    """Audit history (health score over time).

    Newest first, optionally of one status."""
    return await service.list_audits(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getAudit", "/v1/seo/audits/{id}", access=Access.member, errors=[AuditNotFound])
async def get_audit(ctx: Context, data: schemas.AuditIdInput) -> schemas.AuditDetail:
    """One audit with its health score, counts by severity/category, change vs the previous
    audit and top issues.

    health_score = 100 x the share of analysed URLs (the snapshot's internal HTML URLs, and
    those that answered an error or nothing) with no error-severity issue (Ahrefs'
    definition). issue_counts and category_counts count failing checks. new/fixed counts
    compare with `previous_audit_id`, the prior completed audit of the same site:
    new_issue_count checks failing now that did not before, fixed_issue_count checks that
    failed before and pass now. `top_issues`: up to 10 failing checks, by severity then
    affected URLs. `not_evaluated`: per check, the pages it could not judge. 404 for another
    organization's audit."""
    return await service.get_audit(ctx.session, ctx.tenant.tenant_id, data.id)


@router.get(
    "listAuditIssues",
    "/v1/seo/audits/{id}/issues",
    access=Access.member,
    errors=[AuditNotFound, AuditNotCompleted],
)
async def list_audit_issues(
    ctx: Context, data: schemas.ListAuditIssuesInput
) -> schemas.AuditIssuePage:
    """Issues of an audit, one row per failing check, with change vs the previous audit.

    `change`: new (the check found no URL in the previous audit), persisting, or fixed (it
    found URLs before and none now: those rows have affected_urls 0). Sorted by severity
    (error, warning, notice), then affected URLs (most first). `search`: check id or title
    contains, any case. The severity is the one in force when the audit ran. `action_id` is
    always null until SEO actions exist (issue 42). 409 while the audit is not completed;
    404 for another organization's audit."""
    return await service.list_issues(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "listAuditIssueUrls",
    "/v1/seo/audits/{id}/issues/{checkId}/urls",
    access=Access.member,
    errors=[AuditNotFound, AuditCheckNotFound, AuditNotCompleted],
)
async def list_audit_issue_urls(
    ctx: Context, data: schemas.ListAuditIssueUrlsInput
) -> schemas.AuditIssueUrlPage:
    """The URLs affected by one check in an audit, with concrete evidence.

    Sorted by URL. `change`: new or persisting against the previous audit, or fixed (found
    then, not now: the evidence is the previous audit's). `evidence` is check-specific, e.g.
    title_too_long {title, chars}; redirect_chain {hops: [{url, status}]} (only the last
    hop's status is known); broken_internal_link {target, status, anchor_text,
    source_urls[]} (the row is the broken target); canonical_mismatch {declared, resolved};
    duplicate_title {title, duplicates[], count}. A URL where one of our drafts is published
    carries its `draft_id` and `suggested` [edit_draft, regenerate_draft]. `search`: URL
    contains, any case. 404 for an unknown check id or another organization's audit; 409
    while the audit is not completed."""
    return await service.list_issue_urls(ctx.session, ctx.tenant.tenant_id, data)


@router.get("listAuditChecks", "/v1/seo/audit-checks", access=Access.member)
async def list_audit_checks(
    ctx: Context, data: schemas.ListAuditChecksInput
) -> schemas.AuditCheckList:
    """The audit check catalog with this organization's overrides.

    Every check with its default severity and the severity, enabled flag, thresholds and
    excluded URL patterns in force (`customized` when any differs from the default). Filters
    apply to the settings in force."""
    return await service.list_checks(ctx.session, ctx.tenant.tenant_id, data)


@router.patch(
    "updateAuditCheck",
    "/v1/seo/audit-checks/{checkId}",
    access=Access.admin,
    errors=[AuditCheckNotFound],
)
async def update_audit_check(
    ctx: Context, data: schemas.UpdateAuditCheckInput
) -> schemas.AuditCheck:
    """Turn a check off, change its severity, thresholds or excluded URLs.

    Applies from the next audit: past audits keep their checks_version. `severity` null
    restores the default. `threshold` merges into the check's thresholds; its keys are the
    check's own (title_too_long {maxChars 30-120}, thin_content {minWords 50-2000},
    deep_page {maxClickDepth 2-10}, slow_ttfb {maxMs 100-5000}, ...: listAuditChecks shows
    each check's keys and bounds); an unknown key or a value out of range is 400.
    `excludeUrlPatterns` (at most 50 globs of 1-255 characters, `*` and `?`) replaces the
    URLs the check skips. As Ahrefs' issue settings: an orphan page is an error for one site
    and intended for another. 404 for an unknown check id."""
    return await service.update_check(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)
