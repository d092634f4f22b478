"""The 7 Job instances operations end to end over real HTTP (REST and RPC): the record and its
creation (the organization's time zone, one instance per date), every bound, roles and tenancy,
list filters and paging, update and skip on a pending instance only, generate with the
instance's own overrides and its progress to a draft in review, select_existing taking approved
drafts, the 409s of instances in every status, 402, a failed instance generated again, and the
scheduler's tick starting planned instances (and skipping those of a paused job)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from contentplatform.generation.models import GenerationRun
from contentplatform.job_instances import service as rules
from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import Database
from tests.documents.support import hold_all_but
from tests.jobs.support import Planner, tick
from tests.support.bounds import MALFORMED_IDS
from tests.support.database import run_on
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

# The job instance record (snake_case): the fields, and topic, run_id, updated_at.
RECORD_FIELDS = {
    *("id", "tenant_id", "job_id", "scheduled_date", "day_mode", "keywords"),
    *("content_instructions", "images", "document_ids", "status", "step", "percent"),
    *("topic", "draft_id", "run_id", "error", "attempts"),
    *("created_at", "updated_at", "started_at", "finished_at"),
}
PROGRESS_FIELDS = {"status", "step", "percent"}
PENDING_PROGRESS = {"status": "pending", "step": None, "percent": 0}
# Far ahead, so that no tick of the suite (they tick at the real clock) ever starts what the
# tests plan there.
FAR = datetime(2099, 3, 1, tzinfo=UTC)
MISSING = object()

ID_OPERATIONS = (
    "jobInstances.getById",
    "jobInstances.update",
    "jobInstances.getProgress",
    "jobInstances.skip",
    "jobInstances.generate",
)
# Planning a job is editing it; running an instance is triggering a run, which a member may do.
EDITOR_OPERATIONS = ("jobInstances.create", "jobInstances.update", "jobInstances.skip")
MEMBER_OPERATIONS = (
    "jobInstances.list",
    "jobInstances.getById",
    "jobInstances.getProgress",
    "jobInstances.generate",
)


# --- helpers ----------------------------------------------------------------------------------


def at(days: int = 0, hours: int = 0, minutes: int = 0) -> str:
    return (FAR + timedelta(days=days, hours=hours, minutes=minutes)).isoformat()


def instant(value: str) -> datetime:
    return datetime.fromisoformat(value)


def plan(planner: Planner, job: dict[str, Any], when: str, **fields: Any) -> dict[str, Any]:
    """jobInstances.create as the editor, which must succeed."""
    data = {"jobId": job["id"], "scheduledDate": when, **fields}
    return planner.ok("jobInstances.create", data, role="editor")


def get(planner: Planner, instance_id: str) -> dict[str, Any]:
    return planner.ok("jobInstances.getById", {"id": instance_id}, role="member")


def progress(planner: Planner, instance_id: str) -> dict[str, Any]:
    return planner.ok("jobInstances.getProgress", {"id": instance_id}, role="member")


def listed(planner: Planner, **query: Any) -> list[dict[str, Any]]:
    return planner.ok("jobInstances.list", query, role="member")


def write(planner: Planner, operation: str, instance_id: str, **data: Any):
    """One of the instance's writes as the editor (the response, whatever it is)."""
    return planner.request(operation, {"id": instance_id, **data}, role="editor")


def bad_fields(response) -> list[str]:
    """The fields a 400 names (the first part of each path)."""
    body = problem(response, 400, "BAD_REQUEST")
    return [str(error["path"]).split(".")[0] for error in body["errors"]]


def conflict(response, *words: str) -> dict[str, Any]:
    body = problem(response, 409, "CONFLICT")
    for word in words:
        assert word in body["detail"], body
    return body


def approved_draft(planner: Planner, title: str, job_id: str | None = None) -> dict[str, Any]:
    """A draft written by hand (it starts in reviewing), then approved."""
    data: dict[str, Any] = {"title": title}
    if job_id is not None:
        data["jobId"] = job_id
    draft = planner.ok("drafts.createDraft", data, role="editor")
    approved = planner.ok("drafts.approve", {"id": draft["id"]}, role="editor")
    assert approved["status"] == "approved"
    return approved


def put_instance(settings, instance_id: str, **values: Any) -> None:
    """Set an instance's columns in the database, as a run of the pipeline would."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(JobInstance).where(JobInstance.id == uuid.UUID(instance_id)).values(**values)
            )

    run_on(settings, scenario)


def run_request(settings, run_id: str) -> dict[str, Any]:
    """What a generation run was asked (generation_runs.request)."""

    async def scenario(db: Database) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            run = await session.get(GenerationRun, uuid.UUID(run_id))
            assert run is not None, run_id
            return dict(run.request)

    return run_on(settings, scenario)


# --- create and the record --------------------------------------------------------------------


@pytest.mark.own_org
def test_create_plans_a_pending_instance_with_its_own_overrides(planner):
    job = planner.job(keywords=["job keyword"], contentInstructions="The job's voice.")
    created = plan(
        planner,
        job,
        at(),
        keywords=[" drip irrigation ", "rain sensor", "   "],
        contentInstructions="Write for first-time gardeners.",
        images=["https://example.com/garden.png"],
        dayMode="generate",
    )

    assert set(created) == RECORD_FIELDS
    uuid.UUID(created["id"])
    assert created["tenant_id"] == str(planner.tenant_id)
    assert created["job_id"] == job["id"]
    assert instant(created["scheduled_date"]) == FAR
    assert created["day_mode"] == "generate"
    assert created["keywords"] == ["drip irrigation", "rain sensor"]  # trimmed, blanks dropped
    assert created["content_instructions"] == "Write for first-time gardeners."
    assert created["images"] == ["https://example.com/garden.png"]
    assert created["document_ids"] is None
    assert (created["status"], created["step"], created["percent"]) == ("pending", None, 0)
    assert created["topic"] is None and created["draft_id"] is None and created["run_id"] is None
    assert created["error"] is None and created["attempts"] == 0
    assert created["started_at"] is None and created["finished_at"] is None
    assert instant(created["created_at"]) <= instant(created["updated_at"])
    assert get(planner, created["id"]) == created
    assert progress(planner, created["id"]) == PENDING_PROGRESS
    assert listed(planner) == [created]

    # Without overrides it keeps none: the job's settings apply when it runs.
    bare = plan(planner, job, at(days=1))
    assert bare["day_mode"] == "generate"
    assert bare["keywords"] is None and bare["content_instructions"] is None
    assert bare["images"] == [] and bare["document_ids"] is None
    assert listed(planner) == [created, bare]
    # The job itself is untouched.
    assert planner.ok("jobs.getById", {"id": job["id"]}, role="member") == job


def test_create_takes_a_select_existing_day_and_ready_documents(planner):
    handbook = planner.handbook()
    job = planner.job()
    created = plan(planner, job, at(), dayMode="select_existing", documentIds=[handbook["id"]] * 2)
    assert created["day_mode"] == "select_existing"
    assert created["document_ids"] == [handbook["id"]]  # each once
    assert get(planner, created["id"]) == created


@pytest.mark.own_org
def test_create_on_a_missing_or_deleted_job_is_404(planner):
    job = planner.job()
    for job_id in (str(uuid.uuid4()), job["id"]):
        if job_id == job["id"]:
            planner.ok("jobs.delete", {"id": job_id}, role="admin")
        response = planner.request(
            "jobInstances.create", {"jobId": job_id, "scheduledDate": at()}, role="editor"
        )
        body = problem(response, 404, "NOT_FOUND")
        assert job_id in body["detail"], body
    assert listed(planner) == []


def test_a_second_instance_at_the_same_date_of_the_same_job_is_409(planner):
    job = planner.job()
    other_job = planner.job(name="Other notes")
    first = plan(planner, job, at())
    # The same instant, however it is written.
    for same in (at(), "2099-03-01T01:00:00+01:00", "2099-02-28T19:00:00-05:00"):
        response = planner.request(
            "jobInstances.create", {"jobId": job["id"], "scheduledDate": same}, role="editor"
        )
        conflict(response)
    # Another job may have one at that date, and this job one a minute later.
    theirs = plan(planner, other_job, at())
    later = plan(planner, job, at(minutes=1))
    assert listed(planner, jobId=job["id"]) == [first, later]
    assert listed(planner, jobId=other_job["id"]) == [theirs]
    # A skipped instance still holds its date.
    planner.ok("jobInstances.skip", {"id": first["id"]}, role="editor")
    response = planner.request(
        "jobInstances.create", {"jobId": job["id"], "scheduledDate": at()}, role="editor"
    )
    conflict(response)


@pytest.mark.own_org
def test_a_date_without_an_offset_is_read_in_the_organizations_time_zone(planner):
    planner.ok("jobs.updateTimezone", {"timezone": "America/New_York"}, role="admin")
    job = planner.job()
    winter = plan(planner, job, "2099-01-15T09:00:00")
    summer = plan(planner, job, "2099-07-15T09:00:00")
    given = plan(planner, job, "2099-01-16T09:00:00+01:00")
    assert instant(winter["scheduled_date"]) == datetime(2099, 1, 15, 14, tzinfo=UTC)
    assert instant(summer["scheduled_date"]) == datetime(2099, 7, 15, 13, tzinfo=UTC)
    assert instant(given["scheduled_date"]) == datetime(2099, 1, 16, 8, tzinfo=UTC)
    # The same occurrence written in UTC is the same instance.
    response = planner.request(
        "jobInstances.create",
        {"jobId": job["id"], "scheduledDate": "2099-01-15T14:00:00Z"},
        role="editor",
    )
    conflict(response)


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"jobId": MISSING}, "jobId"),
        ({"jobId": None}, "jobId"),
        ({"jobId": "not-a-uuid"}, "jobId"),
        ({"scheduledDate": MISSING}, "scheduledDate"),
        ({"scheduledDate": None}, "scheduledDate"),
        ({"scheduledDate": "next tuesday"}, "scheduledDate"),
        ({"dayMode": "draft"}, "dayMode"),
        ({"dayMode": "GENERATE"}, "dayMode"),
        ({"dayMode": None}, "dayMode"),
        ({"keywords": [f"k{i}" for i in range(21)]}, "keywords"),
        ({"keywords": ["irrigation", "k" * 101]}, "keywords"),
        ({"keywords": [""]}, "keywords"),
        ({"keywords": "irrigation"}, "keywords"),
        ({"keywords": ["irrigation", 7]}, "keywords"),
        ({"contentInstructions": "c" * 5001}, "contentInstructions"),
        ({"contentInstructions": 5}, "contentInstructions"),
        ({"images": ["https://example.com/i.png"] * 21}, "images"),
        ({"images": [""]}, "images"),
        ({"images": ["x" * 2001]}, "images"),
        ({"images": None}, "images"),
        ({"documentIds": [str(uuid.uuid4()) for _ in range(51)]}, "documentIds"),
        ({"documentIds": ["not-a-uuid"]}, "documentIds"),
        ({"status": "running"}, "status"),
        ({"topic": "Chosen by hand"}, "topic"),
    ],
)
def test_create_refuses_out_of_bounds_input_and_creates_nothing(planner, change, field):
    job = planner.job()
    data = {"jobId": job["id"], "scheduledDate": at(), **change}
    data = {key: value for key, value in data.items() if value is not MISSING}
    assert bad_fields(planner.request("jobInstances.create", data, role="editor")) == [field]
    assert listed(planner) == []


def test_create_accepts_its_bounds(planner):
    handbook = planner.handbook()
    job = planner.job()
    keywords = [f"irrigation {i}" for i in range(19)] + ["k" * 100]
    images = [f"https://example.com/{i}/" + "i" * (1979 - len(str(i))) for i in range(20)]
    assert {len(image) for image in images} == {2000}
    created = plan(
        planner,
        job,
        at(),
        keywords=keywords,
        contentInstructions="c" * 5000,
        images=images,
        documentIds=[handbook["id"]] * 50,
        dayMode="select_existing",
    )
    assert created["keywords"] == keywords
    assert created["content_instructions"] == "c" * 5000
    assert created["images"] == images
    assert created["document_ids"] == [handbook["id"]]
    assert created["day_mode"] == "select_existing"
    # Empty overrides are overrides too.
    empty = plan(planner, job, at(days=1), keywords=[], contentInstructions="", images=[])
    assert (empty["keywords"], empty["content_instructions"], empty["images"]) == ([], "", [])


@pytest.mark.own_org
def test_create_refuses_documents_that_cannot_ground_an_article(planner, other):
    job = planner.job()
    pending = planner.docs.create("Later.pdf")
    theirs = other.docs.create("Theirs.pdf")
    response = planner.request(
        "jobInstances.create",
        {"jobId": job["id"], "scheduledDate": at(), "documentIds": [pending["id"]]},
        role="editor",
    )
    body = problem(response, 400, "BAD_REQUEST")
    assert body["errors"] == [{"path": "documentIds.0", "message": "is pending, not ready"}]
    for document_id in (str(uuid.uuid4()), theirs["id"]):
        response = planner.request(
            "jobInstances.create",
            {"jobId": job["id"], "scheduledDate": at(), "documentIds": [document_id]},
            role="editor",
        )
        body = problem(response, 404, "NOT_FOUND")
        assert document_id in body["detail"], body
    assert listed(planner) == []


# --- list ---------------------------------------------------------------------------------------


@pytest.mark.own_org
def test_list_filters_by_window_job_and_status_in_date_order(planner):
    first_job = planner.job(name="First notes")
    second_job = planner.job(name="Second notes")
    # Created out of order: the list is by scheduled date.
    a3 = plan(planner, first_job, at(days=2))
    a1 = plan(planner, first_job, at())
    b4 = plan(planner, second_job, at(days=3))
    a2 = plan(planner, first_job, at(days=1))
    b2 = plan(planner, second_job, at(days=1, minutes=1))

    assert listed(planner) == [a1, a2, b2, a3, b4]
    # startDate is inclusive, endDate exclusive.
    assert listed(planner, startDate=at(days=1)) == [a2, b2, a3, b4]
    assert listed(planner, startDate=at(days=1, minutes=1)) == [b2, a3, b4]
    assert listed(planner, endDate=at(days=2)) == [a1, a2, b2]
    assert listed(planner, startDate=at(days=1), endDate=at(days=2)) == [a2, b2]
    assert listed(planner, startDate=at(days=1), endDate=at(days=1)) == []
    # An offset is honoured: 01:00+01:00 is midnight UTC.
    assert listed(planner, startDate="2099-03-02T01:00:00+01:00") == [a2, b2, a3, b4]
    # By job.
    assert listed(planner, jobId=first_job["id"]) == [a1, a2, a3]
    assert listed(planner, jobId=second_job["id"]) == [b2, b4]
    assert listed(planner, jobId=str(uuid.uuid4())) == []
    # By status.
    skipped = planner.ok("jobInstances.skip", {"id": a2["id"]}, role="editor")
    assert listed(planner, status="skipped") == [skipped]
    assert listed(planner, status="pending") == [a1, b2, a3, b4]
    for status in ("running", "completed", "failed"):
        assert listed(planner, status=status) == [], status
    # All at once.
    assert listed(
        planner, jobId=first_job["id"], status="pending", startDate=at(days=1), endDate=at(days=9)
    ) == [a3]


@pytest.mark.own_org
def test_list_pages_and_limits(planner):
    job = planner.job()
    made = [plan(planner, job, at(hours=i)) for i in range(51)]
    assert listed(planner) == made[:50]  # limit defaults to 50
    assert listed(planner, limit=100) == made
    assert listed(planner, limit=1) == made[:1]
    assert listed(planner, limit=1, page=51) == made[50:]
    assert listed(planner, limit=20, page=1) == made[:20]
    assert listed(planner, limit=20, page=2) == made[20:40]
    assert listed(planner, limit=20, page=3) == made[40:]
    assert listed(planner, limit=20, page=4) == []
    assert listed(planner, page=1000) == []
    assert listed(planner, jobId=job["id"], limit=2, page=2) == made[2:4]


@pytest.mark.own_org
def test_list_reads_a_date_without_an_offset_in_the_organizations_time_zone(planner):
    planner.ok("jobs.updateTimezone", {"timezone": "Europe/Berlin"}, role="admin")
    job = planner.job()
    before = plan(planner, job, "2099-07-01T06:59:00Z")
    on = plan(planner, job, "2099-07-01T07:00:00Z")  # 09:00 in Berlin (summer time)
    assert listed(planner, startDate="2099-07-01T09:00:00") == [on]
    assert listed(planner, endDate="2099-07-01T09:00:00") == [before]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": -1}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"page": 0}, "page"),
        ({"page": -1}, "page"),
        ({"status": "planned"}, "status"),
        ({"status": "PENDING"}, "status"),
        ({"jobId": "not-a-uuid"}, "jobId"),
        ({"startDate": "yesterday"}, "startDate"),
        ({"endDate": "2099-13-01T00:00:00Z"}, "endDate"),
    ],
)
def test_list_refuses_out_of_bounds_and_unknown_values(planner, query, field):
    assert bad_fields(planner.request("jobInstances.list", query, role="member")) == [field]


# --- update -------------------------------------------------------------------------------------


def test_update_changes_a_pending_instances_overrides_and_day_mode(planner):
    job = planner.job()
    instance = plan(planner, job, at(), keywords=["old"], contentInstructions="Old.")

    updated = write(
        planner,
        "jobInstances.update",
        instance["id"],
        keywords=[" new one ", "two"],
        contentInstructions="New.",
        dayMode="select_existing",
    )
    assert updated.status_code == 200, updated.text
    updated = updated.json()
    assert set(updated) == RECORD_FIELDS
    assert updated["keywords"] == ["new one", "two"]
    assert updated["content_instructions"] == "New."
    assert updated["day_mode"] == "select_existing"
    assert instant(updated["updated_at"]) >= instant(instance["updated_at"])
    same = ("id", "job_id", "scheduled_date", "images", "document_ids", "status", "attempts")
    assert {key: updated[key] for key in same} == {key: instance[key] for key in same}
    assert get(planner, instance["id"]) == updated

    # Only what is given changes.
    again = planner.ok(
        "jobInstances.update", {"id": instance["id"], "contentInstructions": "Newer."}
    )
    assert again["content_instructions"] == "Newer."
    assert again["keywords"] == ["new one", "two"] and again["day_mode"] == "select_existing"
    back = planner.ok("jobInstances.update", {"id": instance["id"], "dayMode": "generate"})
    assert back["day_mode"] == "generate" and back["content_instructions"] == "Newer."
    # null drops an override (the job's settings apply again).
    cleared = planner.ok(
        "jobInstances.update", {"id": instance["id"], "keywords": None, "contentInstructions": None}
    )
    assert cleared["keywords"] is None and cleared["content_instructions"] is None
    assert get(planner, instance["id"]) == cleared

    # A skipped instance cannot be changed.
    skipped = planner.ok("jobInstances.skip", {"id": instance["id"]}, role="editor")
    response = write(planner, "jobInstances.update", instance["id"], keywords=["late"])
    conflict(response, "skipped")
    assert get(planner, instance["id"]) == skipped


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"keywords": [f"k{i}" for i in range(21)]}, "keywords"),
        ({"keywords": ["k" * 101]}, "keywords"),
        ({"keywords": [""]}, "keywords"),
        ({"keywords": "irrigation"}, "keywords"),
        ({"contentInstructions": "c" * 5001}, "contentInstructions"),
        ({"dayMode": "draft"}, "dayMode"),
        ({"dayMode": 1}, "dayMode"),
        # Only the overrides and the day mode can change.
        ({"scheduledDate": "2099-04-01T00:00:00Z"}, "scheduledDate"),
        ({"images": []}, "images"),
        ({"documentIds": []}, "documentIds"),
        ({"status": "skipped"}, "status"),
    ],
)
def test_update_refuses_out_of_bounds_input_and_changes_nothing(planner, data, field):
    instance = plan(planner, planner.job(), at(), keywords=["kept"])
    response = write(planner, "jobInstances.update", instance["id"], **data)
    assert bad_fields(response) == [field]
    assert get(planner, instance["id"]) == instance


def test_update_accepts_its_bounds(planner):
    instance = plan(planner, planner.job(), at())
    keywords = [f"irrigation {i}" for i in range(19)] + ["k" * 100]
    updated = planner.ok(
        "jobInstances.update",
        {"id": instance["id"], "keywords": keywords, "contentInstructions": "c" * 5000},
    )
    assert updated["keywords"] == keywords
    assert updated["content_instructions"] == "c" * 5000
    emptied = planner.ok(
        "jobInstances.update", {"id": instance["id"], "keywords": [], "contentInstructions": ""}
    )
    assert (emptied["keywords"], emptied["content_instructions"]) == ([], "")


# --- skip ---------------------------------------------------------------------------------------


def test_skip_a_pending_instance_once(planner):
    job = planner.job()
    instance = plan(planner, job, at())
    neighbour = plan(planner, job, at(days=1))

    response = write(planner, "jobInstances.skip", instance["id"])
    assert response.status_code == 200, response.text
    skipped = response.json()
    assert set(skipped) == RECORD_FIELDS
    assert skipped["status"] == "skipped"
    assert skipped["error"] == rules.SKIPPED_BY_HAND
    assert skipped["finished_at"] is not None
    assert skipped["attempts"] == 0 and skipped["run_id"] is None and skipped["draft_id"] is None
    assert get(planner, instance["id"]) == skipped
    assert progress(planner, instance["id"]) == {"status": "skipped", "step": None, "percent": 0}

    conflict(write(planner, "jobInstances.skip", instance["id"]), "skipped")
    assert get(planner, instance["id"]) == skipped
    assert get(planner, neighbour["id"]) == neighbour  # only that one


# --- an instance in each status: what it refuses ------------------------------------------------

# Each status as the pipeline leaves it (a run id of a run that is not followed: the instance is
# what the operations read).
STATES: dict[str, dict[str, Any]] = {
    "queued": {"status": "pending", "percent": 0},
    "running": {"status": "running", "step": "draft", "percent": 40},
    "completed": {"status": "completed", "step": "finalize", "percent": 100},
    "failed": {"status": "failed", "step": "retrieve", "percent": 10, "error": "It broke."},
}


@pytest.mark.parametrize("state", [*STATES, "skipped"])
def test_only_a_pending_instance_that_no_run_took_can_be_changed_or_skipped(
    planner, settings, state
):
    job = planner.job()
    instance = plan(planner, job, at())
    waiting = plan(planner, job, at(days=1))
    if state == "skipped":
        planner.ok("jobInstances.skip", {"id": instance["id"]}, role="editor")
    else:
        values = {"run_id": uuid.uuid4(), "draft_id": uuid.uuid4(), "attempts": 1}
        put_instance(settings, instance["id"], **values, **STATES[state])
    before = get(planner, instance["id"])
    assert before["status"] == ("pending" if state == "queued" else state)

    conflict(write(planner, "jobInstances.update", instance["id"], keywords=["x"]), state)
    conflict(write(planner, "jobInstances.skip", instance["id"]), state)
    if state in ("queued", "running", "completed"):
        conflict(write(planner, "jobInstances.generate", instance["id"]), state)
    if state in ("queued", "running"):
        # One run at a time per job: its other instances wait.
        conflict(write(planner, "jobInstances.generate", waiting["id"]))
        assert get(planner, waiting["id"]) == waiting
        expected = {key: before[key] for key in PROGRESS_FIELDS}
        assert progress(planner, instance["id"]) == expected
    assert get(planner, instance["id"]) == before
    # The job's other instance can still be planned differently or skipped.
    assert planner.ok("jobInstances.update", {"id": waiting["id"], "keywords": ["y"]})
    assert planner.ok("jobInstances.skip", {"id": waiting["id"]})["status"] == "skipped"


# --- generate -----------------------------------------------------------------------------------


def test_generate_runs_the_instance_with_its_own_overrides_to_a_draft_in_review(planner, settings):
    handbook = planner.handbook()
    job = planner.job(
        topics=["Watering schedules"],
        keywords=["job keyword"],
        contentInstructions="The job's own voice.",
    )
    instance = plan(
        planner,
        job,
        at(),
        keywords=["smart irrigation", "rain delay"],
        contentInstructions="Write for first-time gardeners.",
        documentIds=[handbook["id"]],
    )

    response = write(planner, "jobInstances.generate", instance["id"])
    assert response.status_code == 200, response.text
    started = response.json()
    # While it is queued: neither run again, nor changed, nor skipped.
    queued = [
        write(planner, "jobInstances.generate", instance["id"]),
        write(planner, "jobInstances.update", instance["id"], keywords=["late"]),
        write(planner, "jobInstances.skip", instance["id"]),
    ]
    asked = run_request(settings, started["run_id"])
    finished, seen = planner.wait_instance(instance["id"])  # the run ends before any assert

    assert set(started) == RECORD_FIELDS
    assert started["id"] == instance["id"]
    assert started["status"] == "pending"
    assert started["topic"] == "Watering schedules"
    assert started["run_id"] and started["draft_id"]
    assert started["attempts"] == 1 and started["error"] is None
    for response in queued:
        conflict(response)
    # The run was asked what the instance says, not what the job says.
    assert asked == {
        "topic": "Watering schedules",
        "keywords": ["smart irrigation", "rain delay"],
        "contentInstructions": "Write for first-time gardeners.",
        "documentIds": [handbook["id"]],
    }

    assert finished["status"] == "completed", finished
    assert {key for progress in seen for key in progress} == PROGRESS_FIELDS
    assert seen[-1] == {"status": "completed", "step": "finalize", "percent": 100}
    percents = [p["percent"] for p in seen]
    assert percents == sorted(percents)
    assert all(p["status"] in ("pending", "running", "completed") for p in seen)
    assert (finished["run_id"], finished["draft_id"]) == (started["run_id"], started["draft_id"])
    assert finished["error"] is None and finished["attempts"] == 1
    assert finished["started_at"] is not None and finished["finished_at"] is not None
    assert instant(finished["started_at"]) <= instant(finished["finished_at"])
    assert progress(planner, instance["id"]) == seen[-1]

    draft = planner.draft(started["draft_id"])
    assert draft["status"] == "reviewing"
    assert (draft["job_id"], draft["instance_id"]) == (job["id"], instance["id"])
    assert draft["run_id"] == started["run_id"]
    # Completed: it cannot be generated, changed or skipped any more.
    conflict(write(planner, "jobInstances.generate", instance["id"]), "completed")
    conflict(write(planner, "jobInstances.update", instance["id"], keywords=["late"]), "completed")
    conflict(write(planner, "jobInstances.skip", instance["id"]), "completed")
    assert get(planner, instance["id"]) == finished


@pytest.mark.own_org
def test_a_failed_instance_can_be_generated_again(planner):
    job = planner.job(topics=["Watering schedules"])
    instance = plan(planner, job, at())

    # Nothing to write from yet: the run fails.
    first = planner.ok("jobInstances.generate", {"id": instance["id"]}, role="editor")
    failed, _ = planner.wait_instance(instance["id"])
    assert first["attempts"] == 1
    assert failed["status"] == "failed", failed
    assert failed["error"], failed
    assert failed["attempts"] == 1 and failed["finished_at"] is not None
    assert failed["run_id"] == first["run_id"]
    assert progress(planner, instance["id"])["status"] == "failed"
    after_failure = planner.ok("jobs.getById", {"id": job["id"]}, role="member")
    assert after_failure["status"] == "error"
    assert after_failure["last_error"] == failed["error"]
    # A failed instance is not pending: it cannot be changed or skipped, only run again.
    conflict(write(planner, "jobInstances.update", instance["id"], keywords=["x"]), "failed")
    conflict(write(planner, "jobInstances.skip", instance["id"]), "failed")

    planner.handbook()
    second = planner.ok("jobInstances.generate", {"id": instance["id"]}, role="editor")
    finished, seen = planner.wait_instance(instance["id"])
    assert second["attempts"] == 2
    assert second["status"] == "pending" and second["error"] is None
    assert second["run_id"] and second["run_id"] != first["run_id"]
    assert second["draft_id"] != first["draft_id"]
    assert second["topic"] == first["topic"] == "Watering schedules"
    assert second["finished_at"] is None
    assert finished["status"] == "completed", finished
    assert finished["attempts"] == 2 and finished["error"] is None
    assert seen[-1] == {"status": "completed", "step": "finalize", "percent": 100}
    assert planner.draft(finished["draft_id"])["status"] == "reviewing"
    assert planner.draft(first["draft_id"])["status"] == "rejected"
    assert planner.ok("jobs.getById", {"id": job["id"]}, role="member")["last_error"] is None


@pytest.mark.own_org
def test_generate_without_the_credits_a_run_holds_is_402_and_changes_nothing(planner, settings):
    job = planner.job()
    instance = plan(planner, job, at())
    hold_all_but(settings, planner.tenant_id, left=settings.generation_credit_hold - 1)

    response = write(planner, "jobInstances.generate", instance["id"])
    problem(response, 402, "PAYMENT_REQUIRED")
    assert get(planner, instance["id"]) == instance
    assert planner.ok("drafts.list", role="member")["total"] == 0
    assert planner.ok("jobs.getById", {"id": job["id"]}, role="member") == job


def test_generate_an_instance_of_a_deleted_job_is_409(planner):
    job = planner.job()
    instance = plan(planner, job, at())
    planner.ok("jobs.delete", {"id": job["id"]}, role="admin")
    conflict(write(planner, "jobInstances.generate", instance["id"]), "deleted")
    assert get(planner, instance["id"]) == instance


# --- select_existing ----------------------------------------------------------------------------


def test_select_existing_takes_an_approved_draft_once_and_409_when_none_is_left(planner):
    job = planner.job()
    approved = approved_draft(planner, "Mulching in spring")
    planner.ok("drafts.createDraft", {"title": "Still in review"}, role="editor")
    first = plan(planner, job, at(), dayMode="select_existing")
    second = plan(planner, job, at(days=1), dayMode="select_existing")

    response = write(planner, "jobInstances.generate", first["id"])
    assert response.status_code == 200, response.text
    taken = response.json()
    assert taken["status"] == "completed"
    assert taken["draft_id"] == approved["id"]
    assert taken["topic"] == "Mulching in spring"
    assert taken["run_id"] is None and taken["attempts"] == 1 and taken["error"] is None
    assert taken["percent"] == 100
    assert taken["started_at"] is not None and taken["finished_at"] is not None
    assert get(planner, first["id"]) == taken
    assert progress(planner, first["id"])["status"] == "completed"
    assert progress(planner, first["id"])["percent"] == 100
    draft = planner.draft(approved["id"])
    assert draft["status"] == "approved" and draft["instance_id"] == first["id"]

    # The same draft is not taken twice; a draft in review is never taken.
    conflict(write(planner, "jobInstances.generate", second["id"]), "approved draft")
    assert get(planner, second["id"]) == second
    conflict(write(planner, "jobInstances.generate", first["id"]), "completed")

    # Once another is approved, the waiting day takes it.
    fresh = approved_draft(planner, "Pruning roses")
    later = planner.ok("jobInstances.generate", {"id": second["id"]}, role="editor")
    assert later["status"] == "completed" and later["draft_id"] == fresh["id"]
    assert planner.ok("drafts.list", {"status": "generating"}, role="member")["total"] == 0


def test_select_existing_takes_the_jobs_own_draft_first_then_the_oldest_approved(planner):
    job = planner.job()
    another_job = planner.job(name="Another job")
    # Approved in this order: one written by hand, one of another job, one of this job.
    by_hand = approved_draft(planner, "By hand")
    of_another_job = approved_draft(planner, "Of another job", another_job["id"])
    own = approved_draft(planner, "Own", job["id"])
    days = [plan(planner, job, at(days=i), dayMode="select_existing") for i in range(4)]

    titles = {draft["id"]: draft["title"] for draft in (by_hand, of_another_job, own)}
    taken = [planner.ok("jobInstances.generate", {"id": day["id"]}) for day in days[:3]]
    assert [titles[day["draft_id"]] for day in taken] == ["Own", "By hand", "Of another job"]
    conflict(write(planner, "jobInstances.generate", days[3]["id"]))


def test_a_skipped_instance_can_be_generated(planner):
    job = planner.job()
    instance = plan(planner, job, at(), dayMode="select_existing")
    planner.ok("jobInstances.skip", {"id": instance["id"]}, role="editor")
    approved = approved_draft(planner, "Autumn leaves")
    done = planner.ok("jobInstances.generate", {"id": instance["id"]}, role="editor")
    assert done["status"] == "completed" and done["draft_id"] == approved["id"]
    assert done["error"] is None and done["attempts"] == 1


# --- the scheduler ------------------------------------------------------------------------------


@pytest.mark.own_org
def test_the_tick_starts_planned_instances_whose_date_has_come(nothing_else_due, planner, settings):
    planner.handbook()
    job = planner.job(topics=["Soil moisture sensors"])
    paused = planner.job(name="Paused notes")
    selecting = planner.job(name="Best of the archive")
    now = datetime.now(UTC).replace(microsecond=0)
    past = (now - timedelta(minutes=1)).isoformat()
    due = plan(planner, job, past, keywords=["sensor"])
    later = plan(planner, job, (now + timedelta(hours=1)).isoformat())
    held = plan(planner, paused, past)
    nothing_left = plan(planner, selecting, past, dayMode="select_existing")
    planner.ok("jobs.pause", {"id": paused["id"]}, role="admin")

    tick(settings, now)
    started = get(planner, due["id"])
    tick(settings, now)  # nothing twice
    finished, _ = planner.wait_instance(due["id"])  # the run ends before any assert

    assert started["status"] in ("pending", "running", "completed"), started
    assert started["run_id"] and started["draft_id"]
    assert started["attempts"] == 1
    assert started["topic"] == "Soil moisture sensors"
    assert finished["status"] == "completed", finished
    assert finished["run_id"] == started["run_id"] and finished["attempts"] == 1
    assert planner.draft(finished["draft_id"])["status"] == "reviewing"
    assert get(planner, later["id"]) == later  # its date has not come
    # The paused job's occurrence is skipped, with the reason.
    skipped = get(planner, held["id"])
    assert skipped["status"] == "skipped"
    assert skipped["error"] == rules.JOB_PAUSED
    assert skipped["run_id"] is None and skipped["finished_at"] is not None
    assert skipped["attempts"] == 0
    # A select_existing day with no approved draft fails (by hand it would be a 409)...
    failed = get(planner, nothing_left["id"])
    assert failed["status"] == "failed"
    assert failed["error"] == rules.NOTHING_TO_SELECT
    assert failed["attempts"] == 1 and failed["draft_id"] is None
    assert planner.ok("jobs.getById", {"id": selecting["id"]}, role="member")["status"] == "error"
    # ...and is generated again once there is one.
    approved = approved_draft(planner, "From the archive")
    again = planner.ok("jobInstances.generate", {"id": nothing_left["id"]}, role="editor")
    assert again["status"] == "completed" and again["error"] is None
    assert again["draft_id"] == approved["id"] and again["attempts"] == 2


# --- ids, roles and tenancy ---------------------------------------------------------------------


@pytest.mark.parametrize("operation", ID_OPERATIONS)
def test_a_malformed_id_is_400_and_an_unknown_one_404(planner, operation):
    plan(planner, planner.job(), at())
    for bad_id in MALFORMED_IDS:
        response = planner.request(operation, {"id": bad_id}, role="admin")
        assert bad_fields(response) == ["id"], bad_id
    unknown = str(uuid.uuid4())
    body = problem(planner.request(operation, {"id": unknown}, role="admin"), 404, "NOT_FOUND")
    assert unknown in body["detail"], body


@pytest.mark.own_org
def test_a_member_reads_and_generates_and_an_editor_plans(planner):
    job = planner.job()
    instance = plan(planner, job, at(), dayMode="select_existing")
    inputs = {
        "jobInstances.create": {"jobId": job["id"], "scheduledDate": at(days=1)},
        "jobInstances.update": {"id": instance["id"], "keywords": ["x"]},
        "jobInstances.skip": {"id": instance["id"]},
    }
    for operation in EDITOR_OPERATIONS:
        body = problem(
            planner.request(operation, inputs[operation], role="member"), 403, "FORBIDDEN"
        )
        assert "editor" in body["detail"], body
    # Nothing happened, and a member reads everything.
    assert listed(planner) == [instance]
    assert get(planner, instance["id"]) == instance
    assert progress(planner, instance["id"]) == PENDING_PROGRESS

    # The editor (and the admin) plan.
    changed = planner.ok("jobInstances.update", inputs["jobInstances.update"], role="editor")
    assert changed["keywords"] == ["x"]
    created = planner.ok("jobInstances.create", inputs["jobInstances.create"], role="admin")
    skipped = planner.ok("jobInstances.skip", {"id": created["id"]}, role="admin")
    assert skipped["status"] == "skipped"
    # A member runs an instance (here it takes an approved draft: no generation run).
    approved = approved_draft(planner, "Winter pruning")
    done = planner.ok("jobInstances.generate", {"id": instance["id"]}, role="member")
    assert done["status"] == "completed" and done["draft_id"] == approved["id"]


@pytest.mark.parametrize("operation", [*MEMBER_OPERATIONS, *EDITOR_OPERATIONS])
def test_without_a_valid_token_is_401(call, org, operation):
    data = {"id": str(uuid.uuid4())}
    if operation == "jobInstances.create":
        data = {"jobId": str(uuid.uuid4()), "scheduledDate": at()}
    elif operation == "jobInstances.list":
        data = {}
    problem(call(operation, data, org=org), 401, "UNAUTHORIZED")
    problem(call(operation, data, token="not-a-jwt", org=org), 401, "UNAUTHORIZED")


@pytest.mark.own_org
def test_a_second_tenant_sees_and_touches_nothing_of_the_first(planner, other):
    job = planner.job()
    pending = plan(planner, job, at(), keywords=["secret"])
    skipped = plan(planner, job, at(days=1))
    skipped = planner.ok("jobInstances.skip", {"id": skipped["id"]}, role="editor")
    their_job = other.job(name="Their notes")
    theirs = plan(other, their_job, at())

    for instance in (pending, skipped):
        for operation in ID_OPERATIONS:
            data = {"id": instance["id"]}
            if operation == "jobInstances.update":
                data["keywords"] = ["stolen"]
            body = problem(other.request(operation, data, role="admin"), 404, "NOT_FOUND")
            assert instance["id"] in body["detail"], body
    # Nor can it plan on the first tenant's job.
    response = other.request(
        "jobInstances.create", {"jobId": job["id"], "scheduledDate": at(days=5)}, role="admin"
    )
    body = problem(response, 404, "NOT_FOUND")
    assert job["id"] in body["detail"], body
    # Its list holds its own only, whatever the filter.
    assert listed(other) == [theirs]
    assert listed(other, limit=100) == [theirs]
    assert listed(other, status="pending") == [theirs]
    for query in ({"jobId": job["id"]}, {"status": "skipped"}, {"startDate": at(days=1)}):
        assert listed(other, **query) == [], query

    # The first tenant's instances are untouched, and it cannot see the second's either.
    assert get(planner, pending["id"]) == pending
    assert get(planner, skipped["id"]) == skipped
    assert listed(planner) == [pending, skipped]
    problem(planner.request("jobInstances.getById", {"id": theirs["id"]}), 404, "NOT_FOUND")
    assert listed(planner, jobId=their_job["id"]) == []
    assert get(other, theirs["id"]) == theirs

    # A select_existing day never takes another organization's approved draft.
    their_draft = approved_draft(other, "Their best article")
    selecting = plan(planner, job, at(days=2), dayMode="select_existing")
    conflict(write(planner, "jobInstances.generate", selecting["id"]), "approved draft")
    assert get(planner, selecting["id"]) == selecting
    assert other.draft(their_draft["id"])["instance_id"] is None
