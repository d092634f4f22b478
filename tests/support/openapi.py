"""Reading the service's OpenAPI document."""

from __future__ import annotations

from typing import Any


def operation_ids(document: dict[str, Any], prefix: str = "") -> set[str]:
    """The operationIds in an OpenAPI document, those starting with `prefix` ("drafts.")."""
    return {
        operation["operationId"]
        for item in document["paths"].values()
        for operation in item.values()
        if operation["operationId"].startswith(prefix)
    }
