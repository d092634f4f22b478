"""What the generation engine asks of workflows (workflows.service, below the API): the steps of a
workflow at a version, and the definition a job's new run follows (the job's workflow's live
version, else the organization's default's, else the built-in definition), with runs in flight
keeping theirs."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.workflows import catalog, service
from contentplatform.workflows.errors import WorkflowVersionNotFound
from tests.support.database import run_on
from tests.support.orgs import org_fixture
from tests.workflows.support import STANDARD, Designer, steps

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

designer = org_fixture(Designer)
other = org_fixture(Designer, second=True)


def ask(settings: Settings, question: Any) -> Any:
    """`await question(session)` in a unit of work of its own."""

    async def scenario(db: Database) -> Any:
        async with db.unit_of_work() as session:
            return await question(session)

    return run_on(settings, scenario)


def short() -> list[dict[str, Any]]:
    return steps(base=STANDARD[:3])


@pytest.mark.own_org
def test_without_any_workflow_a_job_runs_the_builtin_definition(
    settings: Settings, designer: Designer
) -> None:
    tenant = designer.tenant_id
    found = ask(settings, lambda s: service.definition_for_job(s, tenant, None))
    assert (found.workflow_id, found.version, found.name) == (None, None, "Standard article")
    assert list(found.steps) == catalog.builtin_default()["steps"]
    assert [step["type"] for step in found.steps] == ["research", "outline", "write", "optimize"]
    assert found == service.builtin_definition()
    # A draft workflow (never published) changes nothing.
    designer.workflow()
    assert ask(settings, lambda s: service.definition_for_job(s, tenant, None)) == found


def test_the_default_then_the_jobs_own_workflow(settings: Settings, designer: Designer) -> None:
    tenant = designer.tenant_id
    default = designer.published(name="House style", steps=short())
    designer.make_default(default["id"])
    own = designer.published(name="Own")

    by_default = ask(settings, lambda s: service.definition_for_job(s, tenant, None))
    assert (str(by_default.workflow_id), by_default.version) == (default["id"], 1)
    assert by_default.name == "House style"
    assert list(by_default.steps) == default["steps"]

    own_id = uuid.UUID(own["id"])
    named = ask(settings, lambda s: service.definition_for_job(s, tenant, own_id))
    assert (named.workflow_id, named.version) == (own_id, 1)
    assert ask(settings, lambda s: service.default_definition(s, tenant)) == by_default


@pytest.mark.own_org
def test_new_runs_take_the_new_version_and_old_versions_stay_readable(
    settings: Settings, designer: Designer
) -> None:
    tenant = designer.tenant_id
    created = designer.published(steps=short())
    workflow_id = uuid.UUID(created["id"])
    started = ask(settings, lambda s: service.definition_for_job(s, tenant, workflow_id))
    assert started.version == 1

    designer.update(created["id"], steps=steps())
    # The working definition is no version: runs keep following version 1 until it is published.
    assert ask(settings, lambda s: service.definition_for_job(s, tenant, workflow_id)) == started
    working = ask(settings, lambda s: service.working_definition(s, tenant, workflow_id))
    assert (working.version, len(working.steps)) == (None, 4)

    designer.publish(created["id"])
    new = ask(settings, lambda s: service.definition_for_job(s, tenant, workflow_id))
    assert (new.version, len(new.steps)) == (2, 4)
    # A run that started on version 1 reads version 1, even once the workflow is deleted.
    designer.ok("workflows.delete", {"id": created["id"]}, role="admin")
    kept = ask(settings, lambda s: service.definition_at(s, tenant, workflow_id, 1))
    assert kept == started
    # Deleted: jobs still naming it (none may) would fall back to the default.
    fallback = ask(settings, lambda s: service.definition_for_job(s, tenant, workflow_id))
    assert fallback == service.builtin_definition()


def test_an_unknown_version_or_another_organizations_is_not_found(
    settings: Settings, designer: Designer, other: Designer
) -> None:
    created = designer.published()
    workflow_id = uuid.UUID(created["id"])
    with pytest.raises(WorkflowVersionNotFound):
        ask(settings, lambda s: service.definition_at(s, designer.tenant_id, workflow_id, 2))
    theirs = other.tenant_id
    with pytest.raises(WorkflowVersionNotFound):
        ask(settings, lambda s: service.definition_at(s, theirs, workflow_id, 1))
    # Another organization's workflow named by id is never followed.
    found = ask(settings, lambda s: service.definition_for_job(s, theirs, workflow_id))
    assert found == service.builtin_definition()
