"""Inputs and answers of the workflows operations: inputs camelCase on the wire, the records
(Workflow, WorkflowVersion, their steps) as the catalog names their fields (snake_case). A step's
`config` keeps the camelCase names its type's JSON Schema gives (workflows.stepTypes)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from contentplatform.kit.db import json_dumps
from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import MAX_INT, Identifier, JsonObject, Name, PlainMultiLine
from contentplatform.workflows import catalog
from contentplatform.workflows.catalog import OnError, StepTypeName

Status = Literal["active", "archived"]

_EXAMPLE_STEPS: Any = [
    {"key": "research", "type": "research", "config": {"maxSources": 10}},
    {"key": "outline", "type": "outline", "config": {"minSections": 3, "maxSections": 6}},
    {"key": "write", "type": "write", "config": {"targetWords": 1800, "tone": "friendly"}},
    {"key": "optimize", "type": "optimize", "config": {"targetKeywords": ["drip irrigation"]}},
    {"key": "review", "type": "review_gate", "config": {"timeoutHours": 48}},
]
_EXAMPLE_RECORD_STEPS: Any = [
    catalog.step(
        str(step["key"]),
        str(step["type"]),
        name=None,
        config=dict(step["config"]),
    )
    for step in _EXAMPLE_STEPS
]
_EXAMPLE_STEP_TYPE: Any = catalog.BY_TYPE["write"].as_dict()
_EXAMPLE_ID = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
_EXAMPLE_TENANT = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
_EXAMPLE_TIME = "2030-01-01T09:00:00Z"


def _not_blank(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must not be blank")
    return value.strip() if value is not None else None


# --- inputs -----------------------------------------------------------------------------------


class WorkflowStepInput(Input):
    """One step of a definition. `config` is checked against its type's JSON Schema
    (workflows.stepTypes) by validate and publishVersion, not here: a definition is saved even
    when a config breaks it."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"key": "write", "type": "write", "config": {}}]}
    )

    key: Identifier = Field(
        min_length=1,
        max_length=catalog.MAX_KEY_LENGTH,
        pattern=catalog.KEY_PATTERN,
        description="Unique within the definition: lower-case letters and digits, words "
        "joined by `-` or `_` (`write`, `fact-check-2`).",
        examples=["write"],
    )
    type: StepTypeName
    name: Name | None = Field(
        None, min_length=1, max_length=100, description="Default: the step type's label."
    )
    enabled: bool = Field(True, description="A disabled step is kept but not run.")
    config: JsonObject = Field(
        default_factory=dict,
        description="The step type's settings (workflows.stepTypes `config_schema`); what it "
        f"leaves out takes the type's defaults. At most {catalog.MAX_CONFIG_BYTES} bytes of "
        "JSON.",
    )
    on_error: OnError = Field(
        "fail",
        description="fail: the run fails; skip: the run goes on without the step; retry: "
        "retried up to `retries` times, then fails.",
    )
    retries: int = Field(0, ge=0, le=catalog.MAX_RETRIES)
    timeout_seconds: int = Field(
        catalog.DEFAULT_TIMEOUT_SECONDS,
        ge=catalog.MIN_TIMEOUT_SECONDS,
        le=catalog.MAX_TIMEOUT_SECONDS,
        description="How long one attempt of the step may take (a review gate's wait is its "
        "config's timeoutHours).",
    )

    _name = field_validator("name")(_not_blank)

    @field_validator("config")
    @classmethod
    def _small(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(json_dumps(value).encode()) > catalog.MAX_CONFIG_BYTES:
            raise ValueError(f"must be at most {catalog.MAX_CONFIG_BYTES} bytes of JSON")
        return value


Steps = list[WorkflowStepInput]
_STEPS = (
    f"The ordered steps, 1-{catalog.MAX_STEPS}. Each step's config is checked against its "
    "type's JSON Schema and the steps against the ordering rules (workflows.validate)."
)


class CreateWorkflowInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Long-form guide",
                    "description": "Deeper articles, with a review before they go out.",
                    "steps": _EXAMPLE_STEPS,
                }
            ]
        }
    )

    name: Name = Field(min_length=1, max_length=100)
    description: PlainMultiLine | None = Field(None, max_length=500)
    steps: Steps = Field(
        min_length=1,
        max_length=catalog.MAX_STEPS,
        description=_STEPS + " Saved even when it breaks them.",
    )

    _name = field_validator("name")(_not_blank)


class UpdateWorkflowInput(Input):
    """Every field optional: what is given changes, the rest stays (`description: null`
    clears it; `name`, `steps` and `status` null change nothing)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": _EXAMPLE_ID,
                    "name": "Long-form guide (2,000 words)",
                    "expectedUpdatedAt": _EXAMPLE_TIME,
                }
            ]
        }
    )

    id: uuid.UUID
    name: Name | None = Field(None, min_length=1, max_length=100)
    description: PlainMultiLine | None = Field(None, max_length=500)
    steps: Steps | None = Field(
        None,
        min_length=1,
        max_length=catalog.MAX_STEPS,
        description=_STEPS + " Replaces the whole working definition.",
    )
    status: Status | None = Field(
        None, description="archived: hidden from the list by default; not the default workflow."
    )
    expected_updated_at: AwareDatetime | None = Field(
        None,
        description="The workflow's `updated_at` as last read (with its offset): when it "
        "changed since, the edit is refused (409) instead of overwriting that change.",
    )

    _name = field_validator("name")(_not_blank)


class ListWorkflowsInput(Input):
    search: str | None = Field(
        None, max_length=255, description="Matches the name or the description."
    )
    status: Literal["active", "archived", "all"] = "active"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class WorkflowIdInput(Input):
    id: uuid.UUID


class ValidateWorkflowInput(Input):
    model_config = ConfigDict(json_schema_extra={"examples": [{"steps": _EXAMPLE_STEPS}]})

    steps: Steps | None = Field(
        None,
        min_length=1,
        max_length=catalog.MAX_STEPS,
        description="The definition to check; required unless workflowId.",
    )
    workflow_id: uuid.UUID | None = Field(
        None, description="A workflow whose working definition to check (instead of steps)."
    )


class PublishVersionInput(Input):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"id": _EXAMPLE_ID, "notes": "Longer articles."}]}
    )

    id: uuid.UUID
    notes: PlainMultiLine | None = Field(None, max_length=500, description="What changed.")


class RollbackInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"id": _EXAMPLE_ID, "version": 1, "notes": "Back to shorter articles."}]
        }
    )

    id: uuid.UUID
    version: int = Field(ge=1, le=MAX_INT, description="The version to make live again.")
    notes: PlainMultiLine | None = Field(None, max_length=500)


class ListVersionsInput(Input):
    id: uuid.UUID
    include_steps: bool = Field(False, description="Each version's steps too (else null).")
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


# --- outputs ----------------------------------------------------------------------------------


class WorkflowStep(BaseModel):
    """One step as stored: its name (its type's label unless given) and its config filled with
    its type's defaults."""

    model_config = ConfigDict(json_schema_extra={"examples": [_EXAMPLE_RECORD_STEPS[2]]})

    key: str
    type: StepTypeName
    name: str
    enabled: bool
    config: dict[str, Any]
    on_error: OnError
    retries: int
    timeout_seconds: int


class Workflow(Record):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": _EXAMPLE_ID,
                    "tenant_id": _EXAMPLE_TENANT,
                    "name": "Long-form guide",
                    "description": "Deeper articles, with a review before they go out.",
                    "status": "active",
                    "steps": _EXAMPLE_RECORD_STEPS,
                    "published_version": 2,
                    "latest_version": 2,
                    "is_default": True,
                    "has_unpublished_changes": False,
                    "created_by": "u1",
                    "created_at": _EXAMPLE_TIME,
                    "updated_at": _EXAMPLE_TIME,
                }
            ]
        }
    )

    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    description: str | None
    status: Status
    steps: list[WorkflowStep] = Field(description="The working definition.")
    published_version: int | None = Field(
        description="The version new runs use; null until one is published."
    )
    latest_version: int = Field(description="0 until a version is published.")
    is_default: bool = Field(description="The organization's default, for jobs naming none.")
    has_unpublished_changes: bool = Field(
        description="The working definition differs from the latest version (always true "
        "before the first)."
    )
    created_by: str | None
    created_at: datetime
    updated_at: datetime


class WorkflowSummary(Record):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": _EXAMPLE_ID,
                    "name": "Long-form guide",
                    "description": "Deeper articles, with a review before they go out.",
                    "status": "active",
                    "step_types": [step["type"] for step in _EXAMPLE_STEPS],
                    "published_version": 2,
                    "latest_version": 2,
                    "is_default": True,
                    "updated_at": _EXAMPLE_TIME,
                }
            ]
        }
    )

    id: uuid.UUID
    name: str
    description: str | None
    status: Status
    step_types: list[StepTypeName] = Field(description="The working definition's step types.")
    published_version: int | None
    latest_version: int
    is_default: bool
    updated_at: datetime


class WorkflowPage(Page[WorkflowSummary]):
    pass


class WorkflowVersion(Record):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "workflow_id": _EXAMPLE_ID,
                    "version": 3,
                    "steps": _EXAMPLE_RECORD_STEPS,
                    "notes": "Back to shorter articles.",
                    "source_version": 1,
                    "created_by": "u1",
                    "created_at": _EXAMPLE_TIME,
                }
            ]
        }
    )

    workflow_id: uuid.UUID
    version: int
    steps: list[WorkflowStep] | None = Field(
        description="The frozen steps (null in listVersions without includeSteps)."
    )
    notes: str | None
    source_version: int | None = Field(description="The version a rollback copied; else null.")
    created_by: str | None
    created_at: datetime


class WorkflowVersionPage(Page[WorkflowVersion]):
    pass


class StepPositions(BaseModel):
    """Where a step of the type may stand, among the enabled steps."""

    after: list[StepTypeName] = Field(
        description="A step of one of these types must come before it."
    )
    before: list[StepTypeName] = Field(description="It must not come after these types.")
    min_count: int
    max_count: int | None = Field(description="Null: no bound but the definition's 12 steps.")


class StepTypeInfo(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [_EXAMPLE_STEP_TYPE]})

    type: StepTypeName
    label: str
    description: str
    config_schema: dict[str, Any] = Field(
        description="A JSON Schema (Draft 2020-12) for the step's config."
    )
    defaults: dict[str, Any] = Field(description="What a config leaves out takes.")
    allowed_positions: StepPositions
    repeatable: bool
    credits_estimate: int = Field(description="Credits a step costs at its defaults, roughly.")


class WorkflowRule(BaseModel):
    code: str
    severity: Literal["error", "warning"] = Field(
        description="error: keeps a definition from being published; warning: does not."
    )
    description: str


class BuiltinDefinition(BaseModel):
    """What runs when neither a job nor its organization names a workflow."""

    name: str
    description: str
    steps: list[WorkflowStep]


class StepTypeCatalog(BaseModel):
    data: list[StepTypeInfo]
    rules: list[WorkflowRule] = Field(description="What validate checks, by code.")
    builtin_default: BuiltinDefinition


class WorkflowViolation(BaseModel):
    step_key: str | None = Field(description="Null for the definition as a whole.")
    path: str = Field(description="Where, e.g. `steps.2.config.maxSources` or `steps.2`.")
    code: str
    message: str


class WorkflowWarning(BaseModel):
    step_key: str | None
    code: str
    message: str


class WorkflowValidation(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "valid": False,
                    "errors": [
                        {
                            "step_key": "outline",
                            "path": "steps.1.config.maxSections",
                            "code": "CONFIG_INVALID",
                            "message": "maxSections: 20 is greater than the maximum of 12",
                        }
                    ],
                    "warnings": [],
                    "estimated_credits": 21,
                }
            ]
        }
    )

    valid: bool
    errors: list[WorkflowViolation]
    warnings: list[WorkflowWarning]
    estimated_credits: int = Field(description="What the enabled steps cost, roughly.")


class DefaultChange(BaseModel):
    id: uuid.UUID
    is_default: bool
    previous_default_id: uuid.UUID | None = Field(
        description="The default before this call (its own id when it was the default already)."
    )
