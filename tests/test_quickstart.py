"""The quick start (core/quickstart.py) is the script the README prints and the API description
shows with the service's own address, and it works as printed, every time: ten runs in a row in
one organization, each publishing its own article to its own receiver, none seeing an earlier
run's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from contentplatform.core import quickstart
from tests.support.orgs import new_org
from tests.support.processes import free_port
from tests.support.servers import AppServer

ROOT = Path(__file__).resolve().parents[1]
RUNS = 10


def test_the_readme_prints_the_quick_start() -> None:
    readme = (ROOT / "README.md").read_text()
    assert f"```sh\n{quickstart.script()}```" in readme


def test_the_docs_show_the_quick_start_with_the_services_own_address(
    openapi_document: dict[str, Any], settings: Any
) -> None:
    shown = openapi_document["info"]["description"]
    assert f"```sh\n{quickstart.script(settings.public_base_url, 'dev.py')}```" in shown
    assert shown.index("## Quick start") < shown.index("**Authentication**")


@pytest.mark.skipif(shutil.which("curl") is None, reason="the quick start uses curl")
def test_the_quick_start_works_as_printed_ten_times_in_a_row(
    server: AppServer, settings: Any, tmp_path: Path
) -> None:
    org = new_org()  # one organization for every run, as org_a is for a reader
    environment = {**os.environ, "CONTENTPLATFORM_DATA_DIR": str(settings.data_dir)}
    environment.pop("CONTENTPLATFORM_ENV", None)
    published: list[str] = []
    for run in range(RUNS):
        script = quickstart.script(server.url, str(ROOT / "dev.py"), free_port()).replace(
            "org_a", org
        )
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
        )
        said = f"run {run + 1}:\n{done.stdout}\n{done.stderr}"
        assert done.returncode == 0, said
        lines = done.stdout.splitlines()
        assert "approved" in lines and lines[-1] == "succeeded", said
        received = [line.split() for line in lines if line.startswith("received ")]
        # Exactly this run's article, once, signed: nothing an earlier run left behind.
        assert len(received) == 1, said
        [[_, kind, draft_id, signature]] = received
        assert kind == "article.published" and signature.startswith("v1,"), said
        published.append(draft_id)
    assert len(set(published)) == RUNS
    assert all(re.fullmatch(r"[0-9a-f-]{36}", draft) for draft in published)
    assert httpx.get(f"{server.url}/readyz").status_code == 200
