"""Jobs naming a workflow, over REST and RPC: `workflowId` on jobs.create and jobs.update (a
published workflow of the organization; another's or a deleted one is 404, one never published
400), returned as `workflow_id`, copied by clone; and workflows.delete refused while a job that
is not deleted names the workflow."""

from __future__ import annotations

import uuid

import pytest

from tests.jobs.support import Planner
from tests.support.problems import problem
from tests.workflows.support import Designer

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org


@pytest.fixture
def designer(planner: Planner) -> Designer:
    """The planner's organization, seen through the workflows helpers."""
    return Designer.of(planner)


def test_a_job_names_a_published_workflow(planner: Planner, designer: Designer) -> None:
    workflow = designer.published()
    job = planner.job(workflowId=workflow["id"])
    assert job["workflow_id"] == workflow["id"]
    assert planner.ok("jobs.getById", {"id": job["id"]}, role="member") == job
    assert planner.job()["workflow_id"] is None  # none: the organization's default
    assert planner.job(workflowId=None)["workflow_id"] is None
    listed = planner.ok("jobs.page", {"search": job["name"]}, role="member")
    assert {row["workflow_id"] for row in listed["data"]} >= {workflow["id"]}


def test_an_update_sets_changes_and_clears_the_workflow(
    planner: Planner, designer: Designer
) -> None:
    first, second = designer.published(name="First"), designer.published(name="Second")
    job = planner.job()
    named = planner.ok("jobs.update", {"id": job["id"], "workflowId": first["id"]}, role="editor")
    assert named["workflow_id"] == first["id"]
    # An update that does not mention it keeps it.
    kept = planner.ok("jobs.update", {"id": job["id"], "name": "Renamed"}, role="editor")
    assert kept["workflow_id"] == first["id"]
    moved = planner.ok("jobs.update", {"id": job["id"], "workflowId": second["id"]}, role="editor")
    assert moved["workflow_id"] == second["id"]
    cleared = planner.ok("jobs.update", {"id": job["id"], "workflowId": None}, role="editor")
    assert cleared["workflow_id"] is None


def test_clone_copies_the_workflow(planner: Planner, designer: Designer) -> None:
    workflow = designer.published()
    job = planner.job(workflowId=workflow["id"])
    copy = planner.ok("jobs.clone", {"id": job["id"]}, role="editor")
    assert copy["workflow_id"] == workflow["id"]


def test_a_workflow_never_published_is_400(planner: Planner, designer: Designer) -> None:
    draft = designer.workflow()
    for operation, data in (
        ("jobs.create", {"name": "Notes", "topics": ["Mulch"], "workflowId": draft["id"]}),
        ("jobs.update", {"id": planner.job()["id"], "workflowId": draft["id"]}),
    ):
        body = problem(planner.request(operation, data, role="editor"), 400, "BAD_REQUEST")
        assert [error["path"] for error in body["errors"]] == ["workflowId"]
        assert "no published version" in body["detail"]


def test_a_workflow_of_another_organization_or_deleted_is_404(
    planner: Planner, designer: Designer, other: Planner
) -> None:
    theirs = Designer.of(other).published()
    gone = designer.published()
    designer.ok("workflows.delete", {"id": gone["id"]}, role="admin")
    job = planner.job()
    for workflow_id in (theirs["id"], gone["id"], str(uuid.uuid4())):
        for operation, data in (
            ("jobs.create", {"name": "Notes", "topics": ["Mulch"], "workflowId": workflow_id}),
            ("jobs.update", {"id": job["id"], "workflowId": workflow_id}),
        ):
            body = problem(planner.request(operation, data, role="editor"), 404, "NOT_FOUND")
            assert workflow_id in body["detail"]
    assert planner.ok("jobs.getById", {"id": job["id"]}, role="member")["workflow_id"] is None
    body = problem(
        planner.request("jobs.create", {"name": "N", "topics": ["M"], "workflowId": "nope"}),
        400,
        "BAD_REQUEST",
    )
    assert "workflowId" in {error["path"] for error in body["errors"]}


def test_a_workflow_a_job_names_cannot_be_deleted(planner: Planner, designer: Designer) -> None:
    workflow = designer.published()
    active = planner.job(workflowId=workflow["id"])
    paused = planner.job(workflowId=workflow["id"], status="paused")
    ref = {"id": workflow["id"]}

    body = designer.refused("workflows.delete", ref, 409, "CONFLICT")
    assert body["jobIds"] == [active["id"], paused["id"]]
    assert active["id"] in body["detail"]
    # A deleted job names nothing; a job given another workflow neither.
    planner.ok("jobs.delete", {"id": active["id"]}, role="admin")
    assert designer.refused("workflows.delete", ref, 409, "CONFLICT")["jobIds"] == [paused["id"]]
    planner.ok("jobs.update", {"id": paused["id"], "workflowId": None}, role="editor")
    assert designer.ok("workflows.delete", ref, role="admin") == {"success": True}
    problem(designer.request("workflows.getById", ref, role="member"), 404, "NOT_FOUND")


def test_a_job_of_another_organization_does_not_hold_a_workflow(
    planner: Planner, designer: Designer, other: Planner
) -> None:
    workflow = designer.published()
    planner.job(workflowId=workflow["id"])
    # The other organization cannot even see it, let alone delete it.
    problem(
        other.request("workflows.delete", {"id": workflow["id"]}, role="admin"), 404, "NOT_FOUND"
    )
    mine = Designer.of(other).published()
    assert Designer.of(other).ok("workflows.delete", {"id": mine["id"]}, role="admin") == {
        "success": True
    }
