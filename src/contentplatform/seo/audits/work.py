"""One audit's work, as its durable workflow runs it: mark it running, read the snapshot's
pages streaming and evaluate every enabled check (rules.Evaluation), then store everything in
one transaction: the findings, each with its change against the previous completed audit of
the same site (new or persisting; a URL found then and not now is stored as a `fixed` row
with the evidence it had then), one issue row per check failing now or before, the totals,
and the alerts. A crash before that transaction commits leaves nothing of the attempt: a
resumed one starts over (clear_results makes a retried store safe too).

Health: 100 x the share of analysed URLs (the snapshot's internal HTML URLs, and those that
answered an error or nothing) with no finding of a check whose severity in the audit is error.
issue_counts and category_counts count failing checks; new_issue_count / fixed_issue_count
count issues whose change is new / fixed.

Our pages: a finding on the URL of a draft we published carries its draft id (and the URL rows
offer editing or regenerating it). A new error-severity finding on one published within
ALERT_DAYS raises `seo.audit_issue_on_published_page` (the draft's assignee and the admins
hear), once per draft and audit, naming the draft, the URL and the checks.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import actors
from contentplatform.events import service as events
from contentplatform.kit.db import Database, utcnow
from contentplatform.publishers import service as publishers
from contentplatform.seo.audits import checks as catalog
from contentplatform.seo.audits import definitions, repository, rules
from contentplatform.seo.models import SeoAuditFinding, SeoAuditIssue, SeoAuditRun
from contentplatform.seo.pages import inventory
from contentplatform.seo.pagespeed import service as pagespeed
from contentplatform.website_scan.crawling.urls import normalize, url_hash
from contentplatform.website_scan.snapshots import service as snapshots

ALERT_DAYS = 30
ALERT_EVENT = "seo.audit_issue_on_published_page"
# Publications read to find our pages among the findings (newest first).
OUR_PAGES_READ = 5_000
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
SAMPLES = 5

log = logging.getLogger(__name__)
Completed = Callable[[AsyncSession, SeoAuditRun], Awaitable[None]]
_when_completed: list[Completed] = []


def when_completed(handler: Completed) -> Completed:
    """Register `handler(session, audit)` to run in the transaction that completes an audit
    (SEO actions generate from it): the parts above hear of audits without audits naming them."""
    _when_completed.append(handler)
    return handler


async def begin(session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID) -> bool:
    """Mark the audit running; False when it has already ended (nothing left to do)."""
    row = await repository.get_audit(session, tenant_id, audit_id, for_update=True)
    if row is None or row.status not in ("queued", "running"):
        return False
    if row.status == "queued":
        row.status, row.started_at = "running", utcnow()
    return True


async def evaluate(db: Database, tenant_id: uuid.UUID, audit_id: uuid.UUID) -> rules.Result:
    """The checks' findings over the audit's snapshot, the pages read streaming."""
    async with db.unit_of_work() as session:
        row = await repository.get_audit(session, tenant_id, audit_id)
        assert row is not None
        files = await snapshots.site_files_of(session, tenant_id, row.snapshot_id)
        ok_urls: list[str] = []
        evaluation = rules.Evaluation(
            row.checks,
            rules.Site(files.start_url, files.robots_txt, files.llms_txt, files.sitemaps),
        )
        async for page in repository.snapshot_pages(session, tenant_id, row.snapshot_id):
            evaluation.add(page)
            if page.ok:
                ok_urls.append(page.url)
        vitals = await _core_web_vitals(session, tenant_id, ok_urls)
        evaluation.site = rules.Site(
            files.start_url, files.robots_txt, files.llms_txt, files.sitemaps, vitals
        )
        return evaluation.finish()


async def _core_web_vitals(
    session: AsyncSession, tenant_id: uuid.UUID, urls: list[str]
) -> dict[str, dict[str, Any]]:
    """Each URL's Core Web Vitals from its newest PageSpeed result: the Chrome UX Report's
    figures for the URL itself when it has them, else Lighthouse's lab figures (LCP and CLS;
    the lab has no INP). An origin's field data is no verdict on one of its pages. A URL never
    measured is not in the answer: the three checks leave it not evaluated."""
    found: dict[str, dict[str, Any]] = {}
    for url, vitals in (await pagespeed.latest_vitals(session, tenant_id, urls)).items():
        if vitals.field_scope == "url":
            found[url] = {
                "lcp_ms": vitals.field_lcp_ms,
                "inp_ms": vitals.field_inp_ms,
                "cls": vitals.field_cls,
                "source": "field",
            }
        else:
            found[url] = {"lcp_ms": vitals.lab_lcp_ms, "cls": vitals.lab_cls, "source": "lab"}
    return found


async def store(
    session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID, result: rules.Result
) -> None:
    row = await repository.get_audit(session, tenant_id, audit_id, for_update=True)
    if row is None or row.status != "running":
        return
    await repository.clear_results(session, tenant_id, audit_id)
    previous = await repository.previous_completed(session, tenant_id, row.config_id, row)
    before = await repository.finding_keys(session, tenant_id, previous.id) if previous else {}
    ours = await _our_pages(session, tenant_id)
    config = row.checks
    findings: list[dict[str, Any]] = []
    issues: list[dict[str, Any]] = []
    fixed_wanted: dict[str, set[str]] = {}
    alerts: dict[uuid.UUID, dict[str, Any]] = {}
    error_urls: set[str] = set()
    alert_since = utcnow() - timedelta(days=ALERT_DAYS)
    for check_id, check in catalog.CHECKS.items():
        if not config.get(check_id, {}).get("enabled", True):
            continue
        severity = config[check_id]["severity"]
        now_rows = result.findings.get(check_id, [])
        then = before.get(check_id, set())
        now_keys: set[str] = set()
        for url, page_id, evidence in now_rows:
            key = url_hash(url)
            now_keys.add(key)
            change = "persisting" if key in then else "new"
            draft = ours.get(url)
            findings.append(
                _finding(tenant_id, audit_id, check_id, url, key, page_id, evidence, change, draft)
            )
            if severity == "error":
                error_urls.add(url)
                if change == "new" and draft is not None and draft[1] >= alert_since:
                    _alert(alerts, draft, url, check)
        fixed = then - now_keys
        if fixed:
            fixed_wanted[check_id] = fixed
        not_evaluated = result.not_evaluated.get(check_id, 0)
        if not now_rows and not fixed and not not_evaluated:
            continue
        change_of_issue = (
            ("persisting" if then else "new") if now_rows else ("fixed" if then else None)
        )
        issues.append(
            {
                "tenant_id": tenant_id,
                "audit_id": audit_id,
                "check_id": check_id,
                "category": check.category,
                "severity": severity,
                "severity_rank": definitions.SEVERITY_RANK[severity],
                "affected_urls": len(now_rows),
                "previous_affected_urls": len(then),
                "change": change_of_issue,
                "not_evaluated": not_evaluated,
                "sample_urls": sorted(url for url, _, _ in now_rows)[:SAMPLES],
            }
        )
    if previous is not None and fixed_wanted:
        for old in await repository.findings_of(session, tenant_id, previous.id, fixed_wanted):
            findings.append(
                _finding(
                    tenant_id,
                    audit_id,
                    old.check_id,
                    old.url,
                    old.url_hash,
                    old.page_id,
                    old.evidence,
                    "fixed",
                    ours.get(old.url),
                )
            )
    await repository.add_rows(session, tenant_id, SeoAuditFinding, findings)
    await repository.add_rows(session, tenant_id, SeoAuditIssue, issues)
    await _onto_page_inventory(session, tenant_id, row, result, findings, issues)
    _totals(row, result, issues, error_urls, previous)
    for draft_id, payload in alerts.items():
        payload["audit_id"] = str(audit_id)
        events.emit(
            session,
            tenant_id,
            ALERT_EVENT,
            resource_id=draft_id,
            resource_type="draft",
            payload=payload,
            actor=actors.SYSTEM,
        )
    for handler in _when_completed:
        # In a savepoint: a handler's failure is logged and the audit completes all the same.
        try:
            async with session.begin_nested():
                await handler(session, row)
        except Exception:
            log.exception("a handler of the completion of audit %s failed", audit_id)


async def _onto_page_inventory(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    row: SeoAuditRun,
    result: rules.Result,
    findings: list[dict[str, Any]],
    issues: list[dict[str, Any]],
) -> None:
    """Each page's open issues (checks failing on it, by severity) onto the page inventory."""
    severity_of = {issue["check_id"]: issue["severity"] for issue in issues}
    open_checks: dict[str, list[str]] = {}
    for finding in findings:
        if finding["change"] != "fixed":
            open_checks.setdefault(finding["url"], []).append(severity_of[finding["check_id"]])
    await inventory.audited(session, tenant_id, row.id, result.analyzed, open_checks)


def _finding(
    tenant_id: uuid.UUID,
    audit_id: uuid.UUID,
    check_id: str,
    url: str,
    key: str,
    page_id: Any,
    evidence: dict[str, Any],
    change: str,
    draft: tuple[uuid.UUID, datetime, str] | None,
) -> dict[str, Any]:
    return {
        "tenant_id": tenant_id,
        "audit_id": audit_id,
        "check_id": check_id,
        "url": url,
        "url_hash": key,
        "page_id": page_id,
        "evidence": evidence,
        "change": change,
        "draft_id": draft[0] if draft else None,
    }


def _alert(
    alerts: dict[uuid.UUID, dict[str, Any]],
    draft: tuple[uuid.UUID, datetime, str],
    url: str,
    check: definitions.Check,
) -> None:
    draft_id, published_at, title = draft
    payload = alerts.setdefault(
        draft_id,
        {
            "draft_id": str(draft_id),
            "title": title,
            "url": url,
            "published_at": published_at.isoformat(),
            "check_ids": [],
            "checks": [],
        },
    )
    if check.check_id not in payload["check_ids"]:
        payload["check_ids"].append(check.check_id)
        payload["checks"].append(check.title)
        payload["check_summary"] = ", ".join(payload["checks"])


def _totals(
    row: SeoAuditRun,
    result: rules.Result,
    issues: list[dict[str, Any]],
    error_urls: set[str],
    previous: SeoAuditRun | None,
) -> None:
    failing = [issue for issue in issues if issue["affected_urls"]]
    analyzed = result.analyzed
    row.pages_analyzed = len(analyzed)
    healthy = len(analyzed - error_urls)
    row.health_score = round(100.0 * healthy / len(analyzed), 1) if analyzed else None
    row.issue_counts = {
        severity: sum(1 for issue in failing if issue["severity"] == severity)
        for severity in definitions.SEVERITIES
    }
    categories: dict[str, int] = {}
    for issue in failing:
        categories[issue["category"]] = categories.get(issue["category"], 0) + 1
    row.category_counts = categories
    row.not_evaluated = dict(sorted(result.not_evaluated.items()))
    row.new_issue_count = sum(1 for issue in issues if issue["change"] == "new")
    row.fixed_issue_count = sum(1 for issue in issues if issue["change"] == "fixed")
    row.previous_audit_id = previous.id if previous else None
    row.status, row.finished_at, row.error = "completed", utcnow(), None


async def _our_pages(
    session: AsyncSession, tenant_id: uuid.UUID
) -> dict[str, tuple[uuid.UUID, datetime, str]]:
    """The URLs our drafts were published at (normalized as the crawler keys pages): the
    newest publication's draft, when, and its title."""
    found: dict[str, tuple[uuid.UUID, datetime, str]] = {}
    end = utcnow() + timedelta(minutes=1)
    for at, url, draft_id, title, _ in await publishers.published_copies(
        session, tenant_id, _EPOCH, end, OUR_PAGES_READ
    ):
        key = normalize(url) or url
        found.setdefault(key, (draft_id, at, title))
    return found


async def fail(
    session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID, reason: str
) -> None:
    """End the audit failed with `reason` (unless it ended meanwhile)."""
    row = await repository.get_audit(session, tenant_id, audit_id, for_update=True)
    if row is None or row.status not in ("queued", "running"):
        return
    row.status, row.error, row.finished_at = "failed", reason, utcnow()
