"""seoPlans.* over REST and RPC: plans by hand and their edits, items by hand before and after
approval (mirrored to their pending instance, 409 once it started), archive skipping what did
not start, delete, the calendar, generation's refusals and a failed generation, performance of
a plan with nothing published; each documented error, the roles (a member reads, an editor
writes, an admin deletes), and another organization that sees and touches none of it."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import update

from contentplatform.domains import include_name, metadata
from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import Base, Database, utcnow
from contentplatform.seo import repository as seo_repository
from contentplatform.seo.models import SeoSettings
from contentplatform.seo.plans import durable
from contentplatform.seo.plans import schedule as plan_schedule
from tests.conftest import Run
from tests.seo.plans.support import Plans, zone_of
from tests.support.orgs import org_fixture
from tests.support.problems import problem

plans = org_fixture(Plans)
other = org_fixture(Plans, second=True)

JANUARY = "2027-01"


def test_a_plan_by_hand_is_created_listed_edited_and_deleted(plans: Plans, other: Plans) -> None:
    made = plans.create(JANUARY, goals="More organic clicks.")
    assert (made["name"], made["status"], made["month"]) == (
        "SEO plan January 2027",
        "draft",
        JANUARY,
    )
    assert made["item_count"] == 0 and made["counts"]["proposed"] == 0
    assert made["generation"]["status"] == "none" and made["goals"] == "More organic clicks."
    # One live plan a month: 409 naming it.
    body = problem(plans.request("seoPlans.create", {"month": JANUARY}), 409, "CONFLICT")
    assert made["id"] in body["detail"]
    for month in ("2026-01", "2031-01", "2027-13", "27-01", ""):
        problem(plans.request("seoPlans.create", {"month": month}), 400, "BAD_REQUEST")
    for name in ("", "a\u0000b", "x" * 101, "&nbsp;", "   "):
        problem(
            plans.request("seoPlans.create", {"month": "2027-02", "name": name}), 400, "BAD_REQUEST"
        )
    listed = plans.ok("seoPlans.list", {}, role="member")
    assert [row["id"] for row in listed["data"]] == [made["id"]]
    assert (listed["total"], listed["page"], listed["limit"]) == (1, 1, 12)
    assert plans.ok("seoPlans.list", {"year": 2027}, role="member")["total"] == 1
    assert plans.ok("seoPlans.list", {"year": 2028}, role="member")["total"] == 0
    assert plans.ok("seoPlans.list", {"status": "archived"}, role="member")["total"] == 0
    edited = plans.ok(
        "seoPlans.update", {"id": made["id"], "name": "Winter plan", "notes": "Snow."}
    )
    assert (edited["name"], edited["notes"], edited["goals"]) == (
        "Winter plan",
        "Snow.",
        "More organic clicks.",
    )
    problem(
        plans.request(
            "seoPlans.update", {"id": made["id"], "publisherConnectionId": str(uuid.uuid4())}
        ),
        404,
        "NOT_FOUND",
    )
    # Roles: a member reads, an editor writes, an admin deletes.
    assert plans.plan(made["id"])["items"] == []
    problem(plans.request("seoPlans.create", {"month": "2027-02"}, role="member"), 403, "FORBIDDEN")
    problem(
        plans.request("seoPlans.update", {"id": made["id"], "name": "x"}, role="member"),
        403,
        "FORBIDDEN",
    )
    problem(plans.request("seoPlans.delete", {"id": made["id"]}, role="editor"), 403, "FORBIDDEN")
    # Another organization sees none of it.
    assert other.ok("seoPlans.list", {}, role="member")["total"] == 0
    for operation, fields in (
        ("seoPlans.getById", {}),
        ("seoPlans.update", {"name": "x"}),
        ("seoPlans.delete", {}),
        ("seoPlans.archive", {}),
        ("seoPlans.approve", {}),
        ("seoPlans.regenerate", {}),
        ("seoPlans.getPerformance", {}),
        ("seoPlans.addItem", {"title": "t", "primaryKeyword": "k", "targetDate": "2027-01-05"}),
    ):
        response = other.request(operation, {"id": made["id"], **fields}, role="admin")
        problem(response, 404, "NOT_FOUND")
    assert plans.ok("seoPlans.delete", {"id": made["id"]}, role="admin") == {"success": True}
    problem(plans.request("seoPlans.getById", {"id": made["id"]}, role="member"), 404, "NOT_FOUND")
    # The month is free again.
    assert plans.create(JANUARY)["id"] != made["id"]


def _instances(plans: Plans, job_id: str) -> list[dict[str, Any]]:
    return plans.ok("jobs.listInstances", {"id": job_id}, role="member")  # type: ignore[no-any-return]


def _start(run: Run, instance_id: str) -> None:
    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(JobInstance)
                .where(JobInstance.id == uuid.UUID(instance_id))
                .values(status="running", run_id=uuid.uuid4())
            )

    run(scenario)


def test_items_by_hand_before_and_after_approval(plans: Plans, other: Plans, run: Run) -> None:
    zone_of(plans)
    plan = plans.create(JANUARY)
    first = plans.add(plan["id"], "2027-01-12", secondaryKeywords=["Soil PH", "soil ph"])
    assert (first["status"], first["locked"], first["source"]) == ("accepted", True, "manual")
    assert first["secondary_keywords"] == ["soil ph"] and first["position"] == 0
    second = plans.add(
        plan["id"],
        "2027-01-12",
        title="Mulch refresh",
        primaryKeyword="mulch",
        kind="refresh",
        targetUrl="https://plans.example.com/mulch",
        brief={"outline": ["Why mulch"], "wordCountTarget": 900},
    )
    assert second["position"] == 1 and second["brief"]["outline"] == ["Why mulch"]
    third = plans.add(plan["id"], "2027-01-19", title="Compost tea", primaryKeyword="compost tea")
    for fields in (
        {"targetDate": "2027-02-01"},
        {"kind": "refresh"},
        {"title": "a\u0000b"},
        {"title": ""},
        {"secondaryKeywords": ["k"] * 11},
        {"brief": {"wordCountTarget": 20}},
    ):
        problem(
            plans.request(
                "seoPlans.addItem",
                {"id": plan["id"], "title": "t", "primaryKeyword": "k", "targetDate": "2027-01-05"}
                | fields,
            ),
            400,
            "BAD_REQUEST",
        )
    # Edits before approval: free; accept, reject.
    rejected = plans.ok(
        "seoPlans.updateItem", {"id": plan["id"], "itemId": third["id"], "status": "rejected"}
    )
    assert rejected["status"] == "rejected"
    moved = plans.ok(
        "seoPlans.updateItem",
        {
            "id": plan["id"],
            "itemId": first["id"],
            "title": "Soil tests",
            "targetDate": "2027-01-14",
        },
    )
    assert (moved["title"], moved["target_date"]) == ("Soil tests", "2027-01-14")
    problem(
        plans.request(
            "seoPlans.updateItem",
            {"id": plan["id"], "itemId": first["id"], "targetDate": "2027-03-01"},
        ),
        400,
        "BAD_REQUEST",
    )
    problem(
        plans.request("seoPlans.updateItem", {"id": plan["id"], "itemId": str(uuid.uuid4())}),
        404,
        "NOT_FOUND",
    )
    problem(
        other.request("seoPlans.updateItem", {"id": plan["id"], "itemId": first["id"]}),
        404,
        "NOT_FOUND",
    )
    problem(
        plans.request(
            "seoPlans.updateItem", {"id": plan["id"], "itemId": first["id"]}, role="member"
        ),
        403,
        "FORBIDDEN",
    )
    assert plans.ok("seoPlans.deleteItem", {"id": plan["id"], "itemId": third["id"]}) == {
        "success": True
    }
    problem(
        plans.request("seoPlans.deleteItem", {"id": plan["id"], "itemId": third["id"]}),
        404,
        "NOT_FOUND",
    )
    calendar = plans.ok(
        "seoPlans.calendar", {"startDate": "2027-01-01", "endDate": "2027-01-31"}, role="member"
    )
    assert [entry["item_id"] for entry in calendar] == [second["id"], first["id"]]
    assert calendar[0]["item_status"] == "accepted" and calendar[0]["instance_id"] is None
    assert (
        other.ok(
            "seoPlans.calendar", {"startDate": "2027-01-01", "endDate": "2027-01-31"}, role="member"
        )
        == []
    )
    for window in (
        {"startDate": "2027-01-31", "endDate": "2027-01-01"},
        {"startDate": "2027-01-01", "endDate": "2028-01-03"},
    ):
        problem(plans.request("seoPlans.calendar", window, role="member"), 400, "BAD_REQUEST")

    # Approval: one job, one instance per accepted item.
    problem(plans.request("seoPlans.approve", {"id": plan["id"]}, role="member"), 403, "FORBIDDEN")
    approved = plans.ok("seoPlans.approve", {"id": plan["id"]})
    assert approved["instances_created"] == 2 and approved["job"]["topic_source"] == "seo_plan"
    problem(plans.request("seoPlans.approve", {"id": plan["id"]}), 409, "CONFLICT")
    instances = {i["id"]: i for i in _instances(plans, approved["job"]["id"])}
    detail = plans.plan(plan["id"])
    items = {item["id"]: item for item in detail["items"]}
    assert {item["status"] for item in items.values()} == {"scheduled"}
    # A scheduled item whose instance is pending: the edit is mirrored to it.
    edited = plans.ok(
        "seoPlans.updateItem",
        {"id": plan["id"], "itemId": first["id"], "targetDate": "2027-01-21", "title": "Soil 101"},
    )
    instance = instances[edited["job_instance_id"]]
    after = next(i for i in _instances(plans, approved["job"]["id"]) if i["id"] == instance["id"])
    assert after["topic"] == "Soil 101"
    assert (
        datetime.fromisoformat(after["scheduled_date"]).isoformat().startswith("2027-01-21T14:00")
    )
    problem(
        plans.request(
            "seoPlans.updateItem", {"id": plan["id"], "itemId": first["id"], "status": "rejected"}
        ),
        409,
        "CONFLICT",
    )
    # Once its instance started, the item no longer changes.
    _start(run, items[second["id"]]["job_instance_id"])
    body = problem(
        plans.request(
            "seoPlans.updateItem", {"id": plan["id"], "itemId": second["id"], "title": "x"}
        ),
        409,
        "CONFLICT",
    )
    assert (
        "in_progress" in body["detail"] or "queued" in body["detail"] or "running" in body["detail"]
    )
    problem(
        plans.request("seoPlans.deleteItem", {"id": plan["id"], "itemId": second["id"]}),
        409,
        "CONFLICT",
    )
    # An item added to an approved plan is scheduled at once.
    late = plans.add(plan["id"], "2027-01-26", title="Late idea", primaryKeyword="late idea")
    assert late["status"] == "scheduled" and late["job_instance_id"]
    # An approved plan is archived before it is deleted; archiving skips what did not start.
    problem(plans.request("seoPlans.delete", {"id": plan["id"]}, role="admin"), 409, "CONFLICT")
    archived = plans.ok("seoPlans.archive", {"id": plan["id"], "reason": "Season over."})
    assert archived["status"] == "archived" and archived["archived_at"]
    states = {i["id"]: i["status"] for i in _instances(plans, approved["job"]["id"])}
    assert states[items[second["id"]]["job_instance_id"]] == "running"
    assert states[edited["job_instance_id"]] == "skipped"
    assert states[late["job_instance_id"]] == "skipped"
    final = {item["id"]: item["status"] for item in plans.plan(plan["id"])["items"]}
    assert final == {first["id"]: "skipped", second["id"]: "in_progress", late["id"]: "skipped"}
    problem(plans.request("seoPlans.archive", {"id": plan["id"]}), 409, "CONFLICT")
    problem(plans.request("seoPlans.update", {"id": plan["id"], "name": "x"}), 409, "CONFLICT")
    problem(
        plans.request(
            "seoPlans.addItem",
            {"id": plan["id"], "title": "t", "primaryKeyword": "k", "targetDate": "2027-01-05"},
        ),
        409,
        "CONFLICT",
    )
    assert plans.ok("seoPlans.list", {"status": "archived"}, role="member")["total"] == 1
    assert plans.ok("seoPlans.list", {}, role="member")["total"] == 0
    assert plans.ok("seoPlans.delete", {"id": plan["id"]}, role="admin") == {"success": True}


def test_approving_nothing_and_a_plan_without_publications(plans: Plans) -> None:
    plan = plans.create(JANUARY)
    problem(plans.request("seoPlans.approve", {"id": plan["id"]}), 409, "CONFLICT")
    item = plans.add(plan["id"], "2027-01-05")
    plans.ok("seoPlans.updateItem", {"id": plan["id"], "itemId": item["id"], "status": "proposed"})
    problem(plans.request("seoPlans.approve", {"id": plan["id"]}), 409, "CONFLICT")
    problem(
        plans.request(
            "seoPlans.approve", {"id": plan["id"], "mode": "existing_job", "includeProposed": True}
        ),
        400,
        "BAD_REQUEST",
    )
    problem(
        plans.request(
            "seoPlans.approve",
            {
                "id": plan["id"],
                "mode": "existing_job",
                "jobId": str(uuid.uuid4()),
                "includeProposed": True,
            },
        ),
        404,
        "NOT_FOUND",
    )
    job = plans.ok(
        "jobs.create", {"name": "Garden notes", "jobType": "one_off", "topics": ["Garden notes"]}
    )
    approved = plans.ok(
        "seoPlans.approve",
        {"id": plan["id"], "mode": "existing_job", "jobId": job["id"], "includeProposed": True},
    )
    assert approved["job"]["id"] == job["id"] and approved["instances_created"] == 1
    [instance] = plans.ok("jobs.listInstances", {"id": job["id"]}, role="member")
    assert instance["topic"] == item["title"] and instance["keywords"] == [item["primary_keyword"]]
    report = plans.ok(
        "seoPlans.getPerformance", {"id": plan["id"], "endDate": "2027-02-01"}, role="member"
    )
    assert report["window"] == {"start": "2027-01-01", "end": "2027-02-01"}
    assert report["totals"]["items"] == 1 and report["totals"]["clicks"] == 0
    assert report["items"][0]["published_url"] is None and report["items"][0]["milestones"] == []
    assert report["items"][0]["status"] == "scheduled"


def test_generation_refusals_and_a_failed_generation(plans: Plans, other: Plans) -> None:
    zone_of(plans)
    taken = plans.create(JANUARY)
    body = problem(plans.request("seoPlans.generate", {"month": JANUARY}), 409, "CONFLICT")
    assert taken["id"] in body["detail"]
    problem(
        plans.request("seoPlans.generate", {"month": "2027-02"}, role="member"), 403, "FORBIDDEN"
    )
    for fields in (
        {"itemCount": 0},
        {"itemCount": 101},
        {"contentMix": {"new": 50, "refresh": 20, "geo": 10}},
        {"signals": ["nonsense"]},
        {"publishWeekdays": []},
        {"blackoutDates": ["2027-03-01"]},
        {"idempotencyKey": "has space"},
        {"focusTopics": ["x"] * 21},
    ):
        problem(
            plans.request("seoPlans.generate", {"month": "2027-02", **fields}), 400, "BAD_REQUEST"
        )
    problem(
        plans.request(
            "seoPlans.generate", {"month": "2027-02", "documentIds": [str(uuid.uuid4())]}
        ),
        404,
        "NOT_FOUND",
    )
    # Every publish day of the month blacked out: the generation fails, and charges nothing.
    before = plans.balance()
    mondays = ["2027-02-01", "2027-02-08", "2027-02-15", "2027-02-22"]
    started = plans.generate(
        "2027-02",
        publishWeekdays=["mon"],
        blackoutDates=mondays,
        signals=["knowledge"],
        itemCount=3,
        idempotencyKey="february",
    )
    ended = plans.finished(started["id"])
    assert (ended["status"], ended["generation"]["status"]) == ("failed", "failed")
    assert "No publish weekday (mon) of 2027-02" in ended["generation"]["error"]
    assert ended["items"] == [] and plans.balance() == before
    problem(
        plans.request("seoPlans.regenerate", {"id": ended["id"]}, role="member"), 403, "FORBIDDEN"
    )
    problem(other.request("seoPlans.regenerate", {"id": ended["id"]}), 404, "NOT_FOUND")
    # The key answers its plan; once that plan is deleted, the spent key is refused.
    assert plans.generate("2027-02", idempotencyKey="february")["id"] == ended["id"]
    assert plans.ok("seoPlans.delete", {"id": ended["id"]}, role="admin") == {"success": True}
    body = problem(
        plans.request("seoPlans.generate", {"month": "2027-02", "idempotencyKey": "february"}),
        409,
        "CONFLICT",
    )
    assert "idempotencyKey" in body["detail"]
    approved_like = plans.add(taken["id"], "2027-01-05")
    plans.ok("seoPlans.approve", {"id": taken["id"]})
    assert approved_like["status"] == "accepted"
    problem(plans.request("seoPlans.regenerate", {"id": taken["id"]}), 409, "CONFLICT")


def test_the_models_match_the_migration(run: Run) -> None:
    metadata()

    def diffs(connection: Any) -> list[Any]:
        options = {
            "compare_type": True,
            "target_metadata": Base.metadata,
            "include_name": include_name,
        }
        context = MigrationContext.configure(connection, opts=options)
        return [d for d in compare_metadata(context, Base.metadata) if "seo_plan" in repr(d)]

    async def scenario(db: Database) -> None:
        async with db.engine.connect() as connection:
            assert await connection.run_sync(diffs) == []

    run(scenario)


def test_a_generation_whose_workflow_was_lost_is_resumed(
    plans: Plans, monkeypatch: pytest.MonkeyPatch
) -> None:
    zone_of(plans)
    before = plans.balance()
    # Accepted as seoPlans.generate accepts it, but its workflow never queued (a kill -9 took it).
    monkeypatch.setattr(durable, "enqueue_after_commit", lambda *args: None)
    started = plans.generate("2027-02", itemCount=3, signals=["search_console"])
    monkeypatch.undo()
    assert started["status"] == "generating"
    # The reconciler finds the plan generating without a workflow, and restarts it.
    ended = plans.finished(started["id"])
    assert ended["status"] == "draft" and ended["generation"]["percent"] == 100
    assert plans.balance() == before  # nothing written (no Search Console data): released


def test_next_months_plan_is_generated_on_the_chosen_day_once(plans: Plans, run: Run) -> None:
    """settings.planning.auto_generate_day is acted on: the clock is set to 07:00 of that day
    (this month's if still ahead, else next month's), a due tick generates the plan of the month
    after, once (a second tick answers the same plan), and null stops the clock."""

    def clock() -> datetime | None:
        async def scenario(db: Database) -> datetime | None:
            async with db.unit_of_work() as session:
                row = await seo_repository.stored_settings(session, plans.tenant_id)
                return None if row is None else row.next_plan_at

        found: datetime | None = run(scenario)
        return found

    def tick_at(due: datetime) -> dict[str, int]:
        async def scenario(db: Database) -> dict[str, int]:
            async with db.unit_of_work() as session:
                await session.execute(
                    update(SeoSettings)
                    .where(SeoSettings.tenant_id == plans.tenant_id)
                    .values(next_plan_at=due)
                )
            return await plan_schedule.tick(db, utcnow())

        found: dict[str, int] = run(scenario)
        return found

    plans.ok("seo.updateSettings", {"planning": {"autoGenerateDay": 5}}, role="admin")
    set_to = clock()
    assert set_to is not None and (set_to.day, set_to.hour, set_to.minute) == (5, 7, 0)
    assert utcnow() < set_to <= utcnow() + timedelta(days=31)

    due = utcnow() - timedelta(minutes=1)
    assert tick_at(due)["started"] == 1
    month = plan_schedule.month_after(due, "UTC")
    (made,) = [
        p for p in plans.ok("seoPlans.list", {}, role="member")["data"] if p["month"] == month
    ]
    assert made["created_by"] == plan_schedule.SCHEDULER
    assert plans.finished(made["id"])["status"] in ("draft", "failed")
    moved = clock()
    assert moved is not None and moved > utcnow() and moved.day == 5
    # Due again in the same month: the month's plan is answered, none is added.
    assert tick_at(due)["started"] == 0
    assert [p["id"] for p in plans.ok("seoPlans.list", {}, role="member")["data"]] == [made["id"]]
    plans.ok("seo.updateSettings", {"planning": {"autoGenerateDay": None}}, role="admin")
    assert clock() is None
