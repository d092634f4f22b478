"""Runs of workflow definitions over REST and RPC, on the offline writer: the generation engine
follows the run's frozen definition step by step (workflows.testRun, getRun, listRuns,
cancelRun), a review gate holds the run until the draft is approved or rejected, a fact check
records each claim's support, internal links go to the organization's published posts, the
images step attaches library images, and a job pinned to a version keeps it after another is
published. Every error each operation documents, its roles, and a second organization that sees
none of the first one's runs."""

from __future__ import annotations

import re
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import update

from contentplatform.config import Settings
from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Database
from tests.generation.support import Writer
from tests.jobs.support import Planner
from tests.media.support import Media, jpeg
from tests.support.database import run_on
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.workflows.support import Designer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

RUN_TIMEOUT = 90.0
ENDED = ("succeeded", "failed", "cancelled")
TOPIC = "Watering schedules for the Fernleaf controller"
KEYWORDS = ["watering schedule"]


class Runner(Planner):
    """One organization writing from the irrigation handbook, with its workflows."""

    @property
    def designer(self) -> Designer:
        return Designer.of(self)

    def workflow(self, *steps: dict[str, Any], publish: bool = False) -> dict[str, Any]:
        created = self.designer.workflow(steps=list(steps))
        if publish:
            self.designer.publish(created["id"])
        return created

    def test_run(self, workflow_id: str, role: str = "editor", **data: Any) -> dict[str, Any]:
        body = {"id": workflow_id, "topic": TOPIC, "keywords": KEYWORDS, **data}
        return self.ok("workflows.testRun", body, role=role)

    def run(self, run_id: str, role: str = "member") -> dict[str, Any]:
        return self.ok("workflows.getRun", {"id": run_id}, role=role)

    def until(self, run_id: str, *statuses: str) -> dict[str, Any]:
        """Poll getRun until the run is in one of `statuses` (bounded)."""
        deadline = time.monotonic() + RUN_TIMEOUT
        while True:
            current = self.run(run_id)
            if current["status"] in statuses:
                return current
            assert current["status"] not in ENDED, current
            assert time.monotonic() < deadline, f"still {current['status']}: {current}"
            time.sleep(0.05)


runner = org_fixture(Runner)
other = org_fixture(Writer, second=True)

RESEARCH = {"key": "research", "type": "research", "config": {"maxSources": 4}}
OUTLINE = {"key": "outline", "type": "outline", "config": {"maxSections": 3}}
WRITE = {"key": "write", "type": "write"}
FACTS = {"key": "facts", "type": "fact_check"}
LINKS = {"key": "links", "type": "internal_links"}
OPTIMIZE = {"key": "optimize", "type": "optimize"}
GATE = {"key": "gate", "type": "review_gate", "config": {"timeoutHours": 1}}


def by_key(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["key"]: step for step in run["steps"]}


@pytest.mark.own_org
def test_a_test_run_follows_the_working_definition_and_keeps_only_its_result(
    runner: Runner,
) -> None:
    runner.handbook()
    workflow = runner.workflow(RESEARCH, OUTLINE, WRITE, FACTS, LINKS, OPTIMIZE)

    started = runner.test_run(workflow["id"])
    assert started["status"] == "queued"
    assert (started["trigger"], started["workflow_version"]) == ("test", "working")
    assert started["workflow_id"] == workflow["id"]
    assert started["draft_id"] is None  # no createDraft: the run keeps its result only
    keys = ["research", "outline", "write", "facts", "links", "optimize", "score", "finalize"]
    assert [step["key"] for step in started["steps"]] == keys
    assert {step["status"] for step in started["steps"]} == {"pending"}

    run = runner.until(started["id"], *ENDED)
    assert run["status"] == "succeeded", run
    steps = by_key(run)
    assert [step["status"] for step in run["steps"]] == ["succeeded"] * len(keys)
    for step in run["steps"]:
        assert step["attempts"] == 1
        assert step["started_at"] <= step["finished_at"], step
        assert step["duration_ms"] >= 0
    # The model's steps say which model and how many tokens; the others made no call.
    for key in ("outline", "write", "optimize"):
        assert steps[key]["model"] and steps[key]["tokens"]["input"] > 0, steps[key]
    assert steps["research"]["tokens"] == {"input": 0, "output": 0}
    assert steps["research"]["model"] is None
    total = sum(step["tokens"]["input"] + step["tokens"]["output"] for step in run["steps"])
    assert run["tokens"]["total"] == total > 0
    assert run["credits_used"] >= 1
    assert re.fullmatch(r"\d+ claims checked, 0 unsupported", steps["facts"]["output_summary"])
    assert steps["links"]["output_summary"] == "0 internal links added"  # nothing published
    assert run["result"]["title"] and run["result"]["seo_score"] >= 0
    assert run["draft_id"] is None and run["error"] is None
    # Nothing to review: the draft it wrote into is gone.
    assert runner.ok("drafts.list", {}, role="member")["total"] == 0

    listed = runner.ok("workflows.listRuns", {"workflowId": workflow["id"]}, role="member")
    assert [row["id"] for row in listed["data"]] == [run["id"]]
    assert "output_summary" not in listed["data"][0]["steps"][0]
    assert runner.ok("workflows.listRuns", {"trigger": "job_instance"})["total"] == 0
    assert runner.ok("workflows.listRuns", {"status": "succeeded"})["total"] == 1


def test_stop_after_a_step_skips_the_rest_and_a_version_runs_as_published(
    runner: Runner,
) -> None:
    runner.handbook()
    workflow = runner.workflow(RESEARCH, OUTLINE, WRITE, OPTIMIZE, publish=True)

    stopped = runner.test_run(workflow["id"], stopAfterStep="outline", version=1)
    run = runner.until(stopped["id"], *ENDED)
    assert run["status"] == "succeeded", run
    assert run["workflow_version"] == 1
    statuses = {step["key"]: step["status"] for step in run["steps"]}
    assert statuses == {
        "research": "succeeded",
        "outline": "succeeded",
        "write": "skipped",
        "optimize": "skipped",
        "score": "skipped",
        "finalize": "succeeded",
    }
    assert run["result"] is None  # no article was written
    assert run["credits_used"] >= 1  # the outline's call is paid


@pytest.mark.own_org
def test_test_run_refusals_roles_and_other_organizations(runner: Runner, other: Writer) -> None:
    workflow = runner.workflow(RESEARCH, OUTLINE, WRITE)
    wid = workflow["id"]

    unknown = runner.request("workflows.testRun", {"id": wid, "topic": TOPIC, "stopAfterStep": "x"})
    assert problem(unknown, 400, "BAD_REQUEST")["errors"][0]["path"] == "stopAfterStep"
    no_version = runner.request("workflows.testRun", {"id": wid, "topic": TOPIC, "version": 4})
    problem(no_version, 404, "NOT_FOUND")
    for bad in ({"topic": "ab"}, {"topic": "x" * 301}, {"topic": "ok topic", "version": 0}):
        problem(runner.request("workflows.testRun", {"id": wid, **bad}), 400, "BAD_REQUEST")
    broken = runner.workflow(RESEARCH, WRITE)  # a write with no outline before it
    invalid = runner.request("workflows.testRun", {"id": broken["id"], "topic": TOPIC})
    assert "violations" in problem(invalid, 400, "BAD_REQUEST")
    member = runner.request("workflows.testRun", {"id": wid, "topic": TOPIC}, role="member")
    problem(member, 403, "FORBIDDEN")
    theirs = other.request("workflows.testRun", {"id": wid, "topic": TOPIC}, role="admin")
    problem(theirs, 404, "NOT_FOUND")

    # Nothing to write from: it fails at research, and leaves no draft behind.
    failed = runner.until(runner.test_run(wid)["id"], *ENDED)
    assert failed["status"] == "failed"
    assert (failed["error"]["code"], failed["error"]["step_key"]) == ("NO_SOURCES", "research")
    assert [s["status"] for s in failed["steps"]][:2] == ["failed", "skipped"]
    assert runner.ok("drafts.list", {}, role="member")["total"] == 0

    runner.handbook()
    run = runner.until(runner.test_run(wid)["id"], *ENDED)
    problem(other.request("workflows.getRun", {"id": run["id"]}), 404, "NOT_FOUND")
    problem(other.request("workflows.cancelRun", {"id": run["id"]}), 404, "NOT_FOUND")
    assert other.ok("workflows.listRuns", {})["total"] == 0
    problem(runner.request("workflows.cancelRun", {"id": run["id"]}), 409, "CONFLICT")
    problem(
        runner.request("workflows.cancelRun", {"id": run["id"]}, role="member"), 403, "FORBIDDEN"
    )
    listed = runner.request(
        "workflows.listRuns", {"dateFrom": "2026-02-02", "dateTo": "2026-02-01"}
    )
    problem(listed, 400, "BAD_REQUEST")


def test_a_review_gate_waits_for_approval_then_the_run_finishes_the_draft(runner: Runner) -> None:
    runner.handbook()
    workflow = runner.workflow(RESEARCH, OUTLINE, WRITE, FACTS, GATE, OPTIMIZE)

    started = runner.test_run(workflow["id"], createDraft=True)
    waiting = runner.until(started["id"], "waiting_review")
    steps = by_key(waiting)
    assert steps["gate"]["status"] == "waiting"
    assert steps["optimize"]["status"] == "pending"
    assert waiting["waiting_until"] is not None
    draft = runner.draft(waiting["draft_id"])
    assert draft["status"] == "reviewing" and draft["content"]

    # The reviewer edits the title and approves: the run goes on from the draft as they left it.
    runner.ok("drafts.update", {"id": draft["id"], "title": "Watering, reviewed"}, role="editor")
    runner.ok("drafts.approve", {"id": draft["id"]}, role="editor")
    run = runner.until(started["id"], *ENDED)
    assert run["status"] == "succeeded", run
    steps = by_key(run)
    assert steps["gate"]["status"] == "succeeded"
    assert steps["gate"]["output_summary"].startswith("Approved by ")
    assert steps["optimize"]["status"] == "succeeded"
    finished = runner.draft(draft["id"])
    assert finished["status"] == "approved"  # the steps after the gate keep the approval
    assert finished["title"] == "Watering, reviewed"
    provenance = finished["provenance"]
    assert provenance["review_gates"][0]["step"] == "gate"
    assert provenance["fact_check"]["checked"] >= 1
    assert provenance["fact_check"]["unsupported"] == []


def test_a_rejected_gate_fails_the_run_and_a_waiting_run_can_be_cancelled(
    runner: Runner,
) -> None:
    runner.handbook()
    workflow = runner.workflow(RESEARCH, OUTLINE, WRITE, GATE)

    rejected = runner.test_run(workflow["id"], createDraft=True)
    waiting = runner.until(rejected["id"], "waiting_review")
    runner.ok("drafts.reject", {"id": waiting["draft_id"], "reason": "Off brand"}, role="editor")
    run = runner.until(rejected["id"], *ENDED)
    assert run["status"] == "failed"
    assert run["error"]["code"] == "REJECTED_AT_REVIEW"
    assert run["error"]["step_key"] == "gate"
    assert "Off brand" in run["error"]["message"]
    assert runner.draft(waiting["draft_id"])["status"] == "rejected"

    cancelled = runner.test_run(workflow["id"], createDraft=True)
    waiting = runner.until(cancelled["id"], "waiting_review")
    answer = runner.ok("workflows.cancelRun", {"id": cancelled["id"]}, role="editor")
    assert answer["status"] == "cancelled"
    assert by_key(answer)["gate"]["status"] == "cancelled"
    assert runner.draft(waiting["draft_id"])["status"] == "reviewing"  # kept for the team
    again = runner.request("workflows.cancelRun", {"id": cancelled["id"]}, role="editor")
    problem(again, 409, "CONFLICT")


@pytest.mark.own_org
def test_at_most_three_test_runs_go_at_once(runner: Runner) -> None:
    runner.handbook()
    workflow = runner.workflow(RESEARCH, OUTLINE, WRITE, GATE)
    going = [runner.test_run(workflow["id"], createDraft=True) for _ in range(3)]
    for run in going:
        runner.until(run["id"], "waiting_review")
    fourth = runner.request("workflows.testRun", {"id": workflow["id"], "topic": TOPIC})
    problem(fourth, 429, "TOO_MANY_REQUESTS")
    runner.ok("workflows.cancelRun", {"id": going[0]["id"]}, role="editor")
    assert runner.test_run(workflow["id"])["status"] == "queued"
    for run in going[1:]:
        runner.ok("workflows.cancelRun", {"id": run["id"]}, role="editor")


def test_a_job_pinned_to_version_2_keeps_it_after_version_3_is_published(
    runner: Runner,
) -> None:
    runner.handbook()
    designer = runner.designer
    workflow = runner.workflow(RESEARCH, OUTLINE, WRITE, GATE, publish=True)  # version 1
    designer.update(workflow["id"], steps=[RESEARCH, OUTLINE, WRITE, FACTS, GATE])
    designer.publish(workflow["id"])  # version 2
    pinned = runner.job(workflowId=workflow["id"], workflowVersion=2)
    assert pinned["workflow_version"] == 2
    live = runner.job(name="Follows the live version", workflowId=workflow["id"])

    first = runner.ok("jobs.trigger", {"id": pinned["id"]}, role="editor")
    waiting = runner.until(first["run_id"], "waiting_review")
    assert (waiting["trigger"], waiting["job_instance_id"]) == ("job_instance", first["id"])
    assert waiting["workflow_version"] == 2

    designer.update(workflow["id"], steps=[RESEARCH, OUTLINE, WRITE, OPTIMIZE])
    designer.publish(workflow["id"])  # version 3: no gate
    # The run in flight keeps its version, and so does the pinned job's next run.
    assert [s["key"] for s in runner.run(first["run_id"])["steps"]][3:5] == ["facts", "gate"]
    runner.ok("drafts.approve", {"id": waiting["draft_id"]}, role="editor")
    assert runner.until(first["run_id"], *ENDED)["status"] == "succeeded"
    runner.wait_instance(first["id"])
    second = runner.ok("jobs.trigger", {"id": pinned["id"]}, role="editor")
    assert runner.run(second["run_id"])["workflow_version"] == 2
    runner.ok("workflows.cancelRun", {"id": second["run_id"]}, role="editor")

    unpinned = runner.ok("jobs.trigger", {"id": live["id"]}, role="editor")
    assert runner.run(unpinned["run_id"])["workflow_version"] == 3
    assert runner.until(unpinned["run_id"], *ENDED)["status"] == "succeeded"

    missing = runner.request("jobs.update", {"id": live["id"], "workflowVersion": 9})
    assert problem(missing, 400, "BAD_REQUEST")["errors"][0]["path"] == "workflowVersion"
    unnamed = runner.request(
        "jobs.create", {"name": "No workflow", "topics": ["Drip lines"], "workflowVersion": 1}
    )
    assert problem(unnamed, 400, "BAD_REQUEST")["errors"][0]["path"] == "workflowVersion"


def published_as(settings: Settings, draft_id: str, url: str) -> None:
    """The draft published at `url`, as a publish to a target leaves it."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(Draft)
                .where(Draft.id == uuid.UUID(draft_id))
                .values(status="published", published_url=url, published_at=datetime.now(UTC))
            )

    run_on(settings, scenario)


def test_links_go_to_published_posts_and_images_come_from_the_library(
    runner: Runner, settings: Settings
) -> None:
    runner.handbook()
    url = "https://blog.example.com/watering-schedules-that-save-water"
    post = runner.ok(
        "drafts.createDraft",
        {"title": "Watering schedules that save water", "content": "<p>Water early.</p>"},
    )
    published_as(settings, post["id"], url)
    elsewhere = runner.ok(
        "drafts.createDraft", {"title": "Our office party", "content": "<p>Cake.</p>"}
    )
    published_as(settings, elsewhere["id"], "https://blog.example.com/office-party")
    media = Media.of(runner)
    photo = media.add(jpeg(640, 480), altText="A watering schedule on the controller")
    cat = media.add(jpeg(640, 480), filename="cat.jpg", altText="A cat asleep", tags=["cat"])
    images = {"key": "images", "type": "images", "config": {"count": 0}}
    workflow = runner.workflow(RESEARCH, OUTLINE, images, WRITE, LINKS)

    started = runner.test_run(workflow["id"], createDraft=True)
    run = runner.until(started["id"], *ENDED)

    assert run["status"] == "succeeded", run
    steps = by_key(run)
    assert steps["links"]["output_summary"] == "1 internal link added"
    assert steps["images"]["output_summary"] == "1 image chosen from the library"
    draft = runner.draft(run["draft_id"])
    page = BeautifulSoup(draft["content"], "html.parser")
    related = page.find("h2", id="related-reading")
    assert related is not None
    links = [(a.get_text(), a["href"]) for a in related.find_next("ul").find_all("a")]
    assert links == [("Watering schedules that save water", url)]
    assert draft["provenance"]["internal_links"] == [
        {"title": "Watering schedules that save water", "url": url}
    ]
    used = media.usage(photo["id"])["data"]
    assert [(u["draft_id"], u["role"]) for u in used] == [(run["draft_id"], "featured")]
    assert media.usage(cat["id"])["total"] == 0
