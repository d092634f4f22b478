"""/docs (Swagger UI) and /redoc (ReDoc) in headless Chromium render every operation of the
document, on a browser that can reach nothing but loopback: the pages' scripts and styles must
come from the service itself.

Chromium loads the page, runs its scripts until they are idle (virtual time: a busy machine
makes it slower, never cut short) and prints the DOM they built (`--dump-dom`), which is read
here. No browser driver is needed. Without Chromium on PATH (`chromium`, Debian's package) the
tests are skipped, unless CONTENTPLATFORM_TEST_REQUIRE_BROWSER=1 (CI, which installs it):
then they fail (tests/support/browser.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup

from tests.support import browser
from tests.support.servers import AppServer

# Chromium runs the pages' scripts until they are idle (virtual time), then prints the DOM.
FLAGS = [*browser.FLAGS, "--virtual-time-budget=15000"]
WHOAMI = "system.whoami"


def rendered(chromium: str, url: str, profile: Path) -> BeautifulSoup:
    """The page's DOM once its scripts have run, in a fresh profile."""
    command = [chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-4000:]
    return BeautifulSoup(result.stdout, "html.parser")


def operations(document: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """(METHOD, path) by operationId."""
    return {
        operation["operationId"]: (method.upper(), path)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }


def summary_of(document: dict[str, Any], operation_id: str) -> str:
    method, path = operations(document)[operation_id]
    summary: str = document["paths"][path][method.lower()]["summary"]
    return summary


def test_swagger_ui_renders_every_operation(
    chromium: str, server: AppServer, openapi_document: dict[str, Any], tmp_path: Path
) -> None:
    page = rendered(chromium, f"{server.url}/docs", tmp_path)
    blocks = page.select(".opblock")
    shown = {
        (
            block.select_one(".opblock-summary-method").get_text(),
            block.select_one("[data-path]")["data-path"],
        ): block
        for block in blocks
    }
    wanted = operations(openapi_document)
    assert len(blocks) >= len(wanted) > 0
    assert set(wanted.values()) <= shown.keys(), sorted(set(wanted.values()) - shown.keys())
    assert summary_of(openapi_document, WHOAMI) in shown[wanted[WHOAMI]].get_text()
    # The description, rendered: it opens with the quick start.
    assert "Quick start" in page.select_one(".information-container").get_text()


def test_redoc_renders_every_operation_in_its_menu(
    chromium: str, server: AppServer, openapi_document: dict[str, Any], tmp_path: Path
) -> None:
    page = rendered(chromium, f"{server.url}/redoc", tmp_path)
    items = page.select('li[data-item-id*="/operation/"]')
    shown = {item["data-item-id"].rsplit("/operation/", 1)[1]: item for item in items}
    wanted = operations(openapi_document)
    assert len(items) >= len(wanted) > 0
    assert wanted.keys() <= shown.keys(), sorted(wanted.keys() - shown.keys())
    assert summary_of(openapi_document, WHOAMI) in shown[WHOAMI].get_text(" ", strip=True)
    assert "Quick start" in page.get_text(" ", strip=True)
