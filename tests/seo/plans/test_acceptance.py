"""Issue 44's acceptance, over REST and RPC: the fixture tenant (synced queries, tracked
keywords, open actions, two knowledge documents) generates a 12-item plan with the offline
writer, the same again when regenerated; no two items share a cluster; items land only on
publish weekdays in the tenant's zone across a DST change; approving makes one job with 12
instances; run to the end (each instance's draft published by a webhook target), every item ends
published with its URL and the plan completed; getPerformance reads forecast and actual from the
Search Console fixture; generate twice with one key answers one plan and charges once."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from contentplatform.config import Settings
from tests.conftest import Run
from tests.seo.plans.support import MONTH, ZONE, Plans, plant_page_days, run_to_the_end, seed
from tests.support.orgs import org_fixture

plans = org_fixture(Plans)

NEW_YORK = ZoneInfo(ZONE)


def shape(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            item["title"],
            item["primary_keyword"],
            item["kind"],
            item["target_date"],
            item["rationale"],
            item["brief"],
            item["forecast"],
            item["opportunity_score"],
        )
        for item in items
    ]


def test_the_fixture_tenant_plans_approves_publishes_and_measures(
    plans: Plans, settings: Settings, run: Run
) -> None:
    planted = seed(plans, settings, run)
    before = plans.balance()
    started = plans.generate(itemCount=12, idempotencyKey="march-plan")
    assert (started["status"], started["generation"]["status"]) == ("generating", "running")
    plan = plans.finished(started["id"])
    assert plan["status"] == "draft", plan["generation"]
    assert plan["generation"] == {
        "status": "succeeded",
        "step": "done",
        "percent": 100,
        "provider": "offline",
        "model": "extractive-v1",
        "error": None,
    }
    items = plan["items"]
    assert len(items) == 12 and plan["item_count"] == 12 and plan["counts"]["proposed"] == 12
    assert set(plan["signals_used"]) == {"search_console", "rank", "actions", "knowledge"}
    # Each item its own cluster; nothing we rank top 3 for.
    assert len({item["cluster"] for item in items}) == 12
    keywords = {item["primary_keyword"] for item in items}
    assert not keywords & {"garden shop", "garden shop near me"}
    # The content mix (70/20/10 by default): 12 items -> 9 new, 2 refresh, 1 geo.
    kinds = [item["kind"] for item in items]
    assert (kinds.count("new"), kinds.count("refresh"), kinds.count("geo")) == (9, 2, 1)
    geo = next(item for item in items if item["kind"] == "geo")
    assert geo["seo_action_id"] == planted["geo_action"]
    refresh = [item for item in items if item["kind"] == "refresh"]
    assert all(item["target_url"] for item in refresh)
    # Publish weekdays (tue, thu by default) of March 2027, best first.
    days = [date.fromisoformat(item["target_date"]) for item in items]
    assert all(day.strftime("%Y-%m") == MONTH and day.weekday() in (1, 3) for day in days)
    assert days == sorted(days)
    scores = [
        item["opportunity_score"]
        for item in sorted(items, key=lambda i: (i["target_date"], i["position"]))
    ]
    assert scores == sorted(scores, reverse=True)
    for item in items:
        assert item["rationale"] and item["brief"]["outline"] and item["brief"]["instructions"]
        assert item["brief"]["word_count_target"] in (1000, 1200, 1500)
        forecast = item["forecast"]
        if forecast["search_volume"] is not None:
            assert forecast["clicks"] == round(forecast["search_volume"] * forecast["ctr"], 2)
    gloves = next(item for item in items if item["primary_keyword"] == "best garden gloves")
    assert (
        gloves["rationale"] == 'Ranks #24 for "best garden gloves" with 700 impressions in 28 days.'
    )
    assert (
        gloves["intent"] == "commercial"
        and gloves["title"] == "Best Garden Gloves: Options Compared"
    )
    knowledge = [item for item in items if item["source"] == "knowledge"]
    assert knowledge and all(item["document_ids"] for item in knowledge)
    # Charged once: 12 items -> 2 credits; the same key again answers the same plan.
    assert plans.balance() == before - 2
    again = plans.generate(itemCount=12, idempotencyKey="march-plan")
    assert again["id"] == plan["id"] and plans.balance() == before - 2

    # Deterministic: regenerated from the same signals, the same plan.
    regenerated = plans.ok("seoPlans.regenerate", {"id": plan["id"], "itemCount": 12})
    assert regenerated["status"] == "generating"
    first_round = items
    items = plans.finished(plan["id"], 2)["items"]
    assert shape(items) == shape(first_round)
    # Regenerated again after review: the accepted item kept, the rejected keyword never back.
    kept, dropped = items[0], items[1]
    for item, status in ((kept, "accepted"), (dropped, "rejected")):
        plans.ok("seoPlans.updateItem", {"id": plan["id"], "itemId": item["id"], "status": status})
    plans.ok("seoPlans.regenerate", {"id": plan["id"], "itemCount": 12, "idempotencyKey": "again"})
    items = plans.finished(plan["id"], 3)["items"]
    assert len(items) == 12 and len({item["cluster"] for item in items}) == 12
    assert [i["id"] for i in items if i["status"] == "accepted"] == [kept["id"]]
    assert dropped["primary_keyword"] not in {item["primary_keyword"] for item in items}
    # The same key again runs nothing new (and charges nothing).
    balance = plans.balance()
    again = plans.ok(
        "seoPlans.regenerate", {"id": plan["id"], "itemCount": 12, "idempotencyKey": "again"}
    )
    assert again["status"] == "draft" and plans.balance() == balance

    # Approve: one job, twelve instances at 09:00 New York time, across the DST change.
    approved = plans.ok("seoPlans.approve", {"id": plan["id"], "includeProposed": True})
    assert approved["instances_created"] == 12
    job = approved["job"]
    assert (job["job_type"], job["topic_source"]) == ("scheduled", "seo_plan")
    assert approved["plan"]["status"] == "approved" and approved["plan"]["job_id"] == job["id"]
    instances = plans.ok("jobs.listInstances", {"id": job["id"]}, role="member")
    assert len(instances) == 12
    hours = set()
    for instance in instances:
        moment = datetime.fromisoformat(instance["scheduled_date"])
        local = moment.astimezone(NEW_YORK)
        assert local.weekday() in (1, 3) and local.hour == 9 and local.minute % 15 == 0
        hours.add(moment.astimezone(UTC).hour)
    assert hours == {13, 14}  # EDT after the 14th, EST before
    detail = plans.plan(plan["id"])
    assert {item["status"] for item in detail["items"]} == {"scheduled"}
    by_instance = {item["job_instance_id"]: item for item in detail["items"]}
    assert set(by_instance) == {instance["id"] for instance in instances}
    assert {i["topic"] for i in instances} == {item["title"] for item in items}
    # settings.planning.auto_track_keywords (on by default): the primary keywords tracked.
    tracked = plans.ok(
        "seo.listTrackedKeywords", {"tag": f"plan:{MONTH}", "limit": 100}, role="member"
    )
    assert {row["keyword"] for row in tracked["data"]} == {
        item["primary_keyword"] for item in items
    }
    action = plans.ok("seo.getAction", {"id": planted["geo_action"]}, role="member")
    assert action["status"] == "in_progress"

    # Run to the end: every item published with its URL; the plan completed; the action done.
    urls = run_to_the_end(run, plans, job["id"])
    done = plans.plan(plan["id"])
    assert done["status"] == "completed" and done["counts"]["published"] == 12
    for item in done["items"]:
        assert item["status"] == "published"
        assert item["published_url"] == urls[item["job_instance_id"]] and item["draft_id"]
    assert (
        plans.ok("seo.getAction", {"id": planted["geo_action"]}, role="member")["status"] == "done"
    )
    calendar = plans.ok(
        "seoPlans.calendar",
        {"startDate": "2027-03-01", "endDate": "2027-03-31", "status": "published"},
        role="member",
    )
    assert len(calendar) == 12 and {e["published_url"] for e in calendar} == set(urls.values())

    # Performance from the Search Console fixture: 3 clicks and 50 impressions a day per URL.
    today = datetime.now(UTC).astimezone(NEW_YORK).date()
    plant_page_days(settings, plans.tenant_id, planted["property"], sorted(urls.values()), today)
    end = today + timedelta(days=34)
    report = plans.ok(
        "seoPlans.getPerformance", {"id": plan["id"], "endDate": end.isoformat()}, role="member"
    )
    assert report["window"] == {"start": "2027-03-01", "end": end.isoformat()}
    totals = report["totals"]
    assert (totals["items"], totals["published"], totals["skipped"]) == (12, 12, 0)
    assert (totals["clicks"], totals["impressions"], totals["avg_position"]) == (
        12 * 35 * 3,
        12 * 35 * 50,
        7.0,
    )
    thirty, sixty, _ = totals["milestones"]
    assert (thirty["days"], thirty["reached"], thirty["clicks"]) == (30, True, 12 * 30 * 3)
    assert (sixty["reached"], sixty["clicks"]) == (False, 12 * 35 * 3)
    forecast = sum(item["forecast"]["clicks"] or 0 for item in done["items"])
    assert totals["forecast_clicks"] == round(forecast, 2)
    row = report["items"][0]
    assert (row["clicks"], row["impressions"], row["ctr"], row["position"]) == (
        105,
        1750,
        0.06,
        7.0,
    )
    assert row["milestones"][0]["clicks"] == 90
