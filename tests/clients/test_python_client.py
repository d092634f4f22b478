"""A Python client generated from the service's own document by openapi-python-client, offline
(the document is a file), without an error or a warning, then used against the running service
over its socket: whoami, documents.list and a draft written and read back, every answer parsed
into the generated models."""

from __future__ import annotations

import datetime
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from uuid import UUID

import pytest

from tests.support.servers import AppServer

PACKAGE = "contentplatform_client"


@pytest.fixture(scope="module")
def generated(
    tmp_path_factory: pytest.TempPathFactory, openapi_document: dict[str, Any]
) -> Iterator[Path]:
    """The generated package's parent directory, on sys.path while the module's tests run."""
    root = tmp_path_factory.mktemp("python-client")
    document = root / "openapi.json"
    document.write_text(json.dumps(openapi_document))
    # The generator's post-hooks run `ruff` from PATH: this interpreter's, as in .venv/bin.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    command = [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(document)]
    command += ["--meta", "none", "--output-path", str(root / PACKAGE), "--fail-on-warning"]
    env = {**os.environ, "PATH": path}
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    output = (result.stdout + result.stderr).strip()
    # Exit 0 and nothing printed but the one line of a clean run: a warning fails it too.
    assert (result.returncode, output) == (0, f"Generating {root / PACKAGE}"), output
    sys.path.insert(0, str(root))
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        for name in [name for name in sys.modules if name.partition(".")[0] == PACKAGE]:
            del sys.modules[name]


def module(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}")


@pytest.fixture
def api(generated: Path, server: AppServer, token: Any, org: str) -> Any:
    """The generated client, as an admin of a fresh organization."""
    client = module("client").AuthenticatedClient(
        base_url=server.url, token=token(org, f"admin-{org}", "admin"), timeout=30
    )
    # The organization goes on every request, whichever way the document declares it.
    return client.with_headers({"x-idp-org-id": org})


def test_whoami_parses_into_its_model(api, org):
    answer = module("api.system.system_whoami").sync_detailed(client=api)
    assert answer.status_code == 200, answer.content
    me = answer.parsed
    assert type(me).__name__ == "WhoAmI"
    assert isinstance(me.tenant_id, UUID)
    assert me.organization.idp_org_id == org
    assert me.role.value == "admin"
    assert me.superadmin is False


def test_documents_list_returns_a_typed_page(api, org):
    create_input = module("models").CreateDocumentInput
    file_type = module("models").CreateDocumentInputFiletype
    body = create_input(
        filename="compost.pdf", storage_path=f"{org}/library/compost.pdf", file_type=file_type.PDF
    )
    created = module("api.documents.documents_create").sync_detailed(client=api, body=body)
    assert created.status_code == 200, created.content

    answer = module("api.documents.documents_list").sync_detailed(client=api, limit=10)
    assert answer.status_code == 200, answer.content
    page = answer.parsed
    assert (page.total, page.limit, page.offset) == (1, 10, 0)
    [document] = page.data
    assert isinstance(document.id, UUID) and document.id == created.parsed.id
    assert document.filename == "compost.pdf"
    assert document.status.value == "pending"
    assert isinstance(document.created_at, datetime.datetime)


def test_a_draft_written_and_read_back(api):
    body = module("models").CreateDraftInput(
        title="Composting in winter", content="<p>Keep the pile covered.</p>"
    )
    created = module("api.drafts.drafts_create_draft").sync_detailed(client=api, body=body)
    assert created.status_code == 200, created.content
    draft = created.parsed
    assert type(draft).__name__ == "Draft"
    assert isinstance(draft.id, UUID)

    answer = module("api.drafts.drafts_get_by_id").sync_detailed(client=api, id=draft.id)
    assert answer.status_code == 200, answer.content
    read = answer.parsed
    assert type(read).__name__ == "Draft"
    assert (read.id, read.title, read.content) == (
        draft.id,
        "Composting in winter",
        "<p>Keep the pile covered.</p>",
    )
    assert (read.status.value, read.version) == ("reviewing", 1)
    assert isinstance(read.created_at, datetime.datetime) and read.created_at.tzinfo is not None
    assert isinstance(read.tenant_id, UUID)


def test_a_refusal_parses_into_the_problem_model(api):
    missing = UUID(int=0)
    answer = module("api.drafts.drafts_get_by_id").sync_detailed(client=api, id=missing)
    assert answer.status_code == 404
    problem = answer.parsed
    assert type(problem).__name__ == "Problem"
    assert problem.code == "NOT_FOUND"
