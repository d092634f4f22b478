"""The reference pages generated from the code (docs/reference/, `contentplatform maps`) are
committed as the code would write them now, and the command writes them and names stale ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from contentplatform import cli, domains, maps
from contentplatform.config import Settings

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"


def test_the_committed_pages_are_fresh():
    stale = [path.name for path in maps.stale(REFERENCE)]
    assert stale == [], f"docs/reference is stale ({stale}): run `contentplatform maps`"


def test_the_pages_are_the_same_every_time():
    assert maps.pages() == maps.pages()


def test_the_pages_name_every_setting_and_every_operation():
    pages = maps.pages()
    for name in Settings.model_fields:
        assert f"## `CONTENTPLATFORM_{name.upper()}`" in pages["configuration.md"]
    for router in domains.routers():
        for procedure in router.procedures:
            assert f"| `{procedure.operation_id}` | {procedure.method} |" in pages["operations.md"]
    assert "```mermaid" in pages["layers.md"]


def test_the_command_writes_the_pages_and_checks_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    directory = tmp_path / "reference"
    cli.main(["maps", str(directory)])
    assert sorted(path.name for path in directory.iterdir()) == sorted(maps.PAGES)
    cli.main(["maps", "--check", str(directory)])
    assert "fresh" in capsys.readouterr().out

    page = directory / "operations.md"
    page.write_text(page.read_text() + "a line by hand\n")
    with pytest.raises(SystemExit) as failed:
        cli.main(["maps", "--check", str(directory)])
    assert str(page) in str(failed.value.code)
    (directory / "layers.md").unlink()
    with pytest.raises(SystemExit) as failed:
        cli.main(["maps", "--check", str(directory)])
    assert "layers.md" in str(failed.value.code)

    cli.main(["maps", str(directory)])
    cli.main(["maps", "--check", str(directory)])
