"""The Dashboard's six operations over REST and RPC (issue 38): counts equal drafts.getStats and
jobs.stats, a card without a source is null, answers are cached per organization and retired by
a write, activity is activity.list's, alerts carry the notification that raised them, the
needs-me queue is ordered by due time, and a second organization sees none of it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from contentplatform.website_scan.models import CrawlRun
from tests.dashboard.support import (
    Dashboard,
    Draft,
    Job,
    PublisherConnection,
    finished_runs,
    set_columns,
)
from tests.media.support import Media
from tests.notifications.support import emit
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.servers import statements
from tests.website_scan.seed import crawled, seed_snapshot
from tests.website_scan.support import SITE, Scanner
from tests.workflows.test_runs import GATE, OUTLINE, RESEARCH, WRITE, Runner

dash = org_fixture(Dashboard)
other = org_fixture(Dashboard, second=True)

OPERATIONS = (
    "dashboard.summary",
    "dashboard.activity",
    "dashboard.upcoming",
    "dashboard.pendingReviews",
    "dashboard.alerts",
    "dashboard.quickStats",
)


def now() -> datetime:
    return datetime.now(UTC)


def test_counts_equal_drafts_and_jobs_stats_and_a_card_without_a_source_is_null(dash, run):
    ids = [dash.draft(f"Draft {n}") for n in range(4)]
    dash.ok("drafts.approve", {"id": ids[0]}, role="editor")
    set_columns(run, Draft, ids[1], status="published", published_at=now(), seo_score=80)
    # Published 10 days ago: in the previous 7 days, not in these.
    ten_days_ago = now() - timedelta(days=10)
    set_columns(run, Draft, ids[2], status="published", published_at=ten_days_ago, seo_score=None)
    dash.new_job("Paused")
    dash.new_job("Running", status="active")

    drafts, jobs = dash.draft_stats(), dash.job_stats()
    summary = dash.summary("7d")
    cards = {card["key"]: card for card in summary["cards"]}
    assert list(cards) == [
        "published_posts", "drafts_in_review", "active_jobs", "automation_success_rate",
        "views", "avg_seo_score", "credits_remaining",
    ]  # fmt: skip
    assert summary["range"] == "7d"
    assert cards["drafts_in_review"]["value"] == drafts["byStatus"]["reviewing"] == 1
    assert cards["active_jobs"]["value"] == jobs["active"] == 1
    assert cards["published_posts"] | {"label": None, "href": None} == {
        "key": "published_posts", "label": None, "value": 1, "previous": 1, "change_pct": 0.0,
        "unit": "count", "href": None,
    }  # fmt: skip
    # The one published this week has a score; the one before has none: null, not 0.
    assert (cards["avg_seo_score"]["value"], cards["avg_seo_score"]["previous"]) == (80, None)
    balance = dash.ok("credits.getBalance", role="member")
    assert cards["credits_remaining"]["value"] == balance["available"]
    # No source yet: content analytics is not connected; no job run finished.
    for key in ("views", "automation_success_rate"):
        assert (cards[key]["value"], cards[key]["previous"], cards[key]["change_pct"]) == (
            None, None, None,
        ), key  # fmt: skip

    quick = dash.quick()
    assert quick["drafts"] == {
        "reviewing": drafts["byStatus"]["reviewing"],
        "approved": drafts["byStatus"]["approved"],
        "published_7d": 1,
    }
    assert quick["jobs"] == {k: jobs[k] for k in ("active", "paused", "error")}
    assert quick["documents"] == {"total": 0, "ready": 0}
    assert quick["media"] == {"total": 0, "license_attention": 0}
    assert quick["workflows"] == {"total": 0, "default_id": None}
    assert quick["website"] is None
    assert quick["credits"]["remaining"] == balance["available"]
    sparks = quick["sparklines"]
    assert len(sparks["published"]) == len(sparks["credits"]) == len(sparks["days"]) == 7
    assert sparks["published"] == [0] * 6 + [1]
    assert sum(sparks["credits"]) == quick["credits"]["used_7d"]
    assert sparks["days"][-1] == now().date().isoformat()  # the organization's zone is UTC


def test_the_success_rate_card_is_the_runs_that_finished(dash, run):
    job = dash.new_job()
    finished_runs(
        run,
        dash.tenant_id,
        job,
        [
            ("completed", now() - timedelta(hours=1)),
            ("completed", now() - timedelta(days=2)),
            ("completed", now() - timedelta(days=3)),
            ("failed", now() - timedelta(days=4)),
            ("completed", now() - timedelta(days=9)),  # the previous 7 days
        ],
    )
    rate = dash.cards("7d")["automation_success_rate"]
    assert (rate["value"], rate["previous"], rate["change_pct"]) == (75.0, 100.0, -25.0)
    assert rate["unit"] == "percent"


def test_a_second_read_is_the_cache_and_a_write_through_the_api_retires_it(dash, server):
    dash.draft("First")
    # The month's credit grant is written by the first balance read: a write of the
    # organization's like any other, which would retire the cache the first read fills.
    dash.ok("credits.getBalance", role="member")
    first = dash.summary()
    quick = dash.quick()
    pending = dash.pending()
    alerts = dash.alerts()
    with statements(server) as sent:
        assert dash.summary() == first
        assert dash.quick() == quick
        assert dash.pending() == pending
        assert dash.alerts() == alerts
    # Answered from the cache: not one statement.
    assert sent == []

    dash.draft("Second")
    cards = {card["key"]: card for card in dash.summary()["cards"]}
    assert cards["drafts_in_review"]["value"] == 2
    assert dash.quick()["drafts"]["reviewing"] == 2
    assert dash.pending()["total"] == 2
    dash.new_job("Another")
    assert dash.quick()["jobs"]["paused"] == 1


def test_activity_is_activity_lists_items(dash):
    draft = dash.draft("Spring launch")
    dash.ok("drafts.approve", {"id": draft}, role="editor")
    dash.new_job()

    listed = dash.ok("activity.list", {"limit": 100}, role="member")
    mine = dash.activity(limit=100)
    assert mine["total"] == listed["total"] >= 3
    assert [(i["id"], i["action"], i["created_at"]) for i in mine["data"]] == [
        (e["id"], e["action"], e["created_at"]) for e in listed["data"]
    ]
    created = next(i for i in mine["data"] if i["action"] == "draft.created")
    assert created["type"] == "draft"
    assert created["subject"] == {"type": "draft", "id": draft, "label": "Spring launch"}
    assert created["actor"] == {"id": dash.users["editor"], "name": created["actor"]["name"]}

    only = dash.activity(types="draft,publish", limit=100)
    assert {i["type"] for i in only["data"]} == {"draft"}
    assert only["total"] == sum(1 for i in listed["data"] if i["action"].startswith("draft."))
    assert dash.activity(types="crawl")["total"] == 0
    assert dash.activity(since=(now() + timedelta(hours=1)).isoformat())["total"] == 0
    paged = dash.activity(limit=1, page=2)
    assert paged["data"] == [mine["data"][1]] and (paged["page"], paged["limit"]) == (2, 1)

    body = problem(dash.request("dashboard.activity", {"types": "draft,nope"}), 400, "BAD_REQUEST")
    assert "types" in str(body)


def test_an_alert_carries_its_notification_and_reading_it_acknowledges_it(dash, run):
    job = dash.new_job("Nightly")
    set_columns(run, Job, job, status="error")
    emit(
        run,
        dash.tenant_id,
        "job.run_failed",
        resource_id=job,
        payload={"job_id": job, "error": "it broke"},
    )
    (told,) = dash.notifications("admin", unreadOnly=True)["data"]
    assert told["type"] == "job.run_failed"

    (alert,) = dash.alerts(severity="critical")["data"]
    assert alert | {"created_at": None} == {
        "id": f"job_failed:{job}", "kind": "job_failed", "severity": "critical",
        "title": "Job Nightly failed",
        "message": "Its last run failed; see the job's runs, then resume it.",
        "ref": {"type": "job", "id": job}, "created_at": None,
        "notification_id": told["id"], "acknowledged": False,
    }  # fmt: skip
    assert dash.alerts(severity="info")["total"] == 0

    dash.mark_read("admin", ids=[alert["notification_id"]])
    (acknowledged,) = dash.alerts()["data"]
    assert acknowledged["acknowledged"] is True

    # Cleared with its condition.
    dash.ok("jobs.delete", {"id": job}, role="admin")
    assert dash.alerts()["data"] == []


def test_alerts_without_an_event_have_no_notification(dash, run):
    publisher = dash.publisher()
    set_columns(run, PublisherConnection, publisher, status="error", last_error="401 from the site")
    draft = dash.draft("Waiting")
    set_columns(run, Draft, draft, updated_at=now() - timedelta(days=3))

    found = {alert["kind"]: alert for alert in dash.alerts()["data"]}
    assert set(found) == {"publisher_disconnected", "review_overdue"}
    assert found["publisher_disconnected"]["message"] == "401 from the site"
    assert found["review_overdue"]["ref"] == {"type": "draft", "id": draft}
    assert {a["notification_id"] for a in found.values()} == {None}
    # Most severe first.
    assert [a["severity"] for a in dash.alerts()["data"]] == ["critical", "warning"]


def test_a_licence_ending_on_an_asset_in_use_is_an_alert_until_it_is_renewed(dash):
    media = Media.of(dash)
    soon = (now() + timedelta(days=10)).isoformat()
    asset = media.add(filename="fern.jpg", license={"type": "royalty_free", "expiresAt": soon})
    media.add(filename="unused.jpg", license={"type": "royalty_free", "expiresAt": soon})
    assert media.attach(asset["id"], dash.draft("Ferns")).status_code == 200

    assert dash.quick()["media"] == {"total": 2, "license_attention": 2}
    (alert,) = dash.alerts(severity="warning")["data"]  # the unused one raises none
    assert (alert["kind"], alert["ref"]) == (
        "license_expiring",
        {"type": "media", "id": asset["id"]},
    )
    assert alert["title"] == "Licence of fern.jpg ends soon"

    ended = (now() - timedelta(minutes=1)).isoformat()
    assert media.update(asset["id"], license={"expiresAt": ended}).status_code == 200
    (alert,) = dash.alerts(severity="critical")["data"]
    assert alert["kind"] == "license_expired"

    assert media.update(asset["id"], license={"expiresAt": None}).status_code == 200
    assert [a["kind"] for a in dash.alerts()["data"]] == []


def test_the_needs_me_queue_is_one_list_by_due_time(dash, run):
    # A workflow run at a review gate (timeoutHours 1), through the API on the offline writer.
    runner = Runner.of(dash)
    runner.handbook()
    workflow = runner.workflow(RESEARCH, OUTLINE, WRITE, GATE)
    started = runner.test_run(workflow["id"], createDraft=True)
    waiting = runner.until(started["id"], "waiting_review")
    gated, gate_run = waiting["draft_id"], waiting["id"]
    dash.assign(gated, "editor")
    moment = now()
    mine = dash.draft("Assigned to the member")
    dash.assign(mine, "member")
    set_columns(run, Draft, mine, updated_at=moment - timedelta(days=3))  # due a day ago
    fresh = dash.draft("Fresh")  # due in 48 hours
    publisher = dash.publisher()
    set_columns(
        run,
        PublisherConnection,
        publisher,
        status="error",
        last_tested_at=moment - timedelta(hours=2),
    )

    queue = dash.pending()
    assert queue["total"] == 4
    assert [(i["type"], i["draft_id"] or i["publisher_id"]) for i in queue["data"]] == [
        ("draft_review", mine),
        ("publisher_failing", publisher),
        ("workflow_gate", gated),
        ("draft_review", fresh),
    ]
    assert [i["overdue"] for i in queue["data"]] == [True, True, False, False]
    assert queue["data"][2]["workflow_run_id"] == gate_run
    assert queue["data"][0]["assignee_id"] == dash.users["member"]

    assert [i["draft_id"] for i in dash.pending(assignedToMe=True)["data"]] == [mine]
    assert [i["draft_id"] for i in dash.pending("editor", assignedToMe=True)["data"]] == [gated]
    page = dash.pending(limit=2, page=2)
    assert [i["type"] for i in page["data"]] == ["workflow_gate", "draft_review"]
    assert page["total"] == 4


def test_upcoming_is_the_planned_work_of_the_next_days_soonest_first(dash):
    job = dash.new_job()

    def planned(days: int) -> str:
        data = {"jobId": job, "scheduledDate": (now() + timedelta(days=days)).isoformat()}
        return str(dash.ok("jobInstances.create", data, role="editor")["id"])

    later, sooner = planned(3), planned(1)
    planned(20)
    draft = dash.draft("Spring launch")
    dash.ok("drafts.approve", {"id": draft}, role="editor")
    publish = {
        "id": draft,
        "publisherConnectionId": dash.publisher(),
        "mode": "schedule",
        "scheduledAt": (now() + timedelta(days=2)).isoformat(),
    }
    assert dash.request("drafts.publish", publish, role="editor").status_code in (200, 202)
    scanner = Scanner.of(dash)
    config = scanner.config(name="Garden shop")
    scheduled = scanner.schedule(config["id"], cronExpression="0 3 * * *").json()

    week = dash.upcoming()
    items = {item["ref"]["id"]: item for item in week["data"]}
    assert [i["ref"]["id"] for i in week["data"]] == sorted(items, key=lambda ref: items[ref]["at"])
    assert [
        (i["type"], i["ref"]["id"]) for i in week["data"] if i["ref"]["id"] != config["id"]
    ] == [
        ("job_instance", sooner),
        ("scheduled_publish", draft),
        ("job_instance", later),
    ]
    crawl = items[config["id"]]
    assert (crawl["type"], crawl["title"]) == ("crawl_schedule", "Garden shop")
    assert datetime.fromisoformat(crawl["at"]) == datetime.fromisoformat(scheduled["next_run_at"])
    assert items[draft]["title"] == "Spring launch" and items[draft]["status"] == "scheduled"
    assert week["total"] == 4
    month = dash.upcoming(days=30)
    assert month["total"] == 5
    assert dash.upcoming(days=30, limit=2, page=3)["data"] == month["data"][4:]
    problem(dash.request("dashboard.upcoming", {"days": 31}), 400, "BAD_REQUEST")


def test_the_website_crawled_last_and_its_alerts(dash, run):
    scanner = Scanner.of(dash)
    shop = scanner.config(name="Garden shop")
    blog = scanner.config(name="Blog")
    assert dash.quick()["website"] is None  # never crawled: no figures, not zeros

    async def crawls(db):
        broken = [
            {
                "target_url": f"{SITE}/gone",
                "status_code": 404,
                "error": None,
                "internal": True,
                "occurrences": [{"source_url": f"{SITE}/a", "link_text": "Gone"}],
            }
        ]
        pages = [crawled(f"{SITE}/a"), crawled(f"{SITE}/b")]
        done = await seed_snapshot(db, dash.tenant_id, uuid.UUID(shop["id"]), pages, broken=broken)
        failed = await seed_snapshot(
            db,
            dash.tenant_id,
            uuid.UUID(blog["id"]),
            [crawled(f"{SITE}/c")],
            partial=True,
            created_at=now() - timedelta(hours=1),
        )
        return done, failed

    done, failed = run(crawls)
    set_columns(run, CrawlRun, failed.run_id, status="failed")

    website = dash.quick()["website"]
    assert (website["pages_last_snapshot"], website["broken_links"]) == (2, 1)
    assert website["last_crawl_at"] is not None
    found = {alert["kind"]: alert for alert in dash.alerts()["data"]}
    assert found["broken_links"]["ref"] == {"type": "crawl_run", "id": str(done.run_id)}
    assert found["broken_links"]["title"] == "1 broken links on Garden shop"
    assert found["crawl_failed"]["ref"] == {"type": "crawl_run", "id": str(failed.run_id)}
    assert found["crawl_failed"]["severity"] == "warning"


def test_a_second_organization_sees_nothing_of_the_first(dash, other, run):
    dash.draft("Mine")
    job = dash.new_job()
    set_columns(run, Job, job, status="error")
    dash.ok(
        "jobInstances.create",
        {"jobId": job, "scheduledDate": (now() + timedelta(days=1)).isoformat()},
        role="editor",
    )

    cards = {card["key"]: card for card in other.summary()["cards"]}
    assert cards["drafts_in_review"]["value"] == 0
    assert other.quick()["jobs"] == {"active": 0, "paused": 0, "error": 0}
    # Its own members joining, nothing of the first's.
    assert {i["action"] for i in other.activity()["data"]} == {"member.added"}
    assert other.upcoming()["total"] == 0
    assert other.pending()["total"] == 0
    assert [a["kind"] for a in other.alerts()["data"]] == []
    assert [a["kind"] for a in dash.alerts()["data"]] == ["job_failed"]


def test_every_member_reads_it_and_a_caller_without_a_token_is_refused(dash):
    for operation in OPERATIONS:
        response = dash.request(operation, {}, role="member")
        assert response.status_code == 200, (operation, response.text)
        unauthenticated = dash.call(operation, {}, token=None, org=dash.org)
        assert unauthenticated.status_code == 401, operation
    problem(dash.request("dashboard.summary", {"range": "1y"}), 400, "BAD_REQUEST")
    problem(dash.request("dashboard.alerts", {"limit": 0}), 400, "BAD_REQUEST")


@pytest.mark.parametrize("operation", ["dashboard.alerts", "dashboard.pendingReviews"])
def test_the_callers_own_answers_are_kept_apart(dash, operation, run):
    """Alerts and the queue are cached per caller: one member's read never answers another's."""
    job = dash.new_job()
    set_columns(run, Job, job, status="error")
    emit(run, dash.tenant_id, "job.run_failed", resource_id=job, payload={"job_id": job})
    draft = dash.draft("Mine")
    dash.assign(draft, "admin")
    query = {"assignedToMe": True} if operation == "dashboard.pendingReviews" else {}
    admin = dash.ok(operation, query, role="admin")
    member = dash.ok(operation, query, role="member")
    if operation == "dashboard.alerts":
        told = {a["notification_id"] for a in admin["data"]} - {None}
        assert len(told) == 1
        # The member's alert names the member's own notification of it, or none.
        assert {a["notification_id"] for a in member["data"]}.isdisjoint(told)
    else:
        assert admin["total"] == 1 and member["total"] == 0
