"""The 18 Jobs operations end to end over real HTTP (REST and RPC): the record and its creation,
what each kind of schedule needs (cron validation included), every bound of operations.json,
update, clone, pause and resume, delete, list, page and stats, the calendar, the organization's
time zone, trigger (402 and 409 too), run history and analytics after a real run, bulk actions
with foreign and missing ids, roles, and a second tenant that sees none of it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.documents.support import hold_all_but
from tests.jobs.support import Planner
from tests.support.bounds import MALFORMED_IDS, PAGE_BOUNDS
from tests.support.openapi import operation_ids
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

# The Job record: the reference's fields (snake_case) and ours besides.
JOB_FIELDS = {
    *("id", "tenant_id", "name", "job_type", "status", "cron_expression", "scheduled_dates"),
    *("topics", "topic_source", "keywords", "content_instructions", "document_ids"),
    *("auto_publish", "auto_publish_threshold", "publisher_connection_id", "seo_action_id"),
    *("workflow_id", "workflow_version"),
    *("next_run_at", "last_run_at", "last_error", "created_at", "updated_at"),
}
# What a job says (copied by clone), as opposed to its state and history.
SETTINGS = (
    *("job_type", "cron_expression", "scheduled_dates", "topics", "topic_source", "keywords"),
    *("content_instructions", "document_ids", "auto_publish", "auto_publish_threshold"),
    *("publisher_connection_id", "seo_action_id", "workflow_id", "workflow_version"),
)
INSTANCE_FIELDS = {
    *("id", "tenant_id", "job_id", "scheduled_date", "day_mode", "keywords"),
    *("content_instructions", "images", "document_ids", "status", "step", "percent", "topic"),
    *("draft_id", "run_id", "error", "attempts", "created_at", "updated_at", "started_at"),
    "finished_at",
}
CALENDAR_FIELDS = {"job_id", "job_name", "date", "instance_id", "status", "draft_id"}
STATUSES = ("active", "paused", "processing", "error", "completed")
EMPTY_STATS = {"total": 0, **dict.fromkeys(STATUSES, 0)}
NO_FIGURES = {
    "totalDrafts": 0,
    "approvedDrafts": 0,
    "publishedDrafts": 0,
    "avgSeoScore": 0.0,
    "publishSuccessRate": 0.0,
}
MISSING = "<missing>"
DAILY = {"jobType": "recurring", "cronExpression": "0 9 * * *"}
PAST = "2020-03-01T09:00:00Z"
FUTURE = datetime(2030, 1, 1, 9, tzinfo=UTC)


def at(value: str) -> datetime:
    return datetime.fromisoformat(value)


def iso(moment: datetime) -> str:
    return moment.isoformat()


def future_days(count: int, start: datetime = FUTURE) -> list[str]:
    return [iso(start + timedelta(days=i)) for i in range(count)]


def bad_fields(response) -> set[str]:
    """The input fields a 400 names (`topics.3` is `topics`)."""
    body = problem(response, 400, "BAD_REQUEST")
    return {error["path"].split(".")[0] for error in body["errors"]}


def next_wall_time(next_run_at: str, zone: str, hour: int, minute: int = 0) -> None:
    """next_run_at is the next hour:minute on the zone's wall clock, within a day from now."""
    moment = at(next_run_at)
    now = datetime.now(UTC)
    assert now < moment <= now + timedelta(days=1), next_run_at
    local = moment.astimezone(ZoneInfo(zone))
    assert (local.hour, local.minute, local.second) == (hour, minute, 0), local


def get(planner: Planner, job_id: str) -> dict[str, Any]:
    return planner.ok("jobs.getById", {"id": job_id}, role="member")


def window(start: datetime, days: float) -> dict[str, str]:
    return {"startDate": iso(start), "endDate": iso(start + timedelta(days=days))}


def calendar(planner: Planner, start: datetime, days: float) -> list[dict[str, Any]]:
    return planner.ok("jobs.calendar", window(start, days), role="member")


def instances(planner: Planner, job_id: str) -> list[dict[str, Any]]:
    return planner.ok("jobs.listInstances", {"id": job_id}, role="member")


def plan_instance(planner: Planner, job_id: str, when: datetime) -> dict[str, Any]:
    return planner.ok(
        "jobInstances.create", {"jobId": job_id, "scheduledDate": iso(when)}, role="editor"
    )


def bulk(planner: Planner, action: str, ids: list[str], role: str = "admin") -> dict[str, Any]:
    return planner.ok("jobs.bulk", {"action": action, "jobIds": ids}, role=role)


def results(*rows: tuple[str, str | None]) -> list[dict[str, Any]]:
    """Bulk results from (id, error code or None)."""
    return [{"id": job_id, "ok": error is None, "error": error} for job_id, error in rows]


def create_input(change: dict[str, Any]) -> dict[str, Any]:
    """A valid jobs.create input with `change` applied (MISSING removes a field)."""
    data = {"name": "Garden", "topics": ["Mulch"], **change}
    return {key: value for key, value in data.items() if value is not MISSING}


def stats(planner: Planner) -> dict[str, int]:
    return planner.ok("jobs.stats", role="member")


# --- create and the record --------------------------------------------------------------------


def test_create_returns_the_job_with_every_field_and_defaults(planner):
    job = planner.job(name="Garden notes", topics=["Watering schedules"])

    assert set(job) == JOB_FIELDS
    assert job["tenant_id"] == str(planner.tenant_id)
    assert (job["name"], job["job_type"], job["status"]) == ("Garden notes", "one_off", "active")
    assert (job["topics"], job["topic_source"]) == (["Watering schedules"], "manual")
    assert job["cron_expression"] is None and job["scheduled_dates"] == []
    assert job["keywords"] == [] and job["document_ids"] == []
    assert job["content_instructions"] is None
    assert job["auto_publish"] is False and job["auto_publish_threshold"] is None
    assert job["publisher_connection_id"] is None and job["seo_action_id"] is None
    # A one-off job without a date runs only when triggered.
    assert job["next_run_at"] is None and job["last_run_at"] is None
    assert job["last_error"] is None
    assert abs(at(job["updated_at"]) - at(job["created_at"])) < timedelta(seconds=1)
    assert get(planner, job["id"]) == job


def test_create_keeps_everything_it_is_given(planner):
    handbook = planner.handbook()
    connection, action = planner.connection(), str(uuid.uuid4())
    job = planner.job(
        name="  Weekly irrigation tips  ",
        jobType="recurring",
        cronExpression=" 0   9 * *  MON-FRI ",
        topics=["  Watering schedules ", "Soil moisture sensors"],
        keywords=[" drip irrigation", "smart controller"],
        contentInstructions="Friendly, practical, no jargon.",
        documentIds=[handbook["id"], handbook["id"]],
        autoPublish=True,
        autoPublishThreshold=80,
        publisherConnectionId=connection,
        seoActionId=action,
        status="paused",
    )

    assert job["name"] == "Weekly irrigation tips"
    assert (job["job_type"], job["status"]) == ("recurring", "paused")
    assert job["cron_expression"] == "0 9 * * MON-FRI"  # whitespace collapsed
    assert job["topics"] == ["Watering schedules", "Soil moisture sensors"]
    assert job["keywords"] == ["drip irrigation", "smart controller"]
    assert job["content_instructions"] == "Friendly, practical, no jargon."
    assert job["document_ids"] == [handbook["id"]]  # each once
    assert (job["auto_publish"], job["auto_publish_threshold"]) == (True, 80)
    assert (job["publisher_connection_id"], job["seo_action_id"]) == (connection, action)
    assert job["next_run_at"] is None  # paused: nothing is planned
    assert get(planner, job["id"]) == job


def test_each_kind_of_schedule_plans_its_next_run(planner):
    recurring = planner.job(name="Daily", **DAILY)
    next_wall_time(recurring["next_run_at"], "UTC", 9)
    assert recurring["scheduled_dates"] == []

    later, sooner = FUTURE + timedelta(days=3), FUTURE
    scheduled = planner.job(
        name="Dates",
        jobType="scheduled",
        # Out of order, repeated, one past, one with another offset: stored in UTC, sorted, once.
        scheduledDates=[iso(later), PAST, iso(sooner), "2030-01-01T10:00:00+01:00"],
    )
    assert [at(d) for d in scheduled["scheduled_dates"]] == [at(PAST), sooner, later]
    assert at(scheduled["next_run_at"]) == sooner
    assert scheduled["status"] == "active"

    once = planner.job(name="Once", scheduledDates=[iso(later)])
    assert at(once["next_run_at"]) == later

    # A date list with nothing left is complete from the start.
    done = planner.job(name="Done", jobType="scheduled", scheduledDates=[PAST])
    assert (done["status"], done["next_run_at"]) == ("completed", None)
    # So is a one-off whose date has passed; one without a date waits to be triggered.
    spent = planner.job(name="Spent", scheduledDates=[PAST])
    assert (spent["status"], spent["next_run_at"]) == ("completed", None)
    assert (planner.job(name="By hand")["status"], planner.job()["next_run_at"]) == ("active", None)


def test_knowledge_jobs_need_no_topics(planner):
    job = planner.ok(
        "jobs.create", {"name": "From the handbook", "topicSource": "knowledge"}, role="editor"
    )
    assert (job["topic_source"], job["topics"]) == ("knowledge", [])


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("every morning", "needs 5 fields"),
        ("0 9 * *", "needs 5 fields"),
        ("0 9 * * * 2030", "needs 5 fields"),
        ("61 * * * *", "Minute 61 is out of range 0-59"),
        ("0 24 * * *", "Hour 24 is out of range 0-23"),
        ("0 9 32 * *", "Day-of-month 32 is out of range 1-31"),
        ("0 9 * 13 *", "Month 13 is out of range 1-12"),
        ("0 9 * * 8", "Day-of-week 8 is out of range 0-7"),
        ("*/0 * * * *", "step"),
        ("0 17-9 * * *", "runs backwards"),
        ("@daily", "'0 0 * * *'"),
        ("0 9 30 2 *", "never runs"),
        ("", "empty"),
        ("   ", "empty"),
    ],
)
def test_an_invalid_cron_is_400_naming_cron_expression_and_why(planner, expression, reason):
    data = create_input({**DAILY, "cronExpression": expression})
    body = problem(planner.request("jobs.create", data, role="editor"), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["cronExpression"]
    assert reason in body["detail"], body
    assert planner.ok("jobs.list", role="member") == []


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"jobType": "recurring"}, "cronExpression"),
        ({"jobType": "recurring", "cronExpression": None}, "cronExpression"),
        ({**DAILY, "scheduledDates": [PAST]}, "scheduledDates"),
        ({"jobType": "scheduled"}, "scheduledDates"),
        ({"jobType": "scheduled", "scheduledDates": []}, "scheduledDates"),
        ({"jobType": "scheduled", "scheduledDates": None}, "scheduledDates"),
        ({"jobType": "scheduled", "cronExpression": "0 9 * * *"}, "cronExpression"),
        ({"cronExpression": "0 9 * * *"}, "cronExpression"),
        ({"scheduledDates": future_days(2)}, "scheduledDates"),
        ({"topics": MISSING}, "topics"),
        ({"topics": []}, "topics"),
        ({"topics": ["   "]}, "topics"),
        ({"topicSource": "seo_plan"}, "topicSource"),
    ],
)
def test_a_schedule_must_say_what_its_kind_needs(planner, change, field):
    data = create_input(change)
    body = problem(planner.request("jobs.create", data, role="editor"), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == [field], body
    assert planner.ok("jobs.list", role="member") == []


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": MISSING}, "name"),
        ({"name": None}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "n" * 101}, "name"),
        ({"jobType": "weekly"}, "jobType"),
        ({"status": "completed"}, "status"),
        ({"status": "processing"}, "status"),
        ({"cronExpression": "0 9 * * * " + "*" * 120, "jobType": "recurring"}, "cronExpression"),
        ({"scheduledDates": future_days(367), "jobType": "scheduled"}, "scheduledDates"),
        ({"scheduledDates": ["next tuesday"], "jobType": "scheduled"}, "scheduledDates"),
        ({"topics": [f"Topic {i}" for i in range(101)]}, "topics"),
        ({"topics": ["Mulch", ""]}, "topics"),
        ({"topics": ["Mulch", "t" * 501]}, "topics"),
        ({"topics": "Mulch"}, "topics"),
        ({"topicSource": "rss"}, "topicSource"),
        ({"keywords": [f"k{i}" for i in range(21)]}, "keywords"),
        ({"keywords": ["mulch", "k" * 101]}, "keywords"),
        ({"contentInstructions": "c" * 5001}, "contentInstructions"),
        ({"documentIds": [str(uuid.uuid4()) for _ in range(51)]}, "documentIds"),
        ({"documentIds": ["not-a-uuid"]}, "documentIds"),
        ({"autoPublish": "sometimes"}, "autoPublish"),
        ({"autoPublishThreshold": -1}, "autoPublishThreshold"),
        ({"autoPublishThreshold": 101}, "autoPublishThreshold"),
        ({"autoPublishThreshold": 50.5}, "autoPublishThreshold"),
        ({"publisherConnectionId": "wordpress"}, "publisherConnectionId"),
        ({"seoActionId": "123"}, "seoActionId"),
        ({"unknownField": 1}, "unknownField"),
    ],
)
def test_create_refuses_out_of_bounds_input(planner, change, field):
    data = create_input(change)
    assert field in bad_fields(planner.request("jobs.create", data, role="editor"))
    assert planner.ok("jobs.list", role="member") == []


@pytest.mark.own_org
def test_create_accepts_its_bounds(planner):
    widest = planner.job(
        name="n" * 100,
        topics=[f"{i:03d} " + "t" * 496 for i in range(100)],
        keywords=[f"{i:02d}" + "k" * 98 for i in range(20)],
        contentInstructions="c" * 5000,
        autoPublishThreshold=100,
    )
    assert len(widest["name"]) == 100
    assert len(widest["topics"]) == 100 and {len(t) for t in widest["topics"]} == {500}
    assert len(widest["keywords"]) == 20 and {len(k) for k in widest["keywords"]} == {100}
    assert len(widest["content_instructions"]) == 5000
    assert widest["auto_publish_threshold"] == 100

    dates = future_days(366)
    year = planner.job(name="N", jobType="scheduled", scheduledDates=dates, autoPublishThreshold=0)
    assert [at(d) for d in year["scheduled_dates"]] == [at(d) for d in dates]
    assert at(year["next_run_at"]) == FUTURE
    assert (year["name"], year["auto_publish_threshold"]) == ("N", 0)
    assert len(calendar(planner, FUTURE, 366)) == 366


@pytest.mark.own_org
def test_create_refuses_documents_that_are_not_the_organizations(planner, other):
    theirs = other.handbook()
    for document_id in (str(uuid.uuid4()), theirs["id"]):
        response = planner.request(
            "jobs.create", {"name": "G", "topics": ["Mulch"], "documentIds": [document_id]}
        )
        body = problem(response, 404, "NOT_FOUND")
        assert document_id in body["detail"]
    assert planner.ok("jobs.list", role="member") == []


# --- update -----------------------------------------------------------------------------------


def test_update_changes_what_is_given_and_replans_a_changed_schedule(planner):
    job = planner.job(
        name="Daily tips", keywords=["drip"], contentInstructions="Friendly.", **DAILY
    )

    updated = planner.ok(
        "jobs.update",
        {
            "id": job["id"],
            "name": "Evening tips",
            "cronExpression": "30 18 * * *",
            "topics": ["Mulching", "Compost"],
        },
        role="editor",
    )

    assert (updated["name"], updated["cron_expression"]) == ("Evening tips", "30 18 * * *")
    assert updated["topics"] == ["Mulching", "Compost"]
    next_wall_time(updated["next_run_at"], "UTC", 18, 30)
    assert at(updated["updated_at"]) > at(job["updated_at"])
    unchanged = {"id", "tenant_id", "job_type", "status", "keywords", "content_instructions"}
    assert {k: updated[k] for k in unchanged} == {k: job[k] for k in unchanged}
    assert updated["created_at"] == job["created_at"]
    assert get(planner, job["id"]) == updated

    # Changing nothing of the schedule keeps the next run; null clears an optional field.
    renamed = planner.ok(
        "jobs.update",
        {"id": job["id"], "name": "Tips", "contentInstructions": None, "keywords": []},
        role="editor",
    )
    assert renamed["next_run_at"] == updated["next_run_at"]
    assert (renamed["content_instructions"], renamed["keywords"]) == (None, [])


def test_update_with_new_dates_reopens_a_completed_job(planner):
    done = planner.job(name="Done", jobType="scheduled", scheduledDates=[PAST])
    assert done["status"] == "completed"
    reopened = planner.ok(
        "jobs.update", {"id": done["id"], "scheduledDates": [iso(FUTURE)]}, role="editor"
    )
    assert (reopened["status"], at(reopened["next_run_at"])) == ("active", FUTURE)


def test_update_of_a_paused_jobs_schedule_plans_nothing(planner):
    job = planner.job(name="Daily", status="paused", **DAILY)
    updated = planner.ok(
        "jobs.update", {"id": job["id"], "cronExpression": "0 12 * * *"}, role="editor"
    )
    assert (updated["status"], updated["next_run_at"]) == ("paused", None)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": None, "cronExpression": "61 * * * *"}, "cronExpression"),
        ({"cronExpression": None}, "cronExpression"),
        ({"cronExpression": ""}, "cronExpression"),
        ({"cronExpression": "x" * 121}, "cronExpression"),
        ({"scheduledDates": [PAST]}, "scheduledDates"),
        ({"scheduledDates": future_days(367)}, "scheduledDates"),
        ({"name": ""}, "name"),
        ({"name": "  "}, "name"),
        ({"name": "n" * 101}, "name"),
        ({"topics": []}, "topics"),
        ({"topics": [f"Topic {i}" for i in range(101)]}, "topics"),
        ({"topics": ["t" * 501]}, "topics"),
        ({"topicSource": "seo_plan"}, "topicSource"),
        ({"keywords": ["k" * 101]}, "keywords"),
        ({"contentInstructions": "c" * 5001}, "contentInstructions"),
        ({"autoPublishThreshold": -1}, "autoPublishThreshold"),
        ({"autoPublishThreshold": 101}, "autoPublishThreshold"),
        ({"jobType": "one_off"}, "jobType"),  # a job keeps its kind
        ({"status": "paused"}, "status"),  # pause and resume do that
    ],
)
def test_update_refuses_out_of_bounds_input_and_changes_nothing(planner, change, field):
    job = planner.job(name="Daily", **DAILY)
    response = planner.request("jobs.update", {"id": job["id"], **change}, role="editor")
    assert field in bad_fields(response)
    assert get(planner, job["id"]) == job


def test_update_refuses_documents_that_are_not_the_organizations(planner):
    job = planner.job()
    missing = str(uuid.uuid4())
    response = planner.request(
        "jobs.update", {"id": job["id"], "documentIds": [missing]}, role="editor"
    )
    assert missing in problem(response, 404, "NOT_FOUND")["detail"]
    assert get(planner, job["id"]) == job


def test_update_accepts_its_bounds(planner):
    job = planner.job(name="Dates", jobType="scheduled", scheduledDates=[iso(FUTURE)])
    updated = planner.ok(
        "jobs.update",
        {
            "id": job["id"],
            "name": "n" * 100,
            "scheduledDates": future_days(366),
            "topics": ["t" * 500] * 100,
            "contentInstructions": "c" * 5000,
            "autoPublishThreshold": 0,
        },
        role="editor",
    )
    assert len(updated["name"]) == 100 and len(updated["scheduled_dates"]) == 366
    assert len(updated["topics"]) == 100 and len(updated["content_instructions"]) == 5000
    assert updated["auto_publish_threshold"] == 0


# --- clone ------------------------------------------------------------------------------------


@pytest.mark.own_org
def test_clone_is_a_paused_copy_named_copy(planner):
    source = planner.job(
        name="Daily tips",
        topics=["Mulching", "Compost"],
        keywords=["garden"],
        contentInstructions="Short.",
        autoPublish=True,
        autoPublishThreshold=75,
        publisherConnectionId=planner.connection(),
        seoActionId=str(uuid.uuid4()),
        **DAILY,
    )

    copy = planner.ok("jobs.clone", {"id": source["id"]}, role="editor")

    assert set(copy) == JOB_FIELDS
    assert copy["id"] != source["id"]
    assert copy["name"] == "Daily tips (copy)"
    assert (copy["status"], copy["next_run_at"], copy["last_run_at"]) == ("paused", None, None)
    assert {k: copy[k] for k in SETTINGS} == {k: source[k] for k in SETTINGS}
    assert get(planner, copy["id"]) == copy
    assert get(planner, source["id"]) == source
    assert instances(planner, copy["id"]) == []

    named = planner.ok("jobs.clone", {"id": source["id"], "name": "Spring series"}, role="editor")
    assert (named["name"], named["status"]) == ("Spring series", "paused")
    assert [j["id"] for j in planner.ok("jobs.list", role="member")] == [
        named["id"],
        copy["id"],
        source["id"],
    ]
    # Resumed, the copy runs on the source's schedule.
    resumed = planner.ok("jobs.resume", {"id": copy["id"]}, role="admin")
    assert (resumed["status"], resumed["next_run_at"]) == ("active", source["next_run_at"])


def test_the_default_clone_name_fits_100_characters(planner):
    source = planner.job(name="n" * 100)
    copy = planner.ok("jobs.clone", {"id": source["id"]}, role="editor")
    assert copy["name"] == "n" * 93 + " (copy)"
    longest = planner.ok("jobs.clone", {"id": source["id"], "name": "c" * 100}, role="editor")
    assert longest["name"] == "c" * 100


@pytest.mark.own_org
@pytest.mark.parametrize("name", ["", "   ", "c" * 101, 42])
def test_clone_refuses_a_bad_name(planner, name):
    source = planner.job()
    response = planner.request("jobs.clone", {"id": source["id"], "name": name}, role="editor")
    assert bad_fields(response) == {"name"}
    assert [j["id"] for j in planner.ok("jobs.list", role="member")] == [source["id"]]


# --- pause and resume -------------------------------------------------------------------------


def test_pause_stops_planning_and_resume_plans_again_from_now(planner):
    job = planner.job(name="Daily", **DAILY)
    other_job = planner.job(name="Untouched", **DAILY)

    paused = planner.ok("jobs.pause", {"id": job["id"]}, role="admin")
    assert (paused["status"], paused["next_run_at"]) == ("paused", None)
    assert {k: paused[k] for k in SETTINGS} == {k: job[k] for k in SETTINGS}
    assert get(planner, job["id"]) == paused
    body = problem(planner.request("jobs.pause", {"id": job["id"]}, role="admin"), 409, "CONFLICT")
    assert "paused" in body["detail"]

    resumed = planner.ok("jobs.resume", {"id": job["id"]}, role="admin")
    assert resumed["status"] == "active" and resumed["last_error"] is None
    next_wall_time(resumed["next_run_at"], "UTC", 9)
    assert get(planner, job["id"]) == resumed
    body = problem(planner.request("jobs.resume", {"id": job["id"]}, role="admin"), 409, "CONFLICT")
    assert "active" in body["detail"]
    assert get(planner, other_job["id"]) == other_job


def test_resume_of_a_date_list_plans_its_next_date(planner):
    job = planner.job(
        name="Dates", jobType="scheduled", scheduledDates=[PAST, iso(FUTURE)], status="paused"
    )
    assert job["next_run_at"] is None
    resumed = planner.ok("jobs.resume", {"id": job["id"]}, role="admin")
    assert (resumed["status"], at(resumed["next_run_at"])) == ("active", FUTURE)
    # A date list with nothing left is complete when resumed.
    spent = planner.job(name="Spent", jobType="scheduled", scheduledDates=[PAST], status="paused")
    resumed = planner.ok("jobs.resume", {"id": spent["id"]}, role="admin")
    assert (resumed["status"], resumed["next_run_at"]) == ("completed", None)


def test_a_completed_job_can_be_neither_paused_nor_resumed(planner):
    done = planner.job(name="Done", jobType="scheduled", scheduledDates=[PAST])
    for operation in ("jobs.pause", "jobs.resume"):
        body = problem(
            planner.request(operation, {"id": done["id"]}, role="admin"), 409, "CONFLICT"
        )
        assert "completed" in body["detail"]
    assert get(planner, done["id"]) == done


# --- delete -----------------------------------------------------------------------------------


@pytest.mark.own_org
def test_delete_answers_success_and_the_job_is_gone_everywhere(planner):
    job = planner.job(name="Daily", **DAILY)
    kept = planner.job(name="Kept")
    plan_instance(planner, job["id"], at(job["next_run_at"]) + timedelta(hours=1))
    start = at(job["next_run_at"]) - timedelta(hours=1)
    assert len(calendar(planner, start, 3)) == 4  # three planned, one instance

    assert planner.ok("jobs.delete", {"id": job["id"]}, role="admin") == {"success": True}

    for operation, extra in ID_OPERATIONS.items():
        response = planner.request(operation, {"id": job["id"], **extra})
        problem(response, 404, "NOT_FOUND")
    assert planner.ok("jobs.list", role="member") == [kept]
    assert planner.ok("jobs.page", role="member")["total"] == 1
    assert stats(planner) == {**EMPTY_STATS, "total": 1, "active": 1}
    assert calendar(planner, start, 3) == []
    assert bulk(planner, "pause", [job["id"]]) == {
        "success": False,
        "affected": 0,
        "results": results((job["id"], "NOT_FOUND")),
    }


# --- list, page and stats ---------------------------------------------------------------------


@pytest.mark.own_org
def test_list_is_newest_first_and_filtered_by_status(planner):
    assert planner.ok("jobs.list", role="member") == []
    first = planner.job(name="First")
    second = planner.job(name="Second", status="paused")
    third = planner.job(name="Third")

    assert planner.ok("jobs.list", role="member") == [third, second, first]
    assert planner.ok("jobs.list", {"status": "active"}, role="member") == [third, first]
    assert planner.ok("jobs.list", {"status": "paused"}, role="member") == [second]
    assert planner.ok("jobs.list", {"status": "error"}, role="member") == []
    assert planner.ok("jobs.list", {"limit": 1}, role="member") == [third]
    assert planner.ok("jobs.list", {"limit": 500}, role="member") == [third, second, first]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": -1}, "limit"),
        ({"limit": 501}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"status": "deleted"}, "status"),
        ({"status": "all"}, "status"),
    ],
)
def test_list_refuses_out_of_bounds_and_unknown_values(planner, query, field):
    planner.job()
    assert bad_fields(planner.request("jobs.list", query, role="member")) == {field}


@pytest.mark.own_org
def test_page_is_paginated_and_filtered_by_name_and_status(planner):
    assert planner.ok("jobs.page", role="member") == {
        "data": [],
        "total": 0,
        "page": 1,
        "limit": 20,
    }
    alpha = planner.job(name="Alpha garden")
    beta = planner.job(name="Beta GARDEN", status="paused")
    gamma = planner.job(name="Gamma kitchen")
    odd = planner.job(name="100% organic_beds")

    def page(**query: Any) -> dict[str, Any]:
        return planner.ok("jobs.page", query, role="member")

    assert page() == {"data": [odd, gamma, beta, alpha], "total": 4, "page": 1, "limit": 20}
    assert page(limit=2) == {"data": [odd, gamma], "total": 4, "page": 1, "limit": 2}
    assert page(page=2, limit=2) == {"data": [beta, alpha], "total": 4, "page": 2, "limit": 2}
    assert page(page=3, limit=2) == {"data": [], "total": 4, "page": 3, "limit": 2}
    assert page(limit=1)["data"] == [odd]
    assert page(limit=100)["data"] == [odd, gamma, beta, alpha]
    assert page(search="garden")["data"] == [beta, alpha]  # case does not matter
    assert page(search="Garden", status="paused") == {
        "data": [beta],
        "total": 1,
        "page": 1,
        "limit": 20,
    }
    assert page(status="active")["total"] == 3
    # Wildcards are plain characters.
    assert page(search="%")["data"] == [odd]
    assert page(search="_")["data"] == [odd]
    assert page(search="x" * 255)["total"] == 0


@pytest.mark.parametrize(
    ("query", "field"),
    [*PAGE_BOUNDS, ({"status": "deleted"}, "status")],
)
def test_page_refuses_out_of_bounds_and_unknown_values(planner, query, field):
    planner.job()
    assert bad_fields(planner.request("jobs.page", query, role="member")) == {field}


@pytest.mark.own_org
def test_stats_count_jobs_by_status(planner):
    assert stats(planner) == EMPTY_STATS
    planner.job(name="Active")
    planner.job(name="Paused", status="paused")
    planner.job(name="Also paused", status="paused", **DAILY)
    planner.job(name="Done", jobType="scheduled", scheduledDates=[PAST])
    gone = planner.job(name="Deleted")
    planner.ok("jobs.delete", {"id": gone["id"]})
    failing = planner.job(name="Fails: nothing to write from")

    # The organization has no documents: the run fails, and the job with it.
    instance = planner.ok("jobs.trigger", {"id": failing["id"]}, role="member")
    assert stats(planner) == {
        "total": 5,
        "active": 1,
        "paused": 2,
        "processing": 1,
        "error": 0,
        "completed": 1,
    }
    finished, _ = planner.wait_instance(instance["id"])
    assert finished["status"] == "failed" and finished["error"], finished
    assert stats(planner) == {
        "total": 5,
        "active": 1,
        "paused": 2,
        "processing": 0,
        "error": 1,
        "completed": 1,
    }
    failed = get(planner, failing["id"])
    assert (failed["status"], failed["last_error"]) == ("error", finished["error"])

    # A failed job can be resumed.
    resumed = planner.ok("jobs.resume", {"id": failing["id"]}, role="admin")
    assert (resumed["status"], resumed["last_error"]) == ("active", None)
    assert stats(planner)["active"] == 2


# --- the calendar -----------------------------------------------------------------------------


@pytest.mark.own_org
def test_calendar_merges_planned_occurrences_with_existing_instances(planner):
    daily = planner.job(name="Daily tips", **DAILY)
    first = at(daily["next_run_at"])
    start = first - timedelta(hours=1)
    once = planner.job(name="One-off", scheduledDates=[iso(first + timedelta(days=1, hours=1))])
    planner.job(
        name="Paused dates",
        jobType="scheduled",
        scheduledDates=[iso(first + timedelta(hours=2))],
        status="paused",
    )
    # One instance on a planned occurrence, one besides the schedule.
    on_plan = plan_instance(planner, daily["id"], first + timedelta(days=2))
    extra = plan_instance(planner, daily["id"], first + timedelta(days=3, hours=6))

    entries = calendar(planner, start, 7)

    assert all(set(entry) == CALENDAR_FIELDS for entry in entries)
    planned = [first + timedelta(days=i) for i in (0, 1, 3, 4, 5, 6)]
    expected = [(daily["id"], "Daily tips", d, None, "planned") for d in planned]
    expected += [
        (daily["id"], "Daily tips", first + timedelta(days=2), on_plan["id"], "pending"),
        (daily["id"], "Daily tips", first + timedelta(days=3, hours=6), extra["id"], "pending"),
        (once["id"], "One-off", first + timedelta(days=1, hours=1), None, "planned"),
    ]
    expected.sort(key=lambda entry: entry[2])
    assert [
        (e["job_id"], e["job_name"], at(e["date"]), e["instance_id"], e["status"]) for e in entries
    ] == expected
    assert {e["draft_id"] for e in entries} == {None}
    assert [i["id"] for i in instances(planner, daily["id"])] == [extra["id"], on_plan["id"]]

    # The window is [startDate, endDate).
    assert calendar(planner, first, 1) == entries[:1]
    assert calendar(planner, first + timedelta(seconds=1), 1 - 1 / 86400) == []

    # A paused job plans nothing more, and its instances stay.
    planner.ok("jobs.pause", {"id": daily["id"]}, role="admin")
    assert [e["instance_id"] for e in calendar(planner, start, 7)] == [
        None,
        on_plan["id"],
        extra["id"],
    ]


@pytest.mark.own_org
def test_calendar_returns_at_most_5000_entries(planner):
    job = planner.job(name="Every minute", jobType="recurring", cronExpression="* * * * *")
    first = at(job["next_run_at"])
    entries = calendar(planner, first, 7)
    assert len(entries) == 5000
    assert [at(e["date"]) for e in entries] == [first + timedelta(minutes=i) for i in range(5000)]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({}, "startDate"),
        ({}, "endDate"),
        ({"startDate": "2030-01-01T00:00:00Z"}, "endDate"),
        ({"endDate": "2030-01-01T00:00:00Z"}, "startDate"),
        ({"startDate": "soon", "endDate": "2030-01-01T00:00:00Z"}, "startDate"),
        ({"startDate": "2030-01-01T00:00:00Z", "endDate": "2031-01-02T00:00:01Z"}, "endDate"),
        ({"startDate": "2030-01-01T00:00:00Z", "endDate": "2031-06-01T00:00:00Z"}, "endDate"),
        ({"startDate": "2030-01-02T00:00:00Z", "endDate": "2030-01-02T00:00:00Z"}, "endDate"),
        ({"startDate": "2030-01-02T00:00:00Z", "endDate": "2030-01-01T00:00:00Z"}, "endDate"),
    ],
)
def test_calendar_needs_a_window_of_at_most_366_days(planner, query, field):
    planner.job(name="Daily", **DAILY)
    assert field in bad_fields(planner.request("jobs.calendar", query, role="member"))


@pytest.mark.own_org
def test_calendar_accepts_a_window_of_366_days(planner):
    planner.job(name="Daily", **DAILY)
    start = datetime.now(UTC)
    entries = calendar(planner, start, 366)
    assert len(entries) in (365, 366)
    assert {e["job_name"] for e in entries} == {"Daily"}


# --- the organization's time zone -------------------------------------------------------------


@pytest.mark.own_org
def test_changing_the_time_zone_replans_active_jobs(planner):
    assert planner.ok("jobs.schedulingConfig", role="member") == {"timezone": "UTC"}
    daily = planner.job(name="Daily", **DAILY)
    paused = planner.job(name="Paused", status="paused", **DAILY)
    dates = planner.job(name="Dates", jobType="scheduled", scheduledDates=[iso(FUTURE)])

    changed = planner.ok("jobs.updateTimezone", {"timezone": " Asia/Tokyo "}, role="admin")

    assert changed == {"timezone": "Asia/Tokyo"}
    assert planner.ok("jobs.schedulingConfig", role="member") == changed
    replanned = get(planner, daily["id"])
    next_wall_time(replanned["next_run_at"], "Asia/Tokyo", 9)
    # 09:00 in Tokyo is 00:00 UTC: nine hours earlier, or fifteen later.
    moved = at(replanned["next_run_at"]) - at(daily["next_run_at"])
    assert moved % timedelta(days=1) == timedelta(hours=15), moved
    assert get(planner, paused["id"]) == paused
    assert get(planner, dates["id"])["next_run_at"] == dates["next_run_at"]  # a fixed instant

    # Dates without an offset are read on the organization's wall clock.
    naive = planner.job(name="Naive", jobType="scheduled", scheduledDates=["2030-01-01T09:00:00"])
    assert at(naive["next_run_at"]) == datetime(2030, 1, 1, 0, 0, tzinfo=UTC)
    local_day = at(replanned["next_run_at"]).astimezone(ZoneInfo("Asia/Tokyo")).date()
    naive_window = {"startDate": f"{local_day}T00:00:00", "endDate": f"{local_day}T23:59:59"}
    entries = planner.ok("jobs.calendar", naive_window, role="member")
    assert [(e["job_name"], e["date"]) for e in entries] == [("Daily", replanned["next_run_at"])]

    back = planner.ok("jobs.updateTimezone", {"timezone": "UTC"}, role="admin")
    assert back == {"timezone": "UTC"}
    assert get(planner, daily["id"])["next_run_at"] == daily["next_run_at"]


@pytest.mark.own_org
@pytest.mark.parametrize(
    "zone",
    ["Mars/Olympus_Mons", "CEST", "   ", "Europe/../UTC", "localtime", "posix/UTC", "Z" * 65],
)
def test_an_invalid_time_zone_is_400_and_changes_nothing(planner, zone):
    job = planner.job(name="Daily", **DAILY)
    response = planner.request("jobs.updateTimezone", {"timezone": zone}, role="admin")
    assert bad_fields(response) == {"timezone"}
    assert planner.ok("jobs.schedulingConfig", role="member") == {"timezone": "UTC"}
    assert get(planner, job["id"]) == job


@pytest.mark.parametrize("data", [{}, {"timezone": ""}, {"timezone": None}, {"timezone": 1}])
def test_update_timezone_needs_a_zone(planner, data):
    assert bad_fields(planner.request("jobs.updateTimezone", data, role="admin")) == {"timezone"}


# --- trigger, run history and analytics -------------------------------------------------------


@pytest.mark.own_org
def test_a_triggered_run_writes_a_draft_that_history_analytics_and_calendar_show(planner):
    planner.handbook()
    job = planner.job(topics=["Watering schedules", "Soil moisture sensors"])
    assert planner.ok("jobs.getAnalytics", {"id": job["id"]}, role="member") == NO_FIGURES
    before = datetime.now(UTC)

    instance = planner.ok("jobs.trigger", {"id": job["id"]}, role="member")

    assert set(instance) == INSTANCE_FIELDS
    assert (instance["job_id"], instance["tenant_id"]) == (job["id"], job["tenant_id"])
    assert (instance["status"], instance["topic"]) == ("pending", "Watering schedules")
    assert instance["draft_id"] and instance["run_id"]
    assert (
        before - timedelta(seconds=5)
        < at(instance["scheduled_date"])
        < before + timedelta(minutes=1)
    )
    assert get(planner, job["id"])["status"] == "processing"
    # One run at a time.
    body = problem(
        planner.request("jobs.trigger", {"id": job["id"]}, role="member"), 409, "CONFLICT"
    )
    assert "in flight" in body["detail"]
    finished, _ = planner.wait_instance(instance["id"])
    assert finished["status"] == "completed", finished

    after = get(planner, job["id"])
    assert after["status"] == "completed" and after["last_run_at"] is not None
    assert instances(planner, job["id"]) == [finished]
    draft = planner.draft(instance["draft_id"])
    history = planner.ok("jobs.getRunHistory", {"id": job["id"]}, role="member")
    assert history == [draft]
    assert planner.ok("jobs.getRunHistory", {"id": job["id"], "limit": 1}) == [draft]
    assert draft["status"] == "reviewing" and draft["seo_score"] > 0
    figures = planner.ok("jobs.getAnalytics", {"id": job["id"]}, role="member")
    assert figures == {**NO_FIGURES, "totalDrafts": 1, "avgSeoScore": draft["seo_score"]}
    assert figures["avgSeoScore"] > 0

    # The calendar shows the run where it happened, with its draft.
    [entry] = calendar(planner, before - timedelta(minutes=1), 1)
    assert entry == {
        "job_id": job["id"],
        "job_name": job["name"],
        "date": instance["scheduled_date"],
        "instance_id": instance["id"],
        "status": "completed",
        "draft_id": draft["id"],
    }

    # An approved draft counts as approved.
    planner.ok("drafts.approve", {"id": draft["id"]}, role="editor")
    figures = planner.ok("jobs.getAnalytics", {"id": job["id"]}, role="member")
    assert (figures["totalDrafts"], figures["approvedDrafts"]) == (1, 1)

    # A copy has none of the history.
    copy = planner.ok("jobs.clone", {"id": job["id"]}, role="editor")
    assert instances(planner, copy["id"]) == []
    assert planner.ok("jobs.getRunHistory", {"id": copy["id"]}, role="member") == []
    assert planner.ok("jobs.getAnalytics", {"id": copy["id"]}, role="member") == NO_FIGURES


@pytest.mark.own_org
def test_trigger_without_credits_is_402_and_leaves_nothing_behind(planner, settings):
    planner.handbook()
    job = planner.job()
    hold_all_but(settings, planner.tenant_id, left=settings.generation_credit_hold - 1)

    body = problem(
        planner.request("jobs.trigger", {"id": job["id"]}, role="member"), 402, "PAYMENT_REQUIRED"
    )
    assert "credits" in body["detail"]
    assert bulk(planner, "trigger", [job["id"]]) == {
        "success": False,
        "affected": 0,
        "results": results((job["id"], "PAYMENT_REQUIRED")),
    }

    assert get(planner, job["id"]) == job
    assert instances(planner, job["id"]) == []
    assert planner.ok("jobs.getRunHistory", {"id": job["id"]}, role="member") == []
    assert planner.ok("drafts.list", role="member")["total"] == 0


@pytest.mark.parametrize("limit", [0, -1, 101, "ten"])
def test_run_history_limit_is_1_to_100(planner, limit):
    job = planner.job()
    response = planner.request("jobs.getRunHistory", {"id": job["id"], "limit": limit})
    assert bad_fields(response) == {"limit"}


def test_a_new_job_has_no_history(planner):
    job = planner.job()
    for limit in (1, 10, 100):
        assert planner.ok("jobs.getRunHistory", {"id": job["id"], "limit": limit}) == []
    assert planner.ok("jobs.getAnalytics", {"id": job["id"]}, role="member") == NO_FIGURES
    assert instances(planner, job["id"]) == []


# --- bulk -------------------------------------------------------------------------------------


@pytest.mark.own_org
def test_bulk_reports_each_id_and_never_touches_another_tenants_job(planner, other):
    mine = planner.job(name="Mine", **DAILY)
    paused = planner.job(name="Paused", status="paused")
    theirs = other.job(name="Theirs", **DAILY)
    missing = str(uuid.uuid4())

    outcome = bulk(planner, "pause", [mine["id"], theirs["id"], missing, paused["id"], mine["id"]])

    assert outcome == {
        "success": False,
        "affected": 1,
        "results": results(
            (mine["id"], None),
            (theirs["id"], "NOT_FOUND"),
            (missing, "NOT_FOUND"),
            (paused["id"], "CONFLICT"),
        ),
    }
    assert get(planner, mine["id"])["status"] == "paused"
    assert get(planner, paused["id"]) == paused
    for action in ("pause", "resume", "trigger", "delete"):
        outcome = bulk(planner, action, [theirs["id"], missing])
        assert outcome == {
            "success": False,
            "affected": 0,
            "results": results((theirs["id"], "NOT_FOUND"), (missing, "NOT_FOUND")),
        }, action
    assert get(other, theirs["id"]) == theirs
    assert instances(other, theirs["id"]) == []
    assert other.ok("jobs.list", role="member") == [theirs]


@pytest.mark.own_org
def test_bulk_pause_resume_trigger_and_delete(planner):
    planner.handbook()
    daily = planner.job(name="Daily", **DAILY)
    once = planner.job(name="Once")
    ids = [daily["id"], once["id"]]
    everything = {
        "success": True,
        "affected": 2,
        "results": results((ids[0], None), (ids[1], None)),
    }

    assert bulk(planner, "trigger", ids) == everything
    started = {job_id: instances(planner, job_id) for job_id in ids}
    assert {len(found) for found in started.values()} == {1}
    assert {get(planner, job_id)["status"] for job_id in ids} == {"processing"}
    # One run at a time per job.
    assert bulk(planner, "trigger", ids)["results"] == results(
        (ids[0], "CONFLICT"), (ids[1], "CONFLICT")
    )
    # Jobs with a run in flight can be paused: the runs finish, and the jobs stay paused.
    assert bulk(planner, "pause", ids) == everything
    for job_id, [instance] in started.items():
        finished, _ = planner.wait_instance(instance["id"])
        assert finished["status"] == "completed", finished
        after = get(planner, job_id)
        assert (after["status"], after["next_run_at"]) == ("paused", None)
        assert after["last_run_at"] is not None
    assert planner.ok("drafts.list", role="member")["total"] == 2
    assert bulk(planner, "pause", ids)["results"] == results(
        (ids[0], "CONFLICT"), (ids[1], "CONFLICT")
    )

    assert bulk(planner, "resume", ids) == everything
    resumed = get(planner, daily["id"])
    assert resumed["status"] == "active"
    next_wall_time(resumed["next_run_at"], "UTC", 9)
    assert get(planner, once["id"])["status"] != "paused"

    body = problem(
        planner.request("jobs.bulk", {"action": "delete", "jobIds": ids}, role="editor"),
        403,
        "FORBIDDEN",
    )
    assert "admin" in body["detail"]
    assert len(planner.ok("jobs.list", role="member")) == 2

    assert bulk(planner, "delete", ids) == everything
    assert planner.ok("jobs.list", role="member") == []
    for job_id in ids:
        problem(planner.request("jobs.getById", {"id": job_id}), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"action": "pause"}, "jobIds"),
        ({"action": "pause", "jobIds": []}, "jobIds"),
        ({"action": "pause", "jobIds": [str(uuid.uuid4()) for _ in range(51)]}, "jobIds"),
        ({"action": "pause", "jobIds": ["not-a-uuid"]}, "jobIds"),
        ({"action": "pause", "jobIds": str(uuid.uuid4())}, "jobIds"),
        ({"action": "archive", "jobIds": [str(uuid.uuid4())]}, "action"),
    ],
)
def test_bulk_refuses_out_of_bounds_input(planner, data, field):
    job = planner.job()
    assert field in bad_fields(planner.request("jobs.bulk", data, role="admin"))
    assert get(planner, job["id"]) == job


def test_bulk_takes_up_to_50_ids(planner):
    job = planner.job()
    ids = [job["id"]] + [str(uuid.uuid4()) for _ in range(49)]
    outcome = bulk(planner, "pause", ids)
    assert (outcome["success"], outcome["affected"]) == (False, 1)
    assert [r["id"] for r in outcome["results"]] == ids
    assert [r["error"] for r in outcome["results"]] == [None] + ["NOT_FOUND"] * 49


# --- ids --------------------------------------------------------------------------------------

# Each operation on one job, with the rest of a valid input.
ID_OPERATIONS: dict[str, dict[str, Any]] = {
    "jobs.getById": {},
    "jobs.update": {"name": "Renamed"},
    "jobs.delete": {},
    "jobs.clone": {},
    "jobs.trigger": {},
    "jobs.pause": {},
    "jobs.resume": {},
    "jobs.getRunHistory": {},
    "jobs.getAnalytics": {},
    "jobs.listInstances": {},
}


@pytest.mark.parametrize("operation", sorted(ID_OPERATIONS))
@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
def test_a_malformed_id_is_400_naming_the_id(planner, operation, bad_id):
    data = {"id": bad_id, **ID_OPERATIONS[operation]}
    assert bad_fields(planner.request(operation, data)) == {"id"}


@pytest.mark.own_org
@pytest.mark.parametrize("operation", sorted(ID_OPERATIONS))
def test_an_unknown_id_is_404(planner, operation):
    job = planner.job()
    data = {"id": str(uuid.uuid4()), **ID_OPERATIONS[operation]}
    problem(planner.request(operation, data), 404, "NOT_FOUND")
    assert planner.ok("jobs.list", role="member") == [job]


# --- identity, roles and tenancy --------------------------------------------------------------


def all_inputs(job_id: str) -> dict[str, dict[str, Any]]:
    """A valid input for each of the 18 operations."""
    return {
        "jobs.list": {},
        "jobs.page": {},
        "jobs.stats": {},
        "jobs.calendar": window(datetime.now(UTC), 7),
        "jobs.schedulingConfig": {},
        "jobs.create": {"name": "New", "topics": ["Mulch"]},
        "jobs.updateTimezone": {"timezone": "Europe/Berlin"},
        "jobs.bulk": {"action": "pause", "jobIds": [job_id]},
        **{op: {"id": job_id, **extra} for op, extra in ID_OPERATIONS.items()},
    }


ALL_OPERATIONS = sorted(all_inputs("id"))
# The least role each operation needs (the table in docs/guides/identity-and-roles.md; the
# reference's roles: members read and trigger jobs, editors create and edit them, admins manage
# them and delete).
LEAST_ROLE = {
    **dict.fromkeys(
        (
            *("jobs.list", "jobs.page", "jobs.stats", "jobs.calendar", "jobs.schedulingConfig"),
            *("jobs.getById", "jobs.getRunHistory", "jobs.getAnalytics", "jobs.listInstances"),
            "jobs.trigger",
        ),
        "member",
    ),
    **dict.fromkeys(("jobs.create", "jobs.update", "jobs.clone"), "editor"),
    **dict.fromkeys(
        ("jobs.pause", "jobs.resume", "jobs.bulk", "jobs.delete", "jobs.updateTimezone"), "admin"
    ),
}
BELOW = {"member": (), "editor": ("member",), "admin": ("member", "editor")}
REFUSED = [
    *(
        (operation, role, LEAST_ROLE[operation], {})
        for operation in ALL_OPERATIONS
        for role in BELOW[LEAST_ROLE[operation]]
    ),
    # Deleting in bulk is an admin's too.
    *(("jobs.bulk", role, "admin", {"action": "delete"}) for role in ("member", "editor")),
]


def test_there_are_18_jobs_operations(openapi_document):
    found = operation_ids(openapi_document, "jobs.")
    assert found == set(ALL_OPERATIONS) == set(LEAST_ROLE)
    assert len(found) == 18


@pytest.mark.parametrize("operation", ALL_OPERATIONS)
def test_without_a_valid_token_is_401(call, org, operation):
    data = all_inputs(str(uuid.uuid4()))[operation]
    problem(call(operation, data, org=org), 401, "UNAUTHORIZED")
    problem(call(operation, data, token="not-a-jwt", org=org), 401, "UNAUTHORIZED")


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("operation", "role", "needed", "change"),
    REFUSED,
    ids=[f"{op}-{role}-{change.get('action', '')}" for op, role, _, change in REFUSED],
)
def test_each_role_is_refused_what_it_may_not_do(planner, operation, role, needed, change):
    job = planner.job(name="Daily", **DAILY)
    data = {**all_inputs(job["id"])[operation], **change}

    body = problem(planner.request(operation, data, role=role), 403, "FORBIDDEN")

    assert needed in body["detail"], body
    assert planner.ok("jobs.list", role="member") == [job]
    assert instances(planner, job["id"]) == []
    assert planner.ok("jobs.schedulingConfig", role="member") == {"timezone": "UTC"}


@pytest.mark.own_org
def test_each_operation_is_allowed_to_its_least_role(planner):
    planner.handbook()
    job = planner.job(name="Daily", **DAILY)
    inputs = all_inputs(job["id"])
    last = {"jobs.bulk": 1, "jobs.trigger": 2, "jobs.delete": 3}  # pause and resume come first
    for operation in sorted(ALL_OPERATIONS, key=lambda op: last.get(op, 0)):
        response = planner.request(operation, inputs[operation], role=LEAST_ROLE[operation])
        assert response.status_code == 200, (operation, response.text)
        if operation == "jobs.trigger":  # of a job bulk just paused: it stays paused
            finished, _ = planner.wait_instance(response.json()["id"])
            assert finished["status"] == "completed", finished
            assert get(planner, job["id"])["status"] == "paused"


@pytest.mark.own_org
def test_a_second_tenant_sees_and_changes_nothing_of_the_first(planner, other):
    daily = planner.job(name="Secret daily tips", **DAILY)
    first = at(daily["next_run_at"])
    planned = plan_instance(planner, daily["id"], first + timedelta(hours=2))
    dates = planner.job(name="Secret dates", jobType="scheduled", scheduledDates=[iso(FUTURE)])
    paused = planner.job(name="Secret paused", status="paused")
    mine = [daily, dates, paused]

    for job in mine:
        for operation, extra in ID_OPERATIONS.items():
            response = other.request(operation, {"id": job["id"], **extra})
            problem(response, 404, "NOT_FOUND")
        problem(
            other.request(
                "jobInstances.create", {"jobId": job["id"], "scheduledDate": iso(FUTURE)}
            ),
            404,
            "NOT_FOUND",
        )
    assert bulk(other, "resume", [paused["id"]])["results"] == results((paused["id"], "NOT_FOUND"))
    other.ok("jobs.updateTimezone", {"timezone": "Asia/Tokyo"})

    assert other.ok("jobs.list", role="member") == []
    for query in ({}, {"search": "secret"}, {"status": "paused"}):
        assert other.ok("jobs.page", query, role="member") == {
            "data": [],
            "total": 0,
            "page": 1,
            "limit": 20,
        }
    assert stats(other) == EMPTY_STATS
    assert calendar(other, first - timedelta(hours=1), 7) == []
    assert calendar(other, FUTURE, 1) == []

    # The first tenant's jobs, instance and time zone are as they were.
    assert planner.ok("jobs.list", role="member") == [paused, dates, daily]
    assert instances(planner, daily["id"]) == [planned]
    assert planner.ok("jobs.schedulingConfig", role="member") == {"timezone": "UTC"}
    assert stats(planner) == {**EMPTY_STATS, "total": 3, "active": 2, "paused": 1}
    assert len(calendar(planner, first - timedelta(hours=1), 7)) == 8
    # And it cannot see the second tenant's either.
    theirs = other.job(name="Theirs")
    problem(planner.request("jobs.getById", {"id": theirs["id"]}), 404, "NOT_FOUND")
