"""The Workflows operations on definitions and their versions: declarations only; the rules
live in service.py, the step types in catalog.py and the rules between steps in validation.py.

Every member reads workflows and the step catalog; editors create, edit, validate, publish and
roll back; admins choose the organization's default (and delete, which is declared with the
flows, flows/workflow_procedures.py: it asks the jobs whether one names the workflow).
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import Empty
from contentplatform.workflows import schemas, service
from contentplatform.workflows.errors import (
    ArchivedWorkflow,
    DefaultWorkflowArchived,
    DefinitionMissing,
    InvalidDefinition,
    NothingToPublish,
    StaleWorkflow,
    WorkflowNotFound,
    WorkflowNotPublished,
    WorkflowVersionNotFound,
)

router = ProcedureRouter("workflows", tag="Workflows")

_STEPS = (
    "A definition is 1-12 ordered steps `{key, type, name, enabled, config, onError, retries, "
    "timeoutSeconds}`: `key` a slug of 1-40 characters, `type` one of the step types "
    "(workflows.stepTypes), `name` at most 100 characters (default: the type's label), `config` "
    "the type's settings (what it leaves out takes the type's defaults, stored with the step), "
    "`onError` fail|skip|retry, `retries` 0-3, `timeoutSeconds` 10-1800 (default 300). A step "
    "out of these bounds is a 400 naming it."
)
_RULES = (
    "The rules (each violation is listed with its step and a stable code; workflows.stepTypes "
    "lists the codes): each config against its type's JSON Schema (`CONFIG_INVALID`, with the "
    "setting's path); keys unique (`DUPLICATE_KEY`); among the enabled steps, exactly one write "
    "(`EXACTLY_ONE_WRITE`), an outline before it (`OUTLINE_BEFORE_WRITE`) and research before "
    "the outline (`RESEARCH_BEFORE_OUTLINE`); optimize, internal_links and fact_check after the "
    "write (`AFTER_WRITE`); images after an outline (`IMAGES_AFTER_OUTLINE`); at most 2 review "
    "gates (`REVIEW_GATE_LIMIT`), after the write (`REVIEW_GATE_AFTER_WRITE`); other types once "
    "(`NOT_REPEATABLE`); an outline's minSections not above its maxSections "
    "(`SECTIONS_RANGE`); stock images only from a provider whose terms allow an automated "
    "choice (`STOCK_PROVIDER_NOT_ALLOWED`: none does yet; Unsplash requires a person to "
    "choose)."
)


@router.get("list", "/v1/workflows", access=Access.member)
async def list_workflows(ctx: Context, data: schemas.ListWorkflowsInput) -> schemas.WorkflowPage:
    """List pipeline definitions.

    The default first, then the most recently changed. `search` matches the name or the
    description; `status` active (the default), archived or all. Deleted workflows are
    hidden."""
    return await service.page(ctx.session, ctx.tenant.tenant_id, data)


@router.get("stepTypes", "/v1/workflows/step-types", access=Access.member)
async def step_types(ctx: Context, _: Empty) -> schemas.StepTypeCatalog:
    """Catalog of step types with config JSON Schemas and ordering rules.

    Static per release: each type's `config_schema` (JSON Schema, Draft 2020-12) is what
    validate enforces, `defaults` what a config leaves out takes, `allowed_positions` where it
    may stand (`after`: a step of one of these types must come before it; `before`: it must
    not follow these), `credits_estimate` what a step costs at its defaults, roughly. `rules`
    lists every code validate answers; `builtin_default` is the definition jobs run when
    neither they nor the organization name a workflow ("Standard article": research, outline,
    write, optimize)."""
    return service.step_types()


@router.post(
    "create",
    "/v1/workflows",
    access=Access.editor,
    description=_STEPS + " The definition is saved even when it breaks the rules validate "
    "checks (it cannot be published until it passes): `has_unpublished_changes` true, "
    "`published_version` null.",
)
async def create(ctx: Context, data: schemas.CreateWorkflowInput) -> schemas.Workflow:
    """Create a workflow with an ordered list of typed steps."""
    return await service.create(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.get("getById", "/v1/workflows/{id}", access=Access.member, errors=[WorkflowNotFound])
async def get_by_id(ctx: Context, data: schemas.WorkflowIdInput) -> schemas.Workflow:
    """Get a workflow with its working definition.

    `has_unpublished_changes` says whether the working definition differs from the latest
    version."""
    return await service.get(ctx.session, ctx.tenant.tenant_id, data.id)


@router.patch(
    "update",
    "/v1/workflows/{id}",
    access=Access.editor,
    description="What is given changes (`steps` replaces the whole working definition, saved "
    "even when it breaks the rules); published versions never change. With "
    "`expectedUpdatedAt` (the `updated_at` last read), an edit of a workflow changed since is "
    "409 (`updatedAt` says when it changed). Archiving the organization's default is 409. "
    "Nothing to change answers the workflow as it is. " + _STEPS,
    errors=[WorkflowNotFound, StaleWorkflow, DefaultWorkflowArchived],
)
async def update(ctx: Context, data: schemas.UpdateWorkflowInput) -> schemas.Workflow:
    """Edit name, description or steps of the working definition."""
    return await service.update(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "validate",
    "/v1/workflows/validate",
    access=Access.editor,
    description="Give `steps`, or `workflowId` to check that workflow's working definition "
    "(one of them: 400 otherwise). `valid` is true when nothing is in `errors`; `warnings` "
    "never keep a definition from being published; `estimated_credits` adds up the enabled "
    "steps' estimates (the write step's from its targetWords). " + _RULES,
    errors=[DefinitionMissing, WorkflowNotFound],
)
async def validate(ctx: Context, data: schemas.ValidateWorkflowInput) -> schemas.WorkflowValidation:
    """Validate a definition without saving it."""
    return await service.validate(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "publishVersion",
    "/v1/workflows/{id}/versions",
    access=Access.editor,
    description="The next version (1, 2, 3, ...) holds the working definition as it is and "
    "becomes `published_version`: new runs of the jobs that use the workflow follow it, runs "
    "in flight keep theirs. A definition that breaks a rule is 400 with every violation "
    "(`errors` by path, `violations` with `step_key` and `code`, as validate answers them); "
    "one that has not changed since the latest version is 409. " + _RULES,
    errors=[WorkflowNotFound, InvalidDefinition, NothingToPublish],
)
async def publish_version(
    ctx: Context, data: schemas.PublishVersionInput
) -> schemas.WorkflowVersion:
    """Freeze the working definition as a new immutable version and make it live."""
    return await service.publish(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.get(
    "listVersions",
    "/v1/workflows/{id}/versions",
    access=Access.member,
    errors=[WorkflowNotFound],
)
async def list_versions(
    ctx: Context, data: schemas.ListVersionsInput
) -> schemas.WorkflowVersionPage:
    """List versions, newest first.

    Each version's steps only with `includeSteps` (else null)."""
    return await service.list_versions(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "rollback",
    "/v1/workflows/{id}/rollback",
    access=Access.editor,
    description="Append-only: version `version` is copied as the next version (its "
    "`source_version` names the one copied) and becomes `published_version`, and the working "
    "definition is reset to it; history is never rewritten. Runs in flight keep their version. "
    "An unknown version is 404; one that breaks today's rules is 400 as in publishVersion.",
    errors=[WorkflowNotFound, WorkflowVersionNotFound, InvalidDefinition],
)
async def rollback(ctx: Context, data: schemas.RollbackInput) -> schemas.WorkflowVersion:
    """Make an earlier version live again."""
    return await service.rollback(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.post(
    "setDefault",
    "/v1/workflows/{id}/set-default",
    access=Access.admin,
    description="The workflow jobs without one of their own run (its published version); "
    "without a default they run the built-in definition (workflows.stepTypes "
    "`builtin_default`). One default per organization: the previous one stops being it "
    "(`previous_default_id`). 400 when the workflow has no published version, 409 when it is "
    "archived.",
    errors=[WorkflowNotFound, WorkflowNotPublished, ArchivedWorkflow],
)
async def set_default(ctx: Context, data: schemas.WorkflowIdInput) -> schemas.DefaultChange:
    """Make this workflow the tenant default for jobs without a workflow."""
    return await service.set_default(ctx.session, ctx.tenant.tenant_id, data.id)
