"""Helpers for the workflows tests: one organization's workflows through one transport (`call`),
and definitions that pass, or break one rule each."""

from __future__ import annotations

import copy
from typing import Any

from tests.support.orgs import Org
from tests.support.problems import problem

# The built-in pipeline as a caller writes it: what passes every rule.
STANDARD: list[dict[str, Any]] = [
    {"key": "research", "type": "research"},
    {"key": "outline", "type": "outline"},
    {"key": "write", "type": "write"},
    {"key": "optimize", "type": "optimize"},
]


def steps(*extra: dict[str, Any], base: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """A fresh copy of `base` (STANDARD) with `extra` steps appended."""
    return [*copy.deepcopy(base if base is not None else STANDARD), *copy.deepcopy(list(extra))]


def codes(report: dict[str, Any]) -> list[tuple[str | None, str]]:
    """(step_key, code) of each error of a validation report, in order."""
    return [(error["step_key"], error["code"]) for error in report["errors"]]


class Designer(Org):
    """One organization's workflows; writes go as the editor unless told otherwise."""

    default_role = "editor"

    def workflow(self, role: str = "editor", **fields: Any) -> dict[str, Any]:
        """workflows.create, which must succeed (the standard steps unless told otherwise)."""
        data: dict[str, Any] = {"name": "Long-form guide", "steps": steps()}
        data.update(fields)
        return self.ok("workflows.create", data, role=role)

    def get(self, workflow_id: str, role: str = "member") -> dict[str, Any]:
        return self.ok("workflows.getById", {"id": workflow_id}, role=role)

    def listed(self, role: str = "member", **query: Any) -> dict[str, Any]:
        return self.ok("workflows.list", query, role=role)

    def update(self, workflow_id: str, role: str = "editor", **fields: Any) -> dict[str, Any]:
        return self.ok("workflows.update", {"id": workflow_id, **fields}, role=role)

    def publish(self, workflow_id: str, role: str = "editor", **fields: Any) -> dict[str, Any]:
        return self.ok("workflows.publishVersion", {"id": workflow_id, **fields}, role=role)

    def validate(self, role: str = "editor", **fields: Any) -> dict[str, Any]:
        return self.ok("workflows.validate", fields, role=role)

    def versions(self, workflow_id: str, role: str = "member", **query: Any) -> dict[str, Any]:
        return self.ok("workflows.listVersions", {"id": workflow_id, **query}, role=role)

    def rollback(self, workflow_id: str, version: int, **fields: Any) -> dict[str, Any]:
        return self.ok("workflows.rollback", {"id": workflow_id, "version": version, **fields})

    def published(self, role: str = "editor", **fields: Any) -> dict[str, Any]:
        """A workflow with version 1 published: the workflow as it is then."""
        created = self.workflow(role=role, **fields)
        self.publish(created["id"], role=role)
        return self.get(created["id"])

    def make_default(self, workflow_id: str) -> dict[str, Any]:
        return self.ok("workflows.setDefault", {"id": workflow_id}, role="admin")

    def refused(
        self, operation: str, data: dict[str, Any], status: int, code: str, role: str = "admin"
    ) -> dict[str, Any]:
        """The operation's problem, which must have this status and code."""
        return problem(self.request(operation, data, role=role), status, code)
