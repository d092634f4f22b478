"""seo.createAudit, listAudits, getAudit, listAuditIssues, listAuditIssueUrls, listAuditChecks
and updateAuditCheck over REST and RPC, on snapshots planted as a crawl leaves them: the issues
an audit finds and their evidence, health, what a page crawled before the audit facts were kept
leaves not evaluated, the same snapshot answered once, overrides frozen into each audit, the
alert for a page of ours, the roles, the documented errors, and another organization that sees
none of it."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from contentplatform.drafts.models import Draft
from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.kit.db import Database, utcnow
from contentplatform.publishers.models import PublishAttempt, PublisherConnection
from contentplatform.seo import repository as seo_repository
from contentplatform.seo.audits import scans as audit_schedule
from contentplatform.seo.audits.checks import CHECKS
from contentplatform.seo.models import SeoAuditRun
from contentplatform.seo.pages import inventory
from contentplatform.website_scan.crawling.pages import AuditFacts, Image
from tests.conftest import Run
from tests.seo.audits.support import Auditor
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.website_scan.seed import crawled
from tests.website_scan.support import site_url

pytestmark = pytest.mark.shared_org

auditor = org_fixture(Auditor)
other = org_fixture(Auditor, second=True)

TITLE = "Garden shop: tools and seeds for every season"
DESCRIPTION = "Everything for careful growers: tools, seeds and advice from our garden shop."
_planted: dict[str, dict[str, str]] = {}


def facts(**fields: Any) -> AuditFacts:
    """A page's audit facts with nothing to report unless told."""
    values: dict[str, Any] = {
        "images": [Image("https://x.example/a.png", "A spade")],
        "open_graph": {k: "x" for k in ("og:title", "og:type", "og:image", "og:url")},
        "twitter": {"twitter:card": "summary"},
        "viewport": "width=device-width",
        "security_headers": {
            "x-content-type-options": "nosniff",
            "x-frame-options": "DENY",
            "content-security-policy": "default-src 'self'",
        },
    }
    values.update(fields)
    return AuditFacts(**values)


def site_pages(root: str) -> list[Any]:
    """Home links to /a, /b and /gone. /a has no title; /b is slow and has no viewport; /gone
    is a 404. Home and /a were crawled before audit facts were kept (audit, ttfb null)."""
    words = " ".join(["compost"] * 150)
    good = {"meta_description": DESCRIPTION, "headings": [("h1", "Shop")], "text": words}
    return [
        crawled(
            f"{root}/",
            title=TITLE,
            depth=0,
            links=[
                (f"{root}/a", "A", True),
                (f"{root}/b", "B", True),
                (f"{root}/gone", "Old", True),
            ],
            **good,
        ),
        crawled(f"{root}/a", title=None, links=[(f"{root}/", "Home", True)], **good),
        crawled(
            f"{root}/b",
            title=TITLE + " (b)",
            links=[(f"{root}/", "Home", True)],
            audit=facts(viewport=None),
            ttfb_ms=1500,
            **good,
        ),
        crawled(f"{root}/gone", status=404),
    ]


def planted(auditor: Auditor, run: Run) -> dict[str, str]:
    """One snapshot per organization, audited once (shared by the module's tests)."""
    if auditor.org not in _planted:
        root = site_url().rstrip("/")
        config, snapshot = auditor.plant(run, site_pages(root), start_url=f"{root}/")
        audit = auditor.audit(snapshot)
        _planted[auditor.org] = {
            "root": root,
            "config": config,
            "snapshot": snapshot,
            "audit": audit["id"],
        }
    return _planted[auditor.org]


def test_an_audit_finds_each_issue_with_its_evidence_and_health(auditor: Auditor, run: Run) -> None:
    seen = planted(auditor, run)
    root, audit_id = seen["root"], seen["audit"]
    audit = auditor.ok("seo.getAudit", {"id": audit_id}, role="member")
    assert audit["status"] == "completed", audit
    assert (audit["snapshot_id"], audit["trigger"]) == (seen["snapshot"], "manual")
    assert audit["created_by"] == auditor.users["editor"]
    assert audit["pages_analyzed"] == 4
    # /a (title missing) and /gone (404, a broken link) carry errors: 2 of 4 are healthy.
    assert audit["health_score"] == 50.0
    assert audit["snapshot"] == {
        "id": seen["snapshot"],
        "finished_at": audit["snapshot"]["finished_at"],
        "pages_crawled": 4,
    }
    assert audit["previous"] is None and audit["previous_audit_id"] is None
    assert audit["started_at"] and audit["finished_at"]
    found = auditor.found(audit_id)
    assert found["title_missing"] == {f"{root}/a"}
    assert found["http_4xx"] == {f"{root}/gone"}
    assert found["broken_internal_link"] == {f"{root}/gone"}
    assert found["viewport_missing"] == {f"{root}/b"}
    assert found["slow_ttfb"] == {f"{root}/b"}
    assert audit["issue_counts"]["error"] == 3  # title_missing, http_4xx, broken_internal_link
    assert audit["issue_counts"]["error"] == sum(
        1 for check_id in found if CHECKS[check_id].severity == "error"
    )
    assert audit["category_counts"]["on_page"] >= 2
    assert audit["new_issue_count"] == len(found) and audit["fixed_issue_count"] == 0
    top = audit["top_issues"]
    assert 1 <= len(top) <= 10 and [i["severity"] for i in top][:3] == ["error"] * 3

    broken = auditor.urls(audit_id, "broken_internal_link")["data"]
    page_ids = {row["url"]: row["page_id"] for row in broken}
    assert broken[0]["evidence"] == {
        "target": f"{root}/gone",
        "status": 404,
        "anchor_text": "Old",
        "source_urls": [f"{root}/"],
    }
    assert page_ids[f"{root}/gone"] is not None
    row = auditor.urls(audit_id, "title_missing")["data"][0]
    assert (row["change"], row["draft_id"], row["suggested"]) == ("new", None, [])
    issue = auditor.issues(audit_id, severity="error", search="title")["data"]
    assert [(i["check_id"], i["affected_urls"], i["change"]) for i in issue] == [
        ("title_missing", 1, "new")
    ]
    assert issue[0]["sample_urls"] == [f"{root}/a"] and issue[0]["action_id"] is None
    assert issue[0]["how_to_fix"] and issue[0]["docs_url"].startswith("https://")
    by_category = auditor.issues(audit_id, category="performance")["data"]
    assert {i["check_id"] for i in by_category} == {"slow_ttfb"}


def test_a_page_crawled_before_the_audit_facts_were_kept_is_not_evaluated_never_a_pass(
    auditor: Auditor, run: Run
) -> None:
    seen = planted(auditor, run)
    audit = auditor.ok("seo.getAudit", {"id": seen["audit"]}, role="member")
    skipped = audit["not_evaluated"]
    # Home and /a have no audit facts nor ttfb (an older snapshot's pages): not judged.
    assert skipped["viewport_missing"] == 2
    assert skipped["slow_ttfb"] == 2
    assert skipped["csp_missing"] == 2
    # No PageSpeed data yet for the three 200 pages; no robots.txt nor sitemaps kept.
    assert skipped["lcp_poor"] == 3
    assert skipped["robots_txt_missing"] == skipped["sitemap_missing"] == 1
    assert skipped["llms_txt_invalid"] == 1
    issues = auditor.issues(seen["audit"], limit=100)["data"]
    viewport = next(i for i in issues if i["check_id"] == "viewport_missing")
    assert (viewport["affected_urls"], viewport["not_evaluated"]) == (1, 2)
    assert "lcp_poor" not in {i["check_id"] for i in issues}


def test_the_same_snapshot_and_checks_answer_the_existing_audit_unless_forced(
    auditor: Auditor, run: Run
) -> None:
    root = site_url().rstrip("/")
    _, snapshot = auditor.plant(run, site_pages(root), start_url=f"{root}/")
    first = auditor.audit(snapshot)
    again = auditor.ok("seo.createAudit", {"snapshotId": snapshot})
    assert again["id"] == first["id"] and again["status"] == "completed"
    forced = auditor.audit(snapshot, force=True)
    assert forced["id"] != first["id"] and forced["status"] == "completed"
    # Compared with the audit before it: the same findings, persisting.
    assert forced["previous_audit_id"] == first["id"]
    assert forced["new_issue_count"] == 0 and forced["fixed_issue_count"] == 0
    rows = auditor.urls(forced["id"], "title_missing")["data"]
    assert [row["change"] for row in rows] == ["persisting"]


def test_an_audit_lists_newest_first_and_another_organization_sees_none(
    auditor: Auditor, other: Auditor, run: Run
) -> None:
    seen = planted(auditor, run)
    listed = auditor.ok("seo.listAudits", {"status": "completed"}, role="member")
    assert seen["audit"] in {a["id"] for a in listed["data"]}
    times = [a["created_at"] for a in listed["data"]]
    assert times == sorted(times, reverse=True)
    assert (listed["page"], listed["limit"]) == (1, 20)
    assert auditor.ok("seo.listAudits", {"status": "failed"}, role="member")["data"] == []
    assert seen["audit"] not in {a["id"] for a in other.ok("seo.listAudits", role="member")["data"]}
    for operation, data in (
        ("seo.getAudit", {"id": seen["audit"]}),
        ("seo.listAuditIssues", {"id": seen["audit"]}),
        ("seo.listAuditIssueUrls", {"id": seen["audit"], "checkId": "title_missing"}),
        ("seo.listAuditIssueUrls", {"id": seen["audit"], "checkId": "no_such_check"}),
    ):
        problem(other.request(operation, data, role="member"), 404, "NOT_FOUND")
    # Another organization's snapshot is unknown to this one.
    problem(other.request("seo.createAudit", {"snapshotId": seen["snapshot"]}), 404, "NOT_FOUND")


def test_create_audit_refuses_what_it_cannot_audit(auditor: Auditor, run: Run) -> None:
    problem(auditor.request("seo.createAudit", {"snapshotId": str(uuid.uuid4())}), 404, "NOT_FOUND")
    _, partial = auditor.plant(run, [crawled(site_url())], partial=True)
    body = problem(auditor.request("seo.createAudit", {"snapshotId": partial}), 409, "CONFLICT")
    assert "did not complete" in body["detail"]
    problem(auditor.request("seo.createAudit", {"snapshotId": "nope"}), 400, "BAD_REQUEST")
    problem(auditor.request("seo.createAudit", {}, role="member"), 403, "FORBIDDEN")


@pytest.mark.own_org
def test_an_organization_without_a_completed_scan_gets_409(auditor: Auditor) -> None:
    body = problem(auditor.request("seo.createAudit", {}), 409, "CONFLICT")
    assert "no completed website scan" in body["detail"]
    assert auditor.ok("seo.listAudits", role="member")["total"] == 0


def test_issues_of_an_audit_not_completed_are_409(auditor: Auditor, run: Run) -> None:
    seen = planted(auditor, run)

    async def failed(db: Database) -> str:
        async with db.unit_of_work() as session:
            row = SeoAuditRun(
                tenant_id=auditor.tenant_id,
                config_id=uuid.UUID(seen["config"]),
                snapshot_id=uuid.UUID(seen["snapshot"]),
                status="failed",
                trigger="manual",
                checks_version="x",
                checks={},
                error="The audit stopped.",
            )
            session.add(row)
            await session.flush()
            return str(row.id)

    audit_id = run(failed)
    assert auditor.ok("seo.getAudit", {"id": audit_id}, role="member")["top_issues"] == []
    problem(auditor.request("seo.listAuditIssues", {"id": audit_id}), 409, "CONFLICT")
    problem(
        auditor.request("seo.listAuditIssueUrls", {"id": audit_id, "checkId": "http_4xx"}),
        409,
        "CONFLICT",
    )
    problem(auditor.request("seo.getAudit", {"id": str(uuid.uuid4())}), 404, "NOT_FOUND")


def test_issue_urls_refuse_an_unknown_check_and_bad_input(auditor: Auditor, run: Run) -> None:
    audit_id = planted(auditor, run)["audit"]
    ask = auditor.request
    problem(
        ask("seo.listAuditIssueUrls", {"id": audit_id, "checkId": "nope_check"}), 404, "NOT_FOUND"
    )
    problem(
        ask("seo.listAuditIssueUrls", {"id": audit_id, "checkId": "Bad-Id"}), 400, "BAD_REQUEST"
    )
    problem(
        ask("seo.listAuditIssueUrls", {"id": audit_id, "checkId": "http_4xx", "limit": 501}),
        400,
        "BAD_REQUEST",
    )
    problem(ask("seo.listAuditIssues", {"id": audit_id, "search": "x" * 256}), 400, "BAD_REQUEST")
    problem(ask("seo.listAuditIssues", {"id": audit_id, "change": "gone"}), 400, "BAD_REQUEST")
    searched = auditor.urls(audit_id, "http_4xx", search="GONE")
    assert [row["url"] for row in searched["data"]] == [planted(auditor, run)["root"] + "/gone"]
    assert auditor.urls(audit_id, "http_4xx", change="fixed")["total"] == 0


def test_the_check_catalog_lists_about_sixty_checks_with_filters(auditor: Auditor) -> None:
    listed = auditor.ok("seo.listAuditChecks", role="member")
    assert listed["total"] == len(listed["data"]) >= 60
    ids = {check["check_id"] for check in listed["data"]}
    assert {"http_4xx", "redirect_chain", "ai_search_crawler_blocked", "llms_txt_invalid"} <= ids
    long_title = next(c for c in listed["data"] if c["check_id"] == "title_too_long")
    assert long_title["threshold"] == {"maxChars": 60}
    assert long_title["threshold_bounds"] == {"maxChars": [30, 120]}
    geo = auditor.ok("seo.listAuditChecks", {"category": "geo"}, role="member")
    assert {c["category"] for c in geo["data"]} == {"geo"} and geo["total"] == 4
    errors = auditor.ok("seo.listAuditChecks", {"severity": "error"}, role="member")
    assert errors["total"] and all(c["severity"] == "error" for c in errors["data"])
    problem(auditor.request("seo.listAuditChecks", {"category": "misc"}), 400, "BAD_REQUEST")


def test_update_audit_check_is_for_admins_and_checks_its_bounds(auditor: Auditor) -> None:
    path = {"checkId": "thin_content"}
    ask = auditor.request
    problem(
        ask("seo.updateAuditCheck", {**path, "enabled": False}, role="editor"), 403, "FORBIDDEN"
    )
    problem(
        ask("seo.updateAuditCheck", {"checkId": "no_such", "enabled": False}, role="admin"),
        404,
        "NOT_FOUND",
    )
    for bad in (
        {"threshold": {"maxChars": 60}},  # another check's key
        {"threshold": {"minWords": 49}},
        {"threshold": {"minWords": 2001}},
        {"excludeUrlPatterns": ["*"] * 51},
        {"excludeUrlPatterns": ["x" * 256]},
        {"excludeUrlPatterns": [""]},
        {"excludeUrlPatterns": ["a\x00b"]},
        {"severity": "fatal"},
    ):
        problem(ask("seo.updateAuditCheck", {**path, **bad}, role="admin"), 400, "BAD_REQUEST")
    listed = auditor.ok("seo.listAuditChecks", role="member")["data"]
    assert next(c for c in listed if c["check_id"] == "thin_content")["customized"] is False


@pytest.mark.own_org
def test_overrides_are_frozen_into_each_audit(auditor: Auditor, run: Run) -> None:
    root = site_url().rstrip("/")
    _, snapshot = auditor.plant(run, site_pages(root), start_url=f"{root}/")
    first = auditor.audit(snapshot)
    changed = auditor.ok(
        "seo.updateAuditCheck",
        {"checkId": "title_missing", "severity": "notice", "excludeUrlPatterns": ["*/nothing"]},
        role="admin",
    )
    assert (changed["severity"], changed["default_severity"], changed["customized"]) == (
        "notice",
        "error",
        True,
    )
    off = auditor.ok(
        "seo.updateAuditCheck", {"checkId": "slow_ttfb", "enabled": False}, role="admin"
    )
    assert off["enabled"] is False
    tuned = auditor.ok(
        "seo.updateAuditCheck",
        {"checkId": "thin_content", "threshold": {"minWords": 2000}},
        role="admin",
    )
    assert tuned["threshold"] == {"minWords": 2000}
    # A new checks_version: the same snapshot is audited again without force.
    second = auditor.audit(snapshot)
    assert second["id"] != first["id"] and second["checks_version"] != first["checks_version"]
    past = auditor.ok("seo.getAudit", {"id": first["id"]}, role="member")
    assert past["checks_version"] == first["checks_version"]
    before = {i["check_id"]: i for i in auditor.issues(first["id"], limit=100)["data"]}
    after = {i["check_id"]: i for i in auditor.issues(second["id"], limit=100)["data"]}
    assert before["title_missing"]["severity"] == "error"
    assert after["title_missing"]["severity"] == "notice"
    assert "slow_ttfb" in before and "slow_ttfb" not in after
    assert "thin_content" not in before and after["thin_content"]["affected_urls"] == 3
    # /a no longer carries an error: only /gone does.
    assert (first["health_score"], second["health_score"]) == (50.0, 75.0)
    restored = auditor.ok(
        "seo.updateAuditCheck", {"checkId": "title_missing", "severity": None}, role="admin"
    )
    assert restored["severity"] == "error"
    excluded = auditor.ok(
        "seo.updateAuditCheck",
        {"checkId": "title_missing", "excludeUrlPatterns": [f"{root}/a*"]},
        role="admin",
    )
    assert excluded["exclude_url_patterns"] == [f"{root}/a*"]
    third = auditor.audit(snapshot)
    assert "title_missing" not in auditor.found(third["id"])
    fixed = auditor.issues(third["id"], change="fixed")["data"]
    assert [(i["check_id"], i["affected_urls"], i["previous_affected_urls"]) for i in fixed] == [
        ("title_missing", 0, 1)
    ]
    assert [
        r["url"] for r in auditor.urls(third["id"], "title_missing", change="fixed")["data"]
    ] == [f"{root}/a"]


@pytest.mark.own_org
def test_a_new_error_on_a_page_we_published_lately_alerts_and_offers_the_draft(
    auditor: Auditor, run: Run
) -> None:
    root = site_url().rstrip("/")
    auditor.whoami("admin")  # a member to be told

    async def publish(db: Database) -> dict[str, str]:
        async with db.unit_of_work() as session:
            connection = PublisherConnection(
                tenant_id=auditor.tenant_id,
                name="Blog",
                type="webhook",
                config={},
                status="active",
                is_default=True,
                capabilities=[],
            )
            recent = Draft(
                tenant_id=auditor.tenant_id, title="Raised beds", content="", status="published"
            )
            old = Draft(
                tenant_id=auditor.tenant_id, title="Old post", content="", status="published"
            )
            session.add_all([connection, recent, old])
            await session.flush()
            for draft, path, days in ((recent, "/a", 3), (old, "/gone", 60)):
                session.add(
                    PublishAttempt(
                        tenant_id=auditor.tenant_id,
                        draft_id=draft.id,
                        connection_id=connection.id,
                        mode="publish",
                        status="succeeded",
                        tries=1,
                        draft_version=1,
                        external_url=root + path,
                        triggered_by="user",
                        finished_at=utcnow() - timedelta(days=days),
                    )
                )
            return {"recent": str(recent.id), "old": str(old.id)}

    drafts = run(publish)
    _, snapshot = auditor.plant(run, site_pages(root), start_url=f"{root}/")
    audit = auditor.audit(snapshot)
    row = auditor.urls(audit["id"], "title_missing")["data"][0]
    assert (row["url"], row["draft_id"]) == (f"{root}/a", drafts["recent"])
    assert row["suggested"] == ["edit_draft", "regenerate_draft"]
    # The old draft's page is ours too (the offer stands) but no alert: published 60 days ago.
    gone = auditor.urls(audit["id"], "http_4xx")["data"][0]
    assert gone["draft_id"] == drafts["old"]

    async def alerts(db: Database) -> list[Event]:
        async with db.unit_of_work() as session:
            statement = select(Event).where(
                Event.tenant_id == auditor.tenant_id,
                Event.type == "seo.audit_issue_on_published_page",
            )
            return list((await session.execute(statement)).scalars())

    told = run(alerts)
    assert len(told) == 1
    payload = told[0].payload
    assert str(told[0].resource_id) == drafts["recent"]
    assert (payload["url"], payload["title"], payload["check_ids"]) == (
        f"{root}/a",
        "Raised beds",
        ["title_missing"],
    )
    assert payload["audit_id"] == audit["id"]
    deadline = time.monotonic() + 20
    while True:
        listed = auditor.ok("notifications.list", role="admin")["data"]
        mine = [n for n in listed if n["type"] == "seo.audit_issue_on_published_page"]
        if mine or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert mine and "Raised beds" in mine[0]["body"] and f"{root}/a" in mine[0]["body"]
    # Audited again (forced): the error persists, so no second alert.
    auditor.audit(snapshot, force=True)
    assert len(run(alerts)) == 1


def emit_scan_completed(auditor: Auditor, run: Run, snapshot_id: str) -> uuid.UUID:
    """crawl.completed of the snapshot, as a finished crawl emits it: the event's id."""

    async def scenario(db: Database) -> uuid.UUID:
        async with db.unit_of_work() as session:
            event = events.emit(
                session,
                auditor.tenant_id,
                "crawl.completed",
                resource_id=uuid.uuid4(),
                payload={"snapshot_id": snapshot_id, "status": "completed"},
            )
            return event.id

    found: uuid.UUID = run(scenario)
    return found


def wait_dispatched(run: Run, event_id: uuid.UUID) -> None:
    """Until the dispatcher handed the event to the listeners (they ran in its transaction)."""

    async def dispatched(db: Database) -> bool:
        async with db.unit_of_work() as session:
            event = await session.get(Event, event_id)
            return event is not None and event.dispatched_at is not None

    deadline = time.monotonic() + 20
    while not run(dispatched):
        assert time.monotonic() < deadline, "the event was not dispatched"
        time.sleep(0.05)


def audits_of(auditor: Auditor, snapshot_id: str) -> list[dict[str, Any]]:
    listed = auditor.ok("seo.listAudits", {"limit": 100}, role="member")["data"]
    return [audit for audit in listed if audit["snapshot_id"] == snapshot_id]


@pytest.mark.own_org
def test_a_completed_scan_is_audited_unless_the_trigger_says_otherwise(
    auditor: Auditor, run: Run
) -> None:
    root = site_url().rstrip("/")
    config, snapshot = auditor.plant(run, site_pages(root), start_url=f"{root}/")
    emit_scan_completed(auditor, run, snapshot)
    deadline = time.monotonic() + 20
    while not audits_of(auditor, snapshot):
        assert time.monotonic() < deadline, "no audit after the scan"
        time.sleep(0.05)
    (started,) = audits_of(auditor, snapshot)
    assert (started["trigger"], started["created_by"]) == ("after_scan", None)
    assert auditor.wait(started["id"])["status"] == "completed"

    auditor.ok("seo.updateSettings", {"audit": {"trigger": "manual"}}, role="admin")
    _, later = auditor.plant(run, site_pages(root), config_id=config)
    wait_dispatched(run, emit_scan_completed(auditor, run, later))
    assert audits_of(auditor, later) == []


@pytest.mark.own_org
def test_a_weekly_trigger_audits_the_newest_scan_once_a_week(auditor: Auditor, run: Run) -> None:
    def tick(at: datetime) -> dict[str, int]:
        async def scenario(db: Database) -> dict[str, int]:
            return await audit_schedule.tick(db, at)

        found: dict[str, int] = run(scenario)
        return found

    def next_audit_at() -> datetime | None:
        async def scenario(db: Database) -> datetime | None:
            async with db.unit_of_work() as session:
                row = await seo_repository.settings(session, auditor.tenant_id)
                return row.next_audit_at

        found: datetime | None = run(scenario)
        return found

    auditor.ok("seo.updateSettings", {"audit": {"trigger": "weekly"}}, role="admin")
    first_due = next_audit_at()
    assert first_due is not None and first_due <= utcnow()
    # No completed scan yet: skipped, and due again a week on.
    assert tick(utcnow())["skipped"] >= 1
    skipped_until = next_audit_at()
    assert skipped_until is not None and skipped_until > utcnow() + timedelta(days=6)
    root = site_url().rstrip("/")
    _, snapshot = auditor.plant(run, site_pages(root), start_url=f"{root}/")
    # Nothing is due before the week is out.
    tick(utcnow())
    assert audits_of(auditor, snapshot) == []
    a_week_on = skipped_until + timedelta(minutes=1)
    assert tick(a_week_on)["started"] >= 1
    (weekly,) = audits_of(auditor, snapshot)
    assert (weekly["trigger"], weekly["created_by"]) == ("schedule", None)
    assert auditor.wait(weekly["id"])["status"] == "completed"
    # The week after, the same scan with the same checks keeps its audit.
    tick(a_week_on + timedelta(days=7, minutes=1))
    assert [audit["id"] for audit in audits_of(auditor, snapshot)] == [weekly["id"]]

    auditor.ok("seo.updateSettings", {"audit": {"trigger": "manual"}}, role="admin")
    assert next_audit_at() is None


def test_an_audit_writes_each_page_s_open_issues_onto_the_page_inventory(
    auditor: Auditor, run: Run
) -> None:
    root = site_url().rstrip("/")
    _, snapshot = auditor.plant(run, site_pages(root), start_url=f"{root}/")

    async def scan_completed(db: Database) -> None:
        # What the crawl.completed listener does for a crawled scan (a planted one fires none).
        async with db.unit_of_work() as session:
            await inventory.scan_completed(session, auditor.tenant_id, uuid.UUID(snapshot))

    run(scan_completed)
    audit = auditor.audit(snapshot)

    def page(path: str) -> dict[str, Any]:
        listed = auditor.ok("seo.listPages", {"search": f"{root}{path}", "limit": 100})
        return next(row for row in listed["data"] if row["url"] == f"{root}{path}")

    found = auditor.found(audit["id"])

    def checks_on(path: str) -> set[str]:
        return {check_id for check_id, urls in found.items() if f"{root}{path}" in urls}

    untitled, slow = page("/a"), page("/b")
    assert "title_missing" in checks_on("/a")
    assert untitled["open_issues"] == len(checks_on("/a"))
    assert untitled["highest_severity"] == "error"
    assert not any(CHECKS[check].severity == "error" for check in checks_on("/b"))
    assert slow["open_issues"] == len(checks_on("/b")) and slow["highest_severity"] == "warning"
    with_errors = auditor.ok(
        "seo.listPages", {"search": root, "hasIssues": True, "severity": "error", "limit": 100}
    )
    assert {row["url"] for row in with_errors["data"]} == {f"{root}/a", f"{root}/gone"}
    issues = auditor.ok("seo.getPage", {"id": untitled["id"]})["issues"]
    assert {issue["check_id"] for issue in issues} == checks_on("/a")
    assert issues[0]["severity"] == "error"
    title = next(issue for issue in issues if issue["check_id"] == "title_missing")
    assert title == {
        "check_id": "title_missing",
        "severity": "error",
        "category": "on_page",
        "evidence": auditor.urls(audit["id"], "title_missing")["data"][0]["evidence"],
    }


def test_what_the_loopback_site_cannot_plant_is_found_on_planted_scans(
    auditor: Auditor, run: Run
) -> None:
    """The checks tests/seo/audits/test_acceptance.py cannot plant on its http loopback site
    (https pages, a page that never answered, the site files' absence)."""
    start = site_url()
    robots = _root(start) + "robots.txt"
    secure = f"https://secure.example/{uuid.uuid4().hex[:8]}"
    hsts = {**facts().security_headers, "strict-transport-security": "max-age=31536000"}
    pages = [
        crawled(
            f"{secure}/",
            title=TITLE,
            depth=0,
            audit=facts(mixed_content=["http://cdn.example/a.js"]),
        ),
        crawled(f"{secure}/kept", title=TITLE + " (kept)", audit=facts(security_headers=hsts)),
        crawled(f"{secure}/silent", status=None, error="timeout"),
    ]
    absent = {
        "robots_txt": {"status": 404, "body": None},
        "llms_txt": {"status": 404, "body": None},
        "sitemaps": {"read": [], "listed": {}},
    }
    config, snapshot = auditor.plant(run, pages, start_url=start, site_files=absent)
    found = auditor.found(auditor.audit(snapshot)["id"])
    assert found["mixed_content"] == {f"{secure}/"}
    assert found["hsts_missing"] == {f"{secure}/"}
    assert found["fetch_failed"] == {f"{secure}/silent"}
    assert found["robots_txt_missing"] == {robots}
    assert found["sitemap_missing"] == {_root(start) + "sitemap.xml"}
    assert found["llms_txt_missing"] == {_root(start) + "llms.txt"}
    assert "robots_txt_unreachable" not in found

    unreachable = {**absent, "robots_txt": {"status": 503, "body": None}}
    _, later = auditor.plant(run, pages, config_id=config, site_files=unreachable)
    found = auditor.found(auditor.audit(later)["id"])
    assert found["robots_txt_unreachable"] == {robots}
    assert "robots_txt_missing" not in found


def _root(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"
