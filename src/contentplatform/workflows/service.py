"""The rules of workflows: definitions, their validation, their versions and the organization's
default. Never commits.

A workflow's working definition (`steps`) is edited freely and saved even when it breaks a rule
(`validate` says which); `publishVersion` freezes it as the next version (1, 2, 3, ...) and makes
that version live, but only when it passes every rule and differs from the latest version.
Versions are never changed or removed: `rollback` copies an older one forward as a new version
(`source_version`) and resets the working definition to it. Edits take `expectedUpdatedAt` and
are refused (409) when the workflow changed since. The organization has at most one default
workflow, which must have a published version and cannot be archived or deleted.

What the generation engine asks (`Definition`, plain data): the steps of workflow W at version V
(`definition_at`), the published version a job's workflow runs (`definition_for_job`: the job's
own workflow, else the organization's default, else the built-in definition;
`definitions_for_jobs` for many tenants' jobs at once), and the built-in
definition itself (`builtin_definition`). A run reads its definition once, when it starts: a
later publish changes new runs only.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Required, utc_text, utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.kit.schemas import window_of
from contentplatform.tenants import service as tenants
from contentplatform.workflows import catalog, repository, schemas, validation
from contentplatform.workflows.errors import (
    ArchivedWorkflow,
    DefaultWorkflowArchived,
    DefinitionMissing,
    InvalidDefinition,
    NothingToPublish,
    StaleWorkflow,
    WorkflowInUse,
    WorkflowNotFound,
    WorkflowNotPublished,
    WorkflowVersionNotFound,
)
from contentplatform.workflows.models import Workflow, WorkflowVersion

# --- the step catalog ----------------------------------------------------------------------------


def step_types() -> schemas.StepTypeCatalog:
    """The step types, the rules validate checks and the built-in definition."""
    rules = [
        schemas.WorkflowRule(code=code, severity="error", description=text)
        for code, text in validation.RULES.items()
    ] + [
        schemas.WorkflowRule(code=code, severity="warning", description=text)
        for code, text in validation.WARNINGS.items()
    ]
    return schemas.StepTypeCatalog.model_validate(
        {
            "data": catalog.catalog(),
            "rules": rules,
            "builtin_default": catalog.builtin_default(),
        }
    )


def stored_steps(steps: Sequence[schemas.WorkflowStepInput]) -> list[dict[str, Any]]:
    """Steps as definitions keep them (catalog.step): named, their configs filled with their
    types' defaults."""
    return [
        catalog.step(
            step.key,
            step.type,
            name=step.name,
            enabled=step.enabled,
            config=dict(step.config),
            on_error=step.on_error,
            retries=step.retries,
            timeout_seconds=step.timeout_seconds,
        )
        for step in steps
    ]


def report(steps: Sequence[dict[str, Any]]) -> schemas.WorkflowValidation:
    found = validation.validate(steps)
    return schemas.WorkflowValidation(
        valid=found.valid,
        errors=[schemas.WorkflowViolation(**asdict(error)) for error in found.errors],
        warnings=[schemas.WorkflowWarning(**asdict(warning)) for warning in found.warnings],
        estimated_credits=found.estimated_credits,
    )


def _check_publishable(steps: Sequence[dict[str, Any]]) -> None:
    """InvalidDefinition listing every violation, unless `steps` passes every rule."""
    found = validation.validate(steps)
    if found.valid:
        return
    count = len(found.errors)
    first = found.errors[0]
    raise InvalidDefinition(
        f"The definition breaks {count} rule{'s' if count > 1 else ''} "
        f"({first.path}: {first.message}); workflows.validate lists them.",
        errors=[FieldError(error.path, f"{error.code}: {error.message}") for error in found.errors],
        extensions={"violations": [asdict(error) for error in found.errors]},
    )


def check_runnable(steps: Sequence[dict[str, Any]]) -> None:
    """InvalidDefinition unless `steps` passes every rule (a test run of a working definition)."""
    _check_publishable(steps)


# --- reading ----------------------------------------------------------------------------------


require = Required(repository.get, WorkflowNotFound)


async def _record(session: AsyncSession, workflow: Workflow) -> schemas.Workflow:
    latest = None
    if workflow.latest_version:
        latest = await repository.version(
            session, workflow.tenant_id, workflow.id, workflow.latest_version
        )
    values = {column.key: getattr(workflow, column.key) for column in Workflow.__table__.columns}
    changed = latest is None or latest.steps != workflow.steps
    return schemas.Workflow.model_validate({**values, "has_unpublished_changes": changed})


def _summary(workflow: Workflow) -> schemas.WorkflowSummary:
    return schemas.WorkflowSummary(
        id=workflow.id,
        name=workflow.name,
        description=workflow.description,
        status=workflow.status,
        step_types=[step["type"] for step in workflow.steps],
        published_version=workflow.published_version,
        latest_version=workflow.latest_version,
        is_default=workflow.is_default,
        updated_at=workflow.updated_at,
    )


def _version(row: WorkflowVersion, *, with_steps: bool = True) -> schemas.WorkflowVersion:
    return schemas.WorkflowVersion.model_validate(
        {
            "workflow_id": row.workflow_id,
            "version": row.version,
            "steps": row.steps if with_steps else None,
            "notes": row.notes,
            "source_version": row.source_version,
            "created_by": row.created_by,
            "created_at": row.created_at,
        }
    )


async def get(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID
) -> schemas.Workflow:
    return await _record(session, await require(session, tenant_id, workflow_id))


async def names(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """The names of these workflows of the organization, deleted ones too (by id)."""
    found = await repository.workflows_of(
        session, {(tenant_id, workflow_id) for workflow_id in workflow_ids}, live=False
    )
    return {workflow_id: row.name for (_, workflow_id), row in found.items()}


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListWorkflowsInput
) -> schemas.WorkflowPage:
    rows, total = await repository.page(
        session,
        tenant_id,
        search=data.search,
        status=None if data.status == "all" else data.status,
        **window_of(data),
    )
    return schemas.WorkflowPage(
        data=[_summary(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def validate(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ValidateWorkflowInput
) -> schemas.WorkflowValidation:
    """The report on `steps`, or on the working definition of `workflowId`."""
    if (data.steps is None) == (data.workflow_id is None):
        message = "Give the steps to check, or the workflowId whose working definition to check."
        raise DefinitionMissing(message, errors=[FieldError("steps", message)])
    if data.steps is not None:
        return report(stored_steps(data.steps))
    assert data.workflow_id is not None
    return report((await require(session, tenant_id, data.workflow_id)).steps)


async def list_versions(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListVersionsInput
) -> schemas.WorkflowVersionPage:
    workflow = await require(session, tenant_id, data.id)
    rows, total = await repository.page_versions(session, tenant_id, workflow.id, **window_of(data))
    return schemas.WorkflowVersionPage(
        data=[_version(row, with_steps=data.include_steps) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


# --- writing ----------------------------------------------------------------------------------


async def create(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    created_by: str,
    data: schemas.CreateWorkflowInput,
) -> schemas.Workflow:
    """Saved whatever validate would say of it: publishing is what needs it to pass."""
    workflow = Workflow(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        name=data.name,
        description=data.description or None,
        steps=stored_steps(data.steps),
        status="active",
        is_default=False,
        published_version=None,
        latest_version=0,
        created_by=created_by,
    )
    session.add(workflow)
    await session.flush()
    return await _record(session, workflow)


async def update(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateWorkflowInput
) -> schemas.Workflow:
    """Change what `data` gives; nothing to change leaves the workflow as it is (its
    `updated_at` too). Published versions never change."""
    workflow = await require(session, tenant_id, data.id, for_update=True)
    expected = data.expected_updated_at
    if expected is not None and expected != workflow.updated_at:
        changed_at = utc_text(workflow.updated_at)
        raise StaleWorkflow(
            f"The workflow changed at {changed_at}, after expectedUpdatedAt "
            f"({utc_text(expected)}): read it again.",
            extensions={"updatedAt": changed_at},
        )
    changes: dict[str, Any] = {}
    if data.name is not None:
        changes["name"] = data.name
    if "description" in data.model_fields_set:
        changes["description"] = data.description or None
    if data.steps is not None:
        changes["steps"] = stored_steps(data.steps)
    if data.status is not None:
        if data.status == "archived" and workflow.is_default:
            raise DefaultWorkflowArchived(
                "The workflow is the organization's default: make another one the default "
                "before archiving it."
            )
        changes["status"] = data.status
    changed = {
        field: value for field, value in changes.items() if getattr(workflow, field) != value
    }
    for field, value in changed.items():
        setattr(workflow, field, value)
    if changed:
        workflow.updated_at = utcnow()
        await session.flush()
    return await _record(session, workflow)


def _new_version(
    workflow: Workflow,
    steps: list[dict[str, Any]],
    *,
    notes: str | None,
    source_version: int | None,
    created_by: str,
) -> WorkflowVersion:
    """The workflow's next version, live from now on."""
    number = workflow.latest_version + 1
    row = WorkflowVersion(
        id=uuid.uuid4(),
        tenant_id=workflow.tenant_id,
        workflow_id=workflow.id,
        version=number,
        steps=copy.deepcopy(steps),
        notes=notes or None,
        source_version=source_version,
        created_by=created_by,
        created_at=utcnow(),
    )
    workflow.latest_version = number
    workflow.published_version = number
    workflow.updated_at = utcnow()
    return row


async def publish(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    created_by: str,
    data: schemas.PublishVersionInput,
) -> schemas.WorkflowVersion:
    """Freeze the working definition as the next version and make it live."""
    workflow = await require(session, tenant_id, data.id, for_update=True)
    _check_publishable(workflow.steps)
    if workflow.latest_version:
        latest = await repository.version(session, tenant_id, workflow.id, workflow.latest_version)
        if latest is not None and latest.steps == workflow.steps:
            raise NothingToPublish(
                f"The working definition is version {latest.version} already: change it first."
            )
    row = _new_version(
        workflow, workflow.steps, notes=data.notes, source_version=None, created_by=created_by
    )
    session.add(row)
    await session.flush()
    return _version(row)


async def rollback(
    session: AsyncSession, tenant_id: uuid.UUID, created_by: str, data: schemas.RollbackInput
) -> schemas.WorkflowVersion:
    """Copy version `data.version` forward as the next version, live from now on, and reset the
    working definition to it. It must still pass today's rules."""
    workflow = await require(session, tenant_id, data.id, for_update=True)
    source = await repository.version(session, tenant_id, workflow.id, data.version)
    if source is None:
        raise WorkflowVersionNotFound(workflow.id, data.version)
    _check_publishable(source.steps)
    row = _new_version(
        workflow,
        source.steps,
        notes=data.notes,
        source_version=source.version,
        created_by=created_by,
    )
    workflow.steps = copy.deepcopy(source.steps)
    session.add(row)
    await session.flush()
    return _version(row)


async def set_default(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID
) -> schemas.DefaultChange:
    """Make the workflow the organization's default (jobs naming none run it)."""
    # The tenant first: two setDefaults of one organization take turns.
    await tenants.lock_tenant(session, tenant_id)
    workflow = await require(session, tenant_id, workflow_id, for_update=True)
    if workflow.status == "archived":
        raise ArchivedWorkflow("The workflow is archived: set it active before making it default.")
    if workflow.published_version is None:
        message = "The workflow has no published version: publish one before making it default."
        raise WorkflowNotPublished(message, errors=[FieldError("id", message)])
    previous = await repository.default_of(session, tenant_id)
    if previous is not None and previous.id != workflow.id:
        previous.is_default = False
        # Before the new default is written: one default per tenant, at every statement.
        await session.flush()
    workflow.is_default = True
    await session.flush()
    return schemas.DefaultChange(
        id=workflow.id,
        is_default=True,
        previous_default_id=previous.id if previous is not None else None,
    )


def check_deletable(workflow: Workflow, named_by: Sequence[uuid.UUID]) -> None:
    """WorkflowInUse when the workflow is the default or jobs (`named_by`) name it."""
    if workflow.is_default:
        raise WorkflowInUse(
            "The workflow is the organization's default: make another one the default first.",
            extensions={"jobIds": []},
        )
    if named_by:
        shown = ", ".join(str(job_id) for job_id in named_by[:5])
        more = f" and {len(named_by) - 5} more" if len(named_by) > 5 else ""
        raise WorkflowInUse(
            f"Jobs name the workflow ({shown}{more}): give them another one first.",
            extensions={"jobIds": [str(job_id) for job_id in named_by]},
        )


def mark_deleted(workflow: Workflow) -> None:
    """Soft-delete: the workflow leaves every operation (404); its versions stay for the runs
    that use them."""
    workflow.deleted_at = utcnow()
    workflow.is_default = False


# --- for jobs (jobs.create and jobs.update check the workflow a job names) ----------------------


async def require_published(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID
) -> Workflow:
    """The workflow, locked (a delete waits for the job naming it, or the job for the delete),
    when it is the tenant's, not deleted (WorkflowNotFound) and has a published version
    (WorkflowNotPublished, naming `workflowId`). The tenant is locked first, as setDefault
    locks them, so the two never wait on each other in turn."""
    await tenants.lock_tenant(session, tenant_id)
    workflow = await require(session, tenant_id, workflow_id, for_update=True)
    if workflow.published_version is None:
        message = f"The workflow {workflow.id} has no published version: publish one first."
        raise WorkflowNotPublished(message, errors=[FieldError("workflowId", message)])
    return workflow


# --- for the generation engine --------------------------------------------------------------------


@dataclass(frozen=True)
class Definition:
    """The steps a run follows, as plain data (catalog.step's dicts: key, type, name, enabled,
    config filled with defaults, on_error, retries, timeout_seconds), in order, disabled ones
    included (a run skips them). `workflow_id` and `version` are None for the built-in
    definition; `version` is None for a working definition."""

    workflow_id: uuid.UUID | None
    version: int | None
    name: str
    steps: tuple[dict[str, Any], ...]


def builtin_definition() -> Definition:
    """Today's pipeline (research -> outline -> write -> optimize), "Standard article"."""
    builtin = catalog.builtin_default()
    return Definition(None, None, builtin["name"], tuple(builtin["steps"]))


async def definition_at(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID, version: int
) -> Definition:
    """The steps of version `version` of the workflow, deleted since or not (a run in flight
    keeps its version): WorkflowVersionNotFound when there is none (another tenant's too)."""
    row = await repository.version(session, tenant_id, workflow_id, version)
    if row is None:
        raise WorkflowVersionNotFound(workflow_id, version)
    workflow = await repository.any_of(session, tenant_id, workflow_id)
    name = workflow.name if workflow is not None else ""
    return Definition(workflow_id, version, name, tuple(copy.deepcopy(row.steps)))


async def working_definition(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID
) -> Definition:
    """The workflow's working definition (validated or not: check with `report`)."""
    workflow = await require(session, tenant_id, workflow_id)
    return Definition(workflow.id, None, workflow.name, tuple(copy.deepcopy(workflow.steps)))


JobWorkflow = tuple[uuid.UUID, uuid.UUID | None, int | None]  # (tenant, workflow id, version)


async def definitions_for_jobs(
    session: AsyncSession, wanted: Collection[JobWorkflow]
) -> dict[JobWorkflow, Definition]:
    """`definition_for_job` for each (tenant, workflow_id, version), in at most four queries
    however many tenants there are (the scheduler's tick); WorkflowVersionNotFound as there."""
    keys = set(wanted)
    named = {(t, w) for t, w, v in keys if w is not None and v is None}
    live = await repository.workflows_of(session, named, live=True)
    chosen: dict[JobWorkflow, tuple[uuid.UUID, int] | None] = {}  # -> (workflow id, version)
    for key in keys:
        tenant_id, workflow_id, version = key
        if workflow_id is None:
            continue
        if version is not None:
            chosen[key] = (workflow_id, version)
        elif (found := live.get((tenant_id, workflow_id))) and found.published_version is not None:
            chosen[key] = (found.id, found.published_version)
    defaults = await repository.defaults_of(session, {key[0] for key in keys - chosen.keys()})
    for key in keys - chosen.keys():
        default = defaults.get(key[0])
        published = None if default is None else default.published_version
        chosen[key] = None if default is None or published is None else (default.id, published)
    pinned = {(key[0], at[0], at[1]) for key, at in chosen.items() if at is not None}
    versions = await repository.versions_of(session, pinned)
    # The names of the workflows read above, else (a pinned version) read now, deleted or not.
    names = {(w.tenant_id, w.id): w.name for w in [*live.values(), *defaults.values()]}
    unnamed = {(t, w) for t, w, _ in pinned if (t, w) not in names}
    for pair, workflow in (await repository.workflows_of(session, unnamed, live=False)).items():
        names[pair] = workflow.name
    definitions: dict[JobWorkflow, Definition] = {}
    for key, at in chosen.items():
        if at is None:
            definitions[key] = builtin_definition()
            continue
        steps = versions.get((key[0], at[0], at[1]))
        if steps is None:
            raise WorkflowVersionNotFound(*at)
        name = names.get((key[0], at[0]), "")
        definitions[key] = Definition(at[0], at[1], name, tuple(copy.deepcopy(steps.steps)))
    return definitions


async def default_id(session: AsyncSession, tenant_id: uuid.UUID) -> uuid.UUID | None:
    """The organization's default workflow, if it chose one (the built-in one otherwise)."""
    default = await repository.default_of(session, tenant_id)
    return default.id if default is not None else None


async def default_definition(session: AsyncSession, tenant_id: uuid.UUID) -> Definition:
    """The live version of the organization's default workflow, else the built-in one."""
    default = await repository.default_of(session, tenant_id)
    if default is not None and default.published_version is not None:
        return await definition_at(session, tenant_id, default.id, default.published_version)
    return builtin_definition()


async def definition_for_job(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    workflow_id: uuid.UUID | None,
    version: int | None = None,
) -> Definition:
    """What a new run of a job naming `workflow_id` (or none) follows: the version it pins,
    else that workflow's live version, else the organization's default's, else the built-in
    definition."""
    key = (tenant_id, workflow_id, version)
    return (await definitions_for_jobs(session, [key]))[key]
