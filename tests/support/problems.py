"""The shape every error must have."""

from __future__ import annotations

import json
from typing import Any

import httpx


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert `response` is a problem+json error with `status` and `code`; return its body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    body = json.loads(response.text)
    assert body["code"] == code, body
    assert body["status"] == status
    assert body["request_id"] == response.headers["x-request-id"]
    assert {"type", "title", "detail"} <= body.keys()
    return body
