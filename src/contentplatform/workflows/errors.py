"""What the workflows domain refuses."""

from __future__ import annotations

import uuid

from contentplatform.kit.errors import BadRequest, Conflict, NotFound, RecordNotFound


class WorkflowNotFound(RecordNotFound):
    """There is no such workflow in this organization (deleted, or another organization's)."""

    record = "workflow"


class WorkflowVersionNotFound(NotFound):
    """The workflow has no version of that number."""

    def __init__(self, workflow_id: uuid.UUID, version: int) -> None:
        super().__init__(f"The workflow {workflow_id} has no version {version}.")


class DefinitionMissing(BadRequest):
    """validate needs a definition: `steps`, or the `workflowId` whose working definition to
    check (one of them, not both)."""


class InvalidDefinition(BadRequest):
    """The definition breaks a rule (a step's config against its type's JSON Schema, or the
    ordering rules): `errors` lists each violation by its path and `violations` each with its
    `step_key` and `code`, as workflows.validate answers them."""


class StaleWorkflow(Conflict):
    """The workflow changed since `expectedUpdatedAt`: read it again and reapply the edit."""


class DefaultWorkflowArchived(Conflict):
    """The organization's default workflow cannot be archived: make another one the default
    first."""


class ArchivedWorkflow(Conflict):
    """An archived workflow cannot become the organization's default: set it active first."""


class NothingToPublish(Conflict):
    """The working definition is the latest version's already: nothing changed to publish."""


class WorkflowNotPublished(BadRequest):
    """The workflow has no published version yet: publish one first (workflows.publishVersion)."""


class WorkflowInUse(Conflict):
    """The workflow cannot be deleted: it is the organization's default, or a job that is not
    deleted names it (`jobIds` lists them)."""
