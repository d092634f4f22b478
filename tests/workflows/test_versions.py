"""workflows.publishVersion, listVersions, rollback and setDefault over REST and RPC: versions
numbered from 1 and frozen, nothing to publish is 409, history kept through a rollback (1, 2, 3,
then a rollback to 1 gives 4 copied from 1), the working definition reset by it, one default per
organization, and a second organization that sees none of it."""

from __future__ import annotations

import pytest

from tests.support.bounds import MALFORMED_IDS
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.workflows.support import STANDARD, Designer, steps

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

designer = org_fixture(Designer)
other = org_fixture(Designer, second=True)

VERSION_FIELDS = {
    *("workflow_id", "version", "steps", "notes", "source_version", "created_by"),
    "created_at",
}


def words(target: int) -> list[dict]:
    """The standard steps, writing `target` words."""
    return steps(
        base=[
            *STANDARD[:2],
            {"key": "write", "type": "write", "config": {"targetWords": target}},
            STANDARD[3],
        ]
    )


def test_publishing_freezes_the_working_definition_as_version_1(designer: Designer) -> None:
    created = designer.workflow()
    version = designer.publish(created["id"], notes="  First <i>cut</i>. ")
    assert set(version) == VERSION_FIELDS
    assert (version["workflow_id"], version["version"]) == (created["id"], 1)
    assert version["steps"] == created["steps"]
    assert version["notes"] == "First cut."
    assert version["source_version"] is None
    assert version["created_by"] == designer.users["editor"]

    live = designer.get(created["id"])
    assert (live["published_version"], live["latest_version"]) == (1, 1)
    assert live["has_unpublished_changes"] is False
    assert live["updated_at"] > created["updated_at"]


def test_publishing_nothing_new_is_409(designer: Designer) -> None:
    created = designer.published()
    body = designer.refused(
        "workflows.publishVersion", {"id": created["id"]}, 409, "CONFLICT", role="editor"
    )
    assert "version 1" in body["detail"]
    # A change, then the same definition back: nothing changed since version 1 either.
    designer.update(created["id"], steps=words(2000))
    assert designer.get(created["id"])["has_unpublished_changes"] is True
    designer.update(created["id"], steps=steps())
    assert designer.get(created["id"])["has_unpublished_changes"] is False
    designer.refused(
        "workflows.publishVersion", {"id": created["id"]}, 409, "CONFLICT", role="editor"
    )
    assert designer.versions(created["id"])["total"] == 1


def test_versions_are_immutable_and_listed_newest_first(designer: Designer) -> None:
    created = designer.workflow(steps=words(1000))
    designer.publish(created["id"], notes="one")
    designer.update(created["id"], steps=words(2000))
    designer.publish(created["id"], notes="two")
    designer.update(created["id"], steps=words(3000), name="Renamed")
    third = designer.publish(created["id"], notes="three")
    assert third["version"] == 3
    # An edit after publishing changes the working definition, never a version.
    designer.update(created["id"], steps=words(4000))
    assert designer.get(created["id"])["has_unpublished_changes"] is True

    listed = designer.versions(created["id"])
    assert (listed["total"], listed["page"], listed["limit"]) == (3, 1, 20)
    assert [v["version"] for v in listed["data"]] == [3, 2, 1]
    assert [v["notes"] for v in listed["data"]] == ["three", "two", "one"]
    assert all(v["steps"] is None for v in listed["data"])
    full = designer.versions(created["id"], includeSteps=True)
    assert [v["steps"][2]["config"]["targetWords"] for v in full["data"]] == [3000, 2000, 1000]
    assert full["data"][0] == third
    second = designer.versions(created["id"], page=2, limit=2)
    assert [v["version"] for v in second["data"]] == [1]
    for query, path in (
        ({"page": 0}, "page"),
        ({"limit": 101}, "limit"),
        ({"includeSteps": "perhaps"}, "includeSteps"),
    ):
        response = designer.request(
            "workflows.listVersions", {"id": created["id"], **query}, role="member"
        )
        assert path in {e["path"] for e in problem(response, 400, "BAD_REQUEST")["errors"]}


def test_rollback_appends_a_copy_and_keeps_history(designer: Designer) -> None:
    created = designer.workflow(steps=words(1000))
    first = designer.publish(created["id"])
    for target in (2000, 3000):
        designer.update(created["id"], steps=words(target))
        designer.publish(created["id"])
    designer.update(created["id"], steps=words(4000))  # unpublished work, reset by the rollback

    fourth = designer.rollback(created["id"], 1, notes="Back to short articles.")
    assert (fourth["version"], fourth["source_version"]) == (4, 1)
    assert fourth["steps"] == first["steps"]
    assert fourth["notes"] == "Back to short articles."
    assert fourth["created_by"] == designer.users["editor"]

    live = designer.get(created["id"])
    assert (live["published_version"], live["latest_version"]) == (4, 4)
    assert live["steps"] == first["steps"]
    assert live["has_unpublished_changes"] is False

    listed = designer.versions(created["id"], includeSteps=True)
    assert [(v["version"], v["source_version"]) for v in listed["data"]] == [
        (4, 1),
        (3, None),
        (2, None),
        (1, None),
    ]
    assert [v["steps"][2]["config"]["targetWords"] for v in listed["data"]] == [
        1000,
        3000,
        2000,
        1000,
    ]
    assert listed["data"][3] == first  # version 1 itself is untouched
    # Rolling back to the version that is live appends again: history only grows.
    assert designer.rollback(created["id"], 4)["version"] == 5


def test_rollback_to_an_unknown_version_is_404(designer: Designer) -> None:
    created = designer.published()
    for version in (2, 99):
        body = designer.refused(
            "workflows.rollback", {"id": created["id"], "version": version}, 404, "NOT_FOUND"
        )
        assert f"no version {version}" in body["detail"]
    for version in (0, -1, 2**31):
        body = designer.refused(
            "workflows.rollback", {"id": created["id"], "version": version}, 400, "BAD_REQUEST"
        )
        assert "version" in {error["path"] for error in body["errors"]}
    body = designer.refused(
        "workflows.rollback",
        {"id": created["id"], "notes": "n" * 501, "version": 1},
        400,
        "BAD_REQUEST",
    )
    assert "notes" in {error["path"] for error in body["errors"]}
    assert designer.versions(created["id"])["total"] == 1


def test_publish_notes_are_bounded(designer: Designer) -> None:
    created = designer.workflow()
    for notes in ("n" * 501, "bad\x00"):
        body = designer.refused(
            "workflows.publishVersion", {"id": created["id"], "notes": notes}, 400, "BAD_REQUEST"
        )
        assert "notes" in {error["path"] for error in body["errors"]}
    assert designer.versions(created["id"])["total"] == 0


@pytest.mark.own_org
def test_one_default_per_organization(designer: Designer, other: Designer) -> None:
    first = designer.published(name="First")
    second = designer.published(name="Second")
    assert designer.make_default(first["id"]) == {
        "id": first["id"],
        "is_default": True,
        "previous_default_id": None,
    }
    theirs = other.published(name="Theirs")
    assert other.make_default(theirs["id"])["previous_default_id"] is None  # per organization

    assert designer.make_default(second["id"]) == {
        "id": second["id"],
        "is_default": True,
        "previous_default_id": first["id"],
    }
    assert designer.get(first["id"])["is_default"] is False
    assert designer.get(second["id"])["is_default"] is True
    assert [w["id"] for w in designer.listed()["data"] if w["is_default"]] == [second["id"]]
    # The default again: nothing changes.
    assert designer.make_default(second["id"])["previous_default_id"] == second["id"]
    assert other.get(theirs["id"])["is_default"] is True


@pytest.mark.own_org
def test_only_a_published_active_workflow_becomes_the_default(designer: Designer) -> None:
    draft = designer.workflow()
    body = designer.refused("workflows.setDefault", {"id": draft["id"]}, 400, "BAD_REQUEST")
    assert "no published version" in body["detail"]
    archived = designer.published()
    designer.update(archived["id"], status="archived")
    designer.refused("workflows.setDefault", {"id": archived["id"]}, 409, "CONFLICT")
    assert designer.listed(status="all")["data"][0]["is_default"] is False


@pytest.mark.parametrize("bad", MALFORMED_IDS)
def test_a_malformed_id_is_400(designer: Designer, bad: str) -> None:
    for operation, data, role in (
        ("workflows.getById", {"id": bad}, "member"),
        ("workflows.publishVersion", {"id": bad}, "editor"),
        ("workflows.listVersions", {"id": bad}, "member"),
        ("workflows.rollback", {"id": bad, "version": 1}, "editor"),
        ("workflows.setDefault", {"id": bad}, "admin"),
        ("workflows.delete", {"id": bad}, "admin"),
    ):
        problem(designer.request(operation, data, role=role), 400, "BAD_REQUEST")


def test_another_organization_cannot_publish_or_roll_back(
    designer: Designer, other: Designer
) -> None:
    created = designer.published()
    designer.update(created["id"], steps=words(2000))
    for operation, data in (
        ("workflows.publishVersion", {"id": created["id"]}),
        ("workflows.rollback", {"id": created["id"], "version": 1}),
        ("workflows.listVersions", {"id": created["id"]}),
        ("workflows.setDefault", {"id": created["id"]}),
    ):
        problem(other.request(operation, data, role="admin"), 404, "NOT_FOUND")
    assert designer.versions(created["id"])["total"] == 1
    assert designer.get(created["id"])["is_default"] is False
