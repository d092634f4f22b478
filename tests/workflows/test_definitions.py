"""workflows.create, getById, update, list and delete over REST and RPC: the record and its
stored steps (names and configs filled in), definitions saved even when they break the rules,
text rules and bounds, the optimistic lock, archiving, soft delete, the roles, and a second
organization that sees none of it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.bounds import PAGE_BOUNDS
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.workflows.support import STANDARD, Designer, steps

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

designer = org_fixture(Designer)
other = org_fixture(Designer, second=True)

WORKFLOW_FIELDS = {
    *("id", "tenant_id", "name", "description", "status", "steps", "published_version"),
    *("latest_version", "is_default", "has_unpublished_changes", "created_by"),
    *("created_at", "updated_at"),
}
STEP_FIELDS = {"key", "type", "name", "enabled", "config", "on_error", "retries", "timeout_seconds"}
SUMMARY_FIELDS = {
    *("id", "name", "description", "status", "step_types", "published_version"),
    *("latest_version", "is_default", "updated_at"),
}


def test_an_editor_creates_a_workflow_and_its_steps_are_filled_in(designer: Designer) -> None:
    created = designer.workflow(
        name="  Long-form <b>guide</b> ",
        description="Deeper articles.\nReviewed before they go out.",
        steps=steps(
            base=[
                {"key": "research", "type": "research", "config": {"maxSources": 12}},
                {"key": "outline", "type": "outline", "name": "Plan"},
                {
                    "key": "write",
                    "type": "write",
                    "config": {"targetWords": 2000},
                    "onError": "retry",
                    "retries": 2,
                    "timeoutSeconds": 900,
                },
            ]
        ),
    )
    assert set(created) == WORKFLOW_FIELDS
    assert created["tenant_id"] == str(designer.tenant_id)
    assert created["name"] == "Long-form guide"  # plain text, trimmed
    assert created["description"] == "Deeper articles.\nReviewed before they go out."
    assert (created["status"], created["is_default"]) == ("active", False)
    assert (created["published_version"], created["latest_version"]) == (None, 0)
    assert created["has_unpublished_changes"] is True
    assert created["created_by"] == designer.users["editor"]
    research, outline, write = created["steps"]
    assert all(set(step) == STEP_FIELDS for step in created["steps"])
    assert research == {
        "key": "research",
        "type": "research",
        "name": "Research",  # the type's label
        "enabled": True,
        "config": {"maxSources": 12, "useWebsitePages": True, "minRelevance": 0.3},
        "on_error": "fail",
        "retries": 0,
        "timeout_seconds": 300,
    }
    assert outline["name"] == "Plan"
    assert outline["config"] == {"minSections": 2, "maxSections": 5, "keyTakeaways": True}
    assert write["config"] == {"targetWords": 2000, "tone": "brand_voice"}
    assert (write["on_error"], write["retries"], write["timeout_seconds"]) == ("retry", 2, 900)
    assert designer.get(created["id"]) == created


def test_a_definition_that_breaks_the_rules_is_saved_all_the_same(designer: Designer) -> None:
    broken = [
        {"key": "write", "type": "write", "config": {"targetWords": 50, "colour": "red"}},
        {"key": "write", "type": "optimize"},
    ]
    created = designer.workflow(steps=broken)
    assert [step["key"] for step in created["steps"]] == ["write", "write"]
    assert created["steps"][0]["config"] == {
        "targetWords": 50,
        "colour": "red",
        "tone": "brand_voice",
    }
    assert (created["published_version"], created["has_unpublished_changes"]) == (None, True)
    assert designer.validate(workflowId=created["id"])["valid"] is False


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "n" * 101}, "name"),
        ({"name": "Guide\x00"}, "name"),
        ({"name": "Guide\u202e"}, "name"),
        ({"description": "d" * 501}, "description"),
        ({"description": "bad\x00"}, "description"),
        ({"steps": []}, "steps"),
        (
            {"steps": steps(*({"key": f"gate-{i}", "type": "review_gate"} for i in range(9)))},
            "steps",
        ),
        ({"steps": [{"key": "", "type": "write"}]}, "steps.0.key"),
        ({"steps": [{"key": "k" * 41, "type": "write"}]}, "steps.0.key"),
        ({"steps": [{"key": "Write Step", "type": "write"}]}, "steps.0.key"),
        ({"steps": [{"key": "write-", "type": "write"}]}, "steps.0.key"),
        ({"steps": [{"key": "write", "type": "translate"}]}, "steps.0.type"),
        ({"steps": [{"key": "write"}]}, "steps.0.type"),
        ({"steps": [{"key": "write", "type": "write", "name": "n" * 101}]}, "steps.0.name"),
        ({"steps": [{"key": "write", "type": "write", "name": " "}]}, "steps.0.name"),
        ({"steps": [{"key": "write", "type": "write", "onError": "ignore"}]}, "steps.0.onError"),
        ({"steps": [{"key": "write", "type": "write", "retries": 4}]}, "steps.0.retries"),
        ({"steps": [{"key": "write", "type": "write", "retries": -1}]}, "steps.0.retries"),
        (
            {"steps": [{"key": "write", "type": "write", "timeoutSeconds": 9}]},
            "steps.0.timeoutSeconds",
        ),
        (
            {"steps": [{"key": "write", "type": "write", "timeoutSeconds": 1801}]},
            "steps.0.timeoutSeconds",
        ),
        ({"steps": [{"key": "write", "type": "write", "config": "long"}]}, "steps.0.config"),
        (
            {"steps": [{"key": "write", "type": "write", "config": {"tone": "a\x00"}}]},
            "steps.0.config",
        ),
        (
            {"steps": [{"key": "w", "type": "write", "config": {"x": "y" * 10_001}}]},
            "steps.0.config",
        ),
        ({"steps": [{"key": "write", "type": "write", "colour": "red"}]}, "steps.0.colour"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_input_out_of_bounds_is_400_naming_it(
    designer: Designer, fields: dict[str, Any], path: str
) -> None:
    data = {"name": "Guide", "steps": steps(), **fields}
    body = problem(designer.request("workflows.create", data), 400, "BAD_REQUEST")
    assert path in {error["path"] for error in body["errors"]}, body
    assert designer.listed()["total"] == 0


def test_an_update_changes_only_what_it_gives(designer: Designer) -> None:
    created = designer.workflow(description="First words.")
    renamed = designer.update(created["id"], name="Short guide")
    assert renamed["name"] == "Short guide"
    assert renamed["description"] == "First words." and renamed["steps"] == created["steps"]
    assert renamed["updated_at"] > created["updated_at"]
    assert renamed["created_at"] == created["created_at"]

    new_steps = steps(base=STANDARD[:3])
    changed = designer.update(created["id"], steps=new_steps, description=None)
    assert [step["key"] for step in changed["steps"]] == ["research", "outline", "write"]
    assert changed["description"] is None and changed["name"] == "Short guide"
    # null for name, steps and status changes nothing.
    same = designer.update(created["id"], name=None, steps=None, status=None)
    assert same == changed
    assert designer.get(created["id"]) == changed


def test_an_update_with_nothing_new_leaves_the_workflow_as_it_is(designer: Designer) -> None:
    created = designer.workflow()
    assert designer.update(created["id"]) == created
    assert designer.update(created["id"], name=created["name"], steps=steps()) == created


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"name": ""}, "name"),
        ({"steps": []}, "steps"),
        ({"status": "deleted"}, "status"),
        ({"expectedUpdatedAt": "yesterday"}, "expectedUpdatedAt"),
        ({"expectedUpdatedAt": "2030-01-01T09:00:00"}, "expectedUpdatedAt"),  # no offset
        ({"steps": [{"key": "write", "type": "write", "retries": 9}]}, "steps.0.retries"),
    ],
)
def test_an_update_out_of_bounds_is_400_and_changes_nothing(
    designer: Designer, fields: dict[str, Any], path: str
) -> None:
    created = designer.workflow()
    response = designer.request("workflows.update", {"id": created["id"], **fields})
    body = problem(response, 400, "BAD_REQUEST")
    assert path in {error["path"] for error in body["errors"]}, body
    assert designer.get(created["id"]) == created


def test_a_stale_expected_updated_at_is_409_and_changes_nothing(designer: Designer) -> None:
    created = designer.workflow()
    fresh = designer.update(
        created["id"], name="Mine", expectedUpdatedAt=created["updated_at"]
    )  # current: accepted
    assert fresh["name"] == "Mine"
    # A second editor still holding the first read loses, rather than overwriting.
    stale = {"id": created["id"], "name": "Theirs", "expectedUpdatedAt": created["updated_at"]}
    body = designer.refused("workflows.update", stale, 409, "CONFLICT", role="editor")
    assert body["updatedAt"] == fresh["updated_at"]
    assert designer.get(created["id"])["name"] == "Mine"
    # Publishing changes the workflow too: a read from before it is stale.
    designer.publish(created["id"])
    refused = {"id": created["id"], "steps": steps(), "expectedUpdatedAt": fresh["updated_at"]}
    designer.refused("workflows.update", refused, 409, "CONFLICT", role="editor")
    current = designer.get(created["id"])
    assert (
        designer.update(created["id"], name="Ours", expectedUpdatedAt=current["updated_at"])["name"]
        == "Ours"
    )


@pytest.mark.own_org
def test_archiving_hides_it_from_the_list_but_not_the_default(designer: Designer) -> None:
    kept = designer.workflow(name="Kept")
    archived = designer.update(designer.workflow(name="Old")["id"], status="archived")
    assert archived["status"] == "archived"
    assert [w["id"] for w in designer.listed()["data"]] == [kept["id"]]
    assert [w["id"] for w in designer.listed(status="archived")["data"]] == [archived["id"]]
    assert designer.listed(status="all")["total"] == 2
    assert designer.update(archived["id"], status="active")["status"] == "active"

    default = designer.published(name="Default")
    designer.make_default(default["id"])
    body = designer.refused(
        "workflows.update", {"id": default["id"], "status": "archived"}, 409, "CONFLICT"
    )
    assert "default" in body["detail"]
    assert designer.get(default["id"])["status"] == "active"


@pytest.mark.own_org
def test_the_list_pages_searches_and_puts_the_default_first(designer: Designer) -> None:
    guide = designer.workflow(name="Long-form guide", description="Deep dives")
    news = designer.workflow(name="News brief", steps=steps(base=STANDARD[:3]))
    recipe = designer.published(name="Recipes")

    listed = designer.listed()
    assert (listed["total"], listed["page"], listed["limit"]) == (3, 1, 20)
    # The most recently changed first.
    assert [w["id"] for w in listed["data"]] == [recipe["id"], news["id"], guide["id"]]
    summary = listed["data"][1]
    assert set(summary) == SUMMARY_FIELDS
    assert summary["step_types"] == ["research", "outline", "write"]
    assert (summary["published_version"], summary["latest_version"]) == (None, 0)
    assert listed["data"][0]["published_version"] == 1

    designer.make_default(recipe["id"])
    designer.update(guide["id"], name="Long-form guides")
    assert [w["id"] for w in designer.listed()["data"]] == [recipe["id"], guide["id"], news["id"]]
    assert designer.listed()["data"][0]["is_default"] is True

    assert [w["id"] for w in designer.listed(search="BRIEF")["data"]] == [news["id"]]
    assert [w["id"] for w in designer.listed(search="deep")["data"]] == [guide["id"]]
    assert designer.listed(search="100%")["total"] == 0
    second = designer.listed(page=2, limit=2)
    assert (second["total"], [w["id"] for w in second["data"]]) == (3, [news["id"]])
    for query, path in [*PAGE_BOUNDS, ({"status": "gone"}, "status")]:
        response = designer.request("workflows.list", query, role="member")
        assert path in {e["path"] for e in problem(response, 400, "BAD_REQUEST")["errors"]}


@pytest.mark.own_org
def test_delete_hides_the_workflow_everywhere(designer: Designer) -> None:
    gone = designer.published(name="Gone")
    kept = designer.workflow(name="Kept")
    assert designer.ok("workflows.delete", {"id": gone["id"]}, role="admin") == {"success": True}
    ref = {"id": gone["id"]}
    for operation, data, role in (
        ("workflows.getById", ref, "member"),
        ("workflows.update", {**ref, "name": "Back"}, "editor"),
        ("workflows.delete", ref, "admin"),
        ("workflows.publishVersion", ref, "editor"),
        ("workflows.listVersions", ref, "member"),
        ("workflows.rollback", {**ref, "version": 1}, "editor"),
        ("workflows.setDefault", ref, "admin"),
        ("workflows.validate", {"workflowId": gone["id"]}, "editor"),
    ):
        body = problem(designer.request(operation, data, role=role), 404, "NOT_FOUND")
        assert gone["id"] in body["detail"], operation
    assert [w["id"] for w in designer.listed(status="all")["data"]] == [kept["id"]]


def test_the_default_cannot_be_deleted(designer: Designer) -> None:
    default = designer.published()
    designer.make_default(default["id"])
    body = designer.refused("workflows.delete", {"id": default["id"]}, 409, "CONFLICT")
    assert "default" in body["detail"] and body["jobIds"] == []
    assert designer.get(default["id"])["is_default"] is True


@pytest.mark.own_org
def test_each_operation_needs_its_role(designer: Designer) -> None:
    created = designer.published()
    ref = {"id": created["id"]}
    for operation, data, role in (
        ("workflows.create", {"name": "Guide", "steps": steps()}, "member"),
        ("workflows.update", {**ref, "name": "Renamed"}, "member"),
        ("workflows.validate", {"steps": steps()}, "member"),
        ("workflows.publishVersion", ref, "member"),
        ("workflows.rollback", {**ref, "version": 1}, "member"),
        ("workflows.setDefault", ref, "member"),
        ("workflows.setDefault", ref, "editor"),
        ("workflows.delete", ref, "member"),
        ("workflows.delete", ref, "editor"),
    ):
        problem(designer.request(operation, data, role=role), 403, "FORBIDDEN")
    assert designer.get(created["id"]) == created
    assert designer.listed(role="member")["total"] == 1
    assert designer.versions(created["id"], role="member")["total"] == 1
    assert designer.ok("workflows.stepTypes", role="member")["data"]


def test_another_organization_sees_none_of_it(designer: Designer, other: Designer) -> None:
    created = designer.published()
    designer.make_default(created["id"])
    ref = {"id": created["id"]}
    for operation, data in (
        ("workflows.getById", ref),
        ("workflows.update", {**ref, "name": "Mine now"}),
        ("workflows.delete", ref),
        ("workflows.validate", {"workflowId": created["id"]}),
        ("workflows.publishVersion", ref),
        ("workflows.listVersions", ref),
        ("workflows.rollback", {**ref, "version": 1}),
        ("workflows.setDefault", ref),
    ):
        problem(other.request(operation, data, role="admin"), 404, "NOT_FOUND")
    assert other.listed(status="all")["total"] == 0
    assert other.listed(search="guide")["total"] == 0
    assert designer.get(created["id"]) == designer.get(created["id"]) | {"is_default": True}
    assert designer.versions(created["id"])["total"] == 1
