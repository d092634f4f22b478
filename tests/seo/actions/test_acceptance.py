"""Issue 42's acceptance for SEO actions, over REST and RPC: one pass of audit + Search Console
sync + URL inspections + rank checks + a scan read for GEO makes exactly the expected actions
(the audit's and the syncs' own runs generate theirs, settings `actions.auto_generate` being on
by default; seo.generateActions the rest); a second pass makes none new; a dismissed one is
not made again; the job of a content action, its draft published, completes the action; the
fixture fixed (a new scan audited, Search Console rows improved) verifies the done ones, and an
older audit read again reopens what it still shows (a regression)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

from contentplatform.config import Settings
from contentplatform.website_scan.crawling.pages import PageRecord
from tests.conftest import Run
from tests.seo.actions.support import Actions, end_run, publish, track
from tests.seo.insights.test_insights import LOW_CTR, SITE, one_day
from tests.seo.search_console.support import days, make_property, plant
from tests.support.orgs import org_fixture
from tests.website_scan.seed import crawled
from tests.website_scan.support import site_url

actions = org_fixture(Actions)

# What the audit of the first scan fails at error or warning: /a has no title, /gone is a 404
# linked from home, home and /a share their text and description, the loopback site is http,
# and robots.txt blocks OpenAI's search agent.
FAILING = {
    "ai_search_crawler_blocked",
    "broken_internal_link",
    "duplicate_content",
    "duplicate_meta_description",
    "http_4xx",
    "http_not_https",
    "title_missing",
}
ROBOTS = "User-agent: OAI-SearchBot\nDisallow: /\n\nUser-agent: *\nAllow: /\n"
WORDS = " ".join(["compost"] * 150)


def scan_pages(root: str, *, fixed: bool = False) -> list[PageRecord]:
    """Home links to /a and /gone; /a has no title and /gone answers 404. Fixed: /a titled, no
    link to /gone."""
    links = [(f"{root}/a", "A", True)] + ([] if fixed else [(f"{root}/gone", "Old", True)])
    good: dict[str, Any] = {
        "meta_description": "Everything for careful growers: tools, seeds and advice.",
        "headings": [("h1", "Shop")],
        "text": WORDS,
    }
    pages = [
        crawled(f"{root}/", title="Garden shop: tools and seeds", depth=0, links=links, **good),
        crawled(
            f"{root}/a",
            title="About our garden shop" if fixed else None,
            links=[(f"{root}/", "Home", True)],
            **good,
        ),
    ]
    if not fixed:
        pages.append(crawled(f"{root}/gone", status=404))
    return pages


def subjects(found: dict[tuple[str, str], dict[str, Any]], kind: str) -> set[str]:
    return {subject for each, subject in found if each == kind}


def test_one_pass_makes_the_expected_actions_and_the_loop_closes(
    actions: Actions, run: Run, settings: Settings
) -> None:
    root = site_url().rstrip("/")
    files = {
        "robots_txt": {"status": 200, "body": ROBOTS, "declared_sitemaps": []},
        "llms_txt": {"status": 404, "body": None},
    }
    config, snapshot = actions.plant(run, scan_pages(root), start_url=f"{root}/", site_files=files)
    # The audit; its completion generates the audit's actions.
    first_audit = actions.audit(snapshot)
    assert first_audit["status"] == "completed"
    # One per check failing at error or warning, whatever its number of URLs.
    assert subjects(actions.every(), "fix_technical_issue") == FAILING
    failing = {
        issue["check_id"]
        for issue in actions.issues(first_audit["id"], limit=100)["data"]
        if issue["severity"] in ("error", "warning") and issue["affected_urls"]
    }
    assert failing == FAILING
    # Search Console: the insights fixture stored, then a sync ended (it generates too).
    property_id = make_property(settings, actions.tenant_id, f"{root}/")
    stored = [one_day(day) for day in days(date(2025, 2, 1), 56)]
    stored += [one_day(day) for day in days(date(2026, 2, 1), 56)]
    plant(settings, actions.tenant_id, property_id, stored)
    end_run(settings, actions.tenant_id, "search_console", property_id=property_id)
    # URL inspections: one page not indexed, one whose canonical Google chose elsewhere.
    end_run(
        settings,
        actions.tenant_id,
        "url_inspection",
        inspections=[
            {"url": f"{root}/a", "verdict": "FAIL", "coverage_state": "Crawled - not indexed"},
            {
                "url": f"{root}/",
                "verdict": "PASS",
                "google_canonical": f"{root}/home",
                "user_canonical": f"{root}/",
            },
            {"url": f"{root}/b", "verdict": "PASS"},
        ],
    )
    # Rank: one keyword fell from 4 to 12 over its last three checks; one held.
    fell = track(run, actions.tenant_id, "widget repair kit", [2, 4, 7, 12])
    track(run, actions.tenant_id, "widget shop", [3, 3, 4])
    made = actions.generate()
    found = actions.every()
    assert set(found) == {
        *(("fix_technical_issue", check) for check in FAILING),
        ("fix_indexing", f"{root}/a"),
        ("fix_indexing", f"{root}/"),
        ("improve_snippet", f"{LOW_CTR[0]}\n{SITE}{LOW_CTR[1]}"),
        ("target_striking_distance", f"widget repair\n{SITE}/repair"),
        ("refresh_content", f"{SITE}/old-post"),
        ("resolve_cannibalization", "widget reviews"),
        ("recover_ranking", fell),
        ("improve_geo", "crawler:OAI-SearchBot"),
        ("improve_geo", "llms.txt"),
    }
    # What the runs made before, the operation found unchanged; it made rank's and GEO's.
    assert (made["created"], made["reopened"], made["verified"]) == (3, 0, 0)
    assert {(row["type"], row["source"]) for row in made["data"]} == {
        ("recover_ranking", "rank"),
        ("improve_geo", "geo"),
    }
    assert all(row["status"] == "open" for row in found.values())
    snippet = found[("improve_snippet", f"{LOW_CTR[0]}\n{SITE}{LOW_CTR[1]}")]
    assert snippet["source"] == "search_console" and snippet["keywords"] == [LOW_CTR[0]]
    assert snippet["evidence"]["impressions"] == 2800 and snippet["evidence"]["clicks"] == 56
    # Linked to the page inventory's row of its URL (the sync's end wrote it).
    (page_id,) = snippet["page_ids"]
    on_page = actions.actions(pageId=page_id)["data"]
    assert snippet["id"] in {row["id"] for row in on_page}
    assert all(page_id in row["page_ids"] for row in on_page)
    indexing = found[("fix_indexing", f"{root}/a")]
    assert indexing["evidence"]["verdict"] == "FAIL" and indexing["target_urls"] == [f"{root}/a"]
    title = found[("fix_technical_issue", "title_missing")]
    assert title["audit_id"] == first_audit["id"] and title["check_id"] == "title_missing"
    assert title["evidence"]["affected_urls"] == 1
    assert title["evidence"]["sample_urls"] == [f"{root}/a"]
    ranking = found[("recover_ranking", fell)]
    assert ranking["evidence"]["positions"] == [4, 7, 12]
    assert ranking["evidence"]["positions_lost"] == 8
    for row in found.values():
        assert 0 <= row["impact_score"] <= 100
        floor = {"critical": 80, "high": 60, "medium": 30, "low": 0}[row["priority"]]
        assert row["impact_score"] >= floor or row["type"] == "fix_indexing"
    # The list's default: open and in_progress, highest priority first.
    listed = actions.actions()["data"]
    ranks = [("low", "medium", "high", "critical").index(row["priority"]) for row in listed]
    assert ranks == sorted(ranks, reverse=True)

    # A second pass makes nothing new.
    again = actions.generate()
    assert (again["created"], again["reopened"], again["verified"]) == (0, 0, 0)
    assert again["data"] == [] and again["unchanged"] + again["updated"] == len(found)
    assert actions.actions(status="all")["total"] == len(found)

    # A dismissed one is not made again.
    llms = found[("improve_geo", "llms.txt")]
    actions.ok("seo.dismissAction", {"id": llms["id"], "reason": "We publish no llms.txt."})
    assert actions.generate(sources=["geo"])["created"] == 0
    assert actions.detail(llms["id"])["status"] == "dismissed"
    assert actions.actions(status="all")["total"] == len(found)

    # The snippet's job: its draft published completes the action.
    created = actions.ok(
        "seo.createJobFromAction",
        {"id": snippet["id"], "scheduledDate": "2030-01-01T09:00:00Z"},
    )
    job, instance = created["job"], created["instance"]
    assert created["action"]["status"] == "in_progress"
    assert created["action"]["job_id"] == job["id"]
    assert job["seo_action_id"] == snippet["id"] and job["job_type"] == "one_off"
    assert job["topic_source"] == "manual" and job["topics"] == [snippet["title"]]
    assert job["keywords"] == [LOW_CTR[0]] and "Evidence:" in job["content_instructions"]
    assert instance["job_id"] == job["id"] and instance["status"] == "pending"
    draft_id = publish(run, actions.tenant_id, job["id"], instance["id"], f"{SITE}/colors")
    done = actions.detail(snippet["id"])
    assert done["status"] == "done" and done["draft_id"] == draft_id and done["done_at"]
    assert done["draft"] == {
        "id": draft_id,
        "status": "published",
        "published_url": f"{SITE}/colors",
    }
    assert done["job"] == {"id": job["id"], "name": job["name"], "status": job["status"]}
    assert [(h["from"], h["to"], h["actor"]) for h in done["history"]] == [
        (None, "open", "system"),
        ("open", "in_progress", actions.users["editor"]),
        ("in_progress", "done", "system"),
    ]

    # Three technical actions done by hand; the fixed scan no longer fails two of them.
    technical = {check: found[("fix_technical_issue", check)]["id"] for check in FAILING}
    for check in ("title_missing", "http_4xx", "ai_search_crawler_blocked"):
        actions.ok("seo.updateAction", {"id": technical[check], "status": "done"})

    # The fixture fixed: a new scan audited (its completion verifies), better Search Console
    # rows for the snippet's query (the sync's end verifies).
    _, fixed_snapshot = actions.plant(
        run, scan_pages(root, fixed=True), config_id=config, site_files=files
    )
    actions.audit(fixed_snapshot)
    status = {check: actions.detail(action_id) for check, action_id in technical.items()}
    for check in ("title_missing", "http_4xx"):
        assert status[check]["status"] == "verified" and status[check]["verified_at"]
        assert status[check]["verification"]["result"] == "fixed"
        last = status[check]["history"][-1]
        assert (last["from"], last["to"], last["actor"]) == ("done", "verified", "system")
    # Still failing: it stays done, still present.
    still = status["ai_search_crawler_blocked"]
    assert still["status"] == "done" and still["verification"]["result"] == "still_present"
    # Open ones whose signal is gone are left to a person.
    assert status["broken_internal_link"]["status"] == "open"

    better = [one_day(day) for day in days(date(2026, 3, 1), 28)]
    for day in better:
        # 30% at position 2: no longer a low CTR.
        day.queries = [
            replace(row, clicks=30) if row.query == LOW_CTR[0] else row for row in day.queries
        ]
    plant(settings, actions.tenant_id, property_id, better)
    end_run(settings, actions.tenant_id, "search_console", property_id=property_id)
    assert actions.detail(snippet["id"])["status"] == "verified"

    # The first audit read again shows title_missing again: a regression reopens it.
    back = actions.generate(sources=["audit"], auditId=first_audit["id"])
    assert back["reopened"] == 2 and back["created"] == back["verified"] == 0
    assert {row["id"] for row in back["data"]} == {
        technical["title_missing"],
        technical["http_4xx"],
    }
    reopened = actions.detail(technical["title_missing"])
    assert reopened["status"] == "open" and reopened["verified_at"] is None
    assert reopened["history"][-1]["from"] == "verified"
    assert "regression" in reopened["history"][-1]["note"]
