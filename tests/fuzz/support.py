"""The fuzz pass's pieces: its bounds and checks, the organization it seeds (a record of every
kind, so that path parameters hit real records as well as missing ones), the service's OpenAPI
document, and the pass itself (sending cases within the budget, counting the answers).

Bounds (environment variables, for a deeper run by hand; CI uses the defaults):
CONTENTPLATFORM_TEST_FUZZ_EXAMPLES, the most generated cases per operation in the fuzzing phase
(default 25), and CONTENTPLATFORM_TEST_FUZZ_SECONDS, each operation's time budget from its first
case (default 3): past it, the operation's remaining cases are not sent. A budget per operation,
not per process, so every operation is fuzzed however many there are and however busy the
machine is (a budget per process spent itself on the operations it met first, and left the
last ones unfuzzed), and the pass grows with the operations, 3 s each at most.
"""

from __future__ import annotations

import io
import os
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import PIL.Image
import pytest
import requests
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from contentplatform.app import create_app
from contentplatform.config import Settings

EXAMPLES = int(os.environ.get("CONTENTPLATFORM_TEST_FUZZ_EXAMPLES", "25"))
BUDGET_SECONDS = float(os.environ.get("CONTENTPLATFORM_TEST_FUZZ_SECONDS", "3"))
# Fixed, so a failure found in CI is found again by the same command on a laptop.
SEED = 14
SEED_TIMEOUT = 30.0
# What the pass holds every answer to.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def _rain_png() -> bytes:
    out = io.BytesIO()
    PIL.Image.new("RGB", (32, 24), "steelblue").save(out, "PNG")
    return out.getvalue()


RAIN_PNG = _rain_png()
HANDBOOK = (
    b"# Watering handbook\n\n## Summer\n\nWater early in the morning, twice a week, and deeply.\n"
)


@dataclass
class Seeded:
    """The seeded organization: its admin's headers and the ids of its records by collection."""

    org: str
    tenant_id: str
    headers: dict[str, str]
    ids: dict[str, list[str]] = field(default_factory=dict)
    slugs: list[str] = field(default_factory=list)

    def known(self, path: str, parameter: str) -> list[Any]:
        """Real values for a path parameter of `path`: `{id}` in "/v1/drafts/{id}/approve" is
        one of the seeded drafts, `{slug}` a published post's, `{version}` a draft's version."""
        if parameter == "id":
            return self.ids.get(path.split("/{id}", 1)[0], [])
        if parameter == "slug":
            return self.slugs
        if parameter == "version":
            return [1, 2]
        return []


class Seeder:
    """Makes the seeded records as the organization's admin, over REST."""

    def __init__(self, client: httpx.Client, seeded: Seeded) -> None:
        self.client = client
        self.seeded = seeded

    def ok(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        response = self.client.request(
            method, path, json=body, params=params or None, headers=self.seeded.headers
        )
        assert response.status_code == 200, (method, path, response.text)
        return response.json()

    def keep(self, collection: str, record: dict[str, Any]) -> str:
        self.seeded.ids.setdefault(collection, []).append(str(record["id"]))
        return str(record["id"])

    def wait(self, path: str, done: tuple[str, ...]) -> dict[str, Any]:
        deadline = time.monotonic() + SEED_TIMEOUT
        while True:
            record: dict[str, Any] = self.ok("GET", path)
            if record["status"] in done:
                return record
            assert time.monotonic() < deadline, f"{path} still {record['status']}"
            time.sleep(0.05)

    def seed(self) -> None:
        # A document uploaded and ingested, and one registered but never uploaded.
        target = self.ok(
            "POST",
            "/v1/documents/upload-url",
            {"filename": "handbook.md", "fileType": "md", "contentLength": len(HANDBOOK)},
        )
        put = self.client.request(
            target["method"], target["upload_url"], content=HANDBOOK, headers=target["headers"]
        )
        assert put.status_code == 200, put.text
        document = self.ok(
            "POST",
            "/v1/documents/confirm-upload",
            {"filename": "handbook.md", "fileType": "md", "storagePath": target["storage_path"]},
        )
        document_id = self.keep("/v1/documents", document)
        self.wait(f"/v1/documents/{document_id}", ("ready", "error"))
        pending = {
            "filename": "notes.md",
            "fileType": "md",
            "storagePath": f"{self.seeded.org}/library/{uuid.uuid4().hex}/notes.md",
        }
        self.keep("/v1/documents", self.ok("POST", "/v1/documents", pending))

        # A job and a planned instance of it.
        job = self.ok("POST", "/v1/jobs", {"name": "Weekly notes", "topics": ["Watering"]})
        job_id = self.keep("/v1/jobs", job)
        instance = {"jobId": job_id, "scheduledDate": "2030-01-01T09:00:00Z"}
        self.keep("/v1/job-instances", self.ok("POST", "/v1/job-instances", instance))

        # Drafts: one edited (two versions), one published through a webhook (the public feed's
        # post), one being written by a generation run.
        draft = self.ok("POST", "/v1/drafts", {"title": "Watering", "content": "<p>Early.</p>"})
        draft_id = self.keep("/v1/drafts", draft)
        self.ok("PATCH", f"/v1/drafts/{draft_id}", {"title": "Watering in a dry summer"})
        hook = {"name": "Hook", "type": "webhook", "config": {"url": "https://hooks.test/posts"}}
        connection_id = self.keep("/v1/publishers", self.ok("POST", "/v1/publishers", hook))
        post = self.ok("POST", "/v1/drafts", {"title": "Mulch", "content": "<p>Keeps water.</p>"})
        post_id = self.keep("/v1/drafts", post)
        self.ok("POST", f"/v1/drafts/{post_id}/approve")
        self.ok("POST", f"/v1/drafts/{post_id}/publish", {"publisherConnectionId": connection_id})
        published = self.wait(f"/v1/drafts/{post_id}", ("published",))
        self.seeded.slugs.append(published["slug"])
        generating = self.ok(
            "POST", "/v1/generation/blog", {"topic": "Watering", "documentIds": [document_id]}
        )
        self.keep("/v1/drafts", generating)
        self.keep("/v1/generation/runs", generating["run"])
        # A workflow (the built-in steps) with a published version, the organization's default.
        standard = self.ok("GET", "/v1/workflows/step-types")["builtin_default"]
        workflow = self.ok(
            "POST", "/v1/workflows", {"name": "Standard", "steps": standard["steps"]}
        )
        workflow_id = self.keep("/v1/workflows", workflow)
        self.ok("POST", f"/v1/workflows/{workflow_id}/versions", {"notes": "First"})
        self.ok("POST", f"/v1/workflows/{workflow_id}/set-default")

        # An image in the media library, the edited draft's featured image.
        target = self.ok(
            "POST",
            "/v1/media/upload-url",
            {"filename": "rain.png", "mimeType": "image/png", "bytes": len(RAIN_PNG)},
        )
        put = self.client.request(
            target["method"], target["upload_url"], content=RAIN_PNG, headers=target["headers"]
        )
        assert put.status_code == 200, put.text
        confirm = {
            "storagePath": target["storage_path"],
            "filename": "rain.png",
            "mimeType": "image/png",
        }
        media_id = self.keep("/v1/media", self.ok("POST", "/v1/media/confirm-upload", confirm))
        self.ok(
            "POST", f"/v1/media/{media_id}/attachments", {"draftId": draft_id, "role": "featured"}
        )
        # Search Console's first backfill a month long, not the default 16 (about 250,000 made-up
        # rows once the fuzzer connects the offline provider): the pass sends requests, it does
        # not measure a backfill.
        self.ok("PATCH", "/v1/seo/settings", {"searchConsole": {"backfillMonths": 1}})
        question = {"query": "When to water?", "idempotencyKey": "seed", "responseMode": "blocking"}
        answer = self.ok("POST", "/v1/chat/messages", question)
        self.keep("/v1/chat/messages", answer)
        self.seeded.ids.setdefault("/v1/chat/conversations", []).append(answer["conversation_id"])


def service_document() -> dict[str, Any]:
    """The service's OpenAPI document, as `contentplatform openapi` prints it (no server, no
    database: the document is made from the declarations alone)."""
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(_env_file=None, env="local", data_dir=data_dir)
        return create_app(settings).openapi()


def fuzz_config() -> SchemathesisConfig:
    """The pass's bounds: examples (the document's own), coverage (boundaries and malformed
    values of every parameter, derived from the schema: a fixed set) and fuzzing (at most
    EXAMPLES cases an operation), positive and negative, seeded and derandomized. The four
    checks the pass holds the service to; no example database, so nothing is replayed from
    an earlier run."""
    generation = {
        "mode": "all",
        "max-examples": EXAMPLES,
        "deterministic": True,
        "database": "none",
        # The token is the seeded admin's, always: no case drops or forges it.
        "with-security-parameters": False,
    }
    checks = {
        "enabled": False,
        "not_a_server_error": {"enabled": True},
        "status_code_conformance": {"enabled": True},
        "content_type_conformance": {"enabled": True},
        "response_schema_conformance": {"enabled": True},
    }
    return SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "suppress-health-check": ["all"],
            "generation": generation,
            "checks": checks,
            "phases": {"stateful": {"enabled": False}},
        }
    )


class Pass:
    """Sends cases over one HTTP session, each operation's within its time budget, and counts
    what came back."""

    def __init__(self, budget: float, database: str, url: str, seeded: Seeded) -> None:
        self.database = database
        self.url = url
        # Every request as the seeded organization's admin; the public feed reads its tenant.
        self.headers = {**seeded.headers, "x-tenant-id": seeded.tenant_id}
        self.session = requests.Session()
        self.budget = budget
        # From each operation's first case on: generating, sending and checking.
        self.started: float | None = None
        self.operation_started: dict[str, float] = {}
        self.statuses: Counter[int] = Counter()
        self.operations: set[str] = set()
        self.cut_short: set[str] = set()

    def send(self, case: Any) -> None:
        label = case.operation.label
        self.operations.add(label)
        now = time.monotonic()
        if self.started is None:
            self.started = now
        began = self.operation_started.setdefault(label, now)
        if now - began > self.budget:
            # Past its budget an operation's remaining cases are not sent; the summary names
            # every operation cut short, so a pass that did not send every case never looks
            # complete.
            self.cut_short.add(label)
            return
        response = case.call(base_url=self.url, session=self.session, headers=self.headers)
        self.statuses[response.status_code] += 1
        case.validate_response(response, checks=CHECKS, headers=self.headers)

    @property
    def spent(self) -> float:
        return 0.0 if self.started is None else time.monotonic() - self.started

    def summary(self) -> str:
        statuses = ", ".join(f"{code}: {n}" for code, n in sorted(self.statuses.items()))
        line = (
            f"on {self.database}: {len(self.operations)} operations, "
            f"{self.statuses.total()} requests in {self.spent:.0f} s ({statuses})"
        )
        if self.cut_short:
            line += (
                f"; {len(self.cut_short)} cut short at {self.budget:.0f} s each: "
                f"{', '.join(sorted(self.cut_short))}"
            )
        return line

    def record(self, item: pytest.Item) -> None:
        """The summary so far as the item's `fuzz:<process>` property: tests/conftest.py prints
        each process's last one at the end of the run (from the reports, so under xdist too)."""
        name = f"fuzz:{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
        item.user_properties[:] = [p for p in item.user_properties if p[0] != name]
        item.user_properties.append((name, self.summary()))
