"""What the documentation prints holds (docs/, the README, ARCHITECTURE.md): every ```python
block compiles and every ```json block parses; every CONTENTPLATFORM_* name is a setting
(config.Settings, prefix CONTENTPLATFORM_) or a test variable the tests read; every setting the
configuration table names exists; every `contentplatform <command>` shown is a command of the CLI;
every source path cited exists, and every file the README links to. No server: it reads files.

A source path is cited as from the checkout (`tests/support/clerk.py`), from the package
(`kit/outbound.py`) or from src (`contentplatform/domains.py`). A file renamed or moved fails
here with the pages that still cite it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from contentplatform.config import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PACKAGE = ROOT / "src" / "contentplatform"
PREFIX = "CONTENTPLATFORM_"
# Pages written by hand; docs/reference/ is generated from the code and checked where it is made.
PAGES = sorted(
    [
        *(
            page
            for page in DOCS.rglob("*.md")
            # architecture.md is ARCHITECTURE.md, read once
            if DOCS / "reference" not in page.parents and not page.is_symlink()
        ),
        ROOT / "README.md",
        ROOT / "ARCHITECTURE.md",
    ]
)
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
SETTING_NAME = re.compile(rf"\b{PREFIX}[A-Z0-9_]*[A-Z0-9]")
COMMAND = re.compile(r"(?:^|[\s`/])contentplatform ([a-z][a-z-]*)")
SOURCE_SUFFIXES = (".py", ".toml", ".yaml", ".yml", ".json", ".html", ".md", ".ts", ".cfg")


def name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def blocks(language: str) -> Iterator[tuple[str, str]]:
    for page in PAGES:
        for found in FENCE.finditer(page.read_text()):
            if found.group(1) == language:
                yield name(page), found.group(2)


def test_every_python_block_compiles() -> None:
    shown = list(blocks("python"))
    assert shown, "no ```python block found: is the pattern still right?"
    for page, code in shown:
        compile(code, page, "exec")


def test_every_json_block_parses() -> None:
    shown = list(blocks("json"))
    assert shown
    for page, text in shown:
        try:
            json.loads(text)
        except json.JSONDecodeError as error:
            pytest.fail(f"{page}: a ```json block does not parse ({error}):\n{text}")


def read_test_variables() -> set[str]:
    """The CONTENTPLATFORM_TEST_* variables the tests or CI read."""
    sources = [*ROOT.joinpath("tests").rglob("*.py"), ROOT / ".ci" / "run"]
    return {
        found
        for source in sources
        for found in SETTING_NAME.findall(source.read_text())
        if found.startswith(f"{PREFIX}TEST_")
    }


def test_every_contentplatform_variable_is_a_setting_or_a_test_variable() -> None:
    settings = {field.upper() for field in Settings.model_fields}
    tests = read_test_variables()
    unknown = sorted(
        f"{name(page)}: {found}"
        for page in PAGES
        for found in set(SETTING_NAME.findall(page.read_text()))
        if found.removeprefix(PREFIX) not in settings and found not in tests
    )
    assert not unknown, "neither a setting nor a test variable:\n" + "\n".join(unknown)


def test_every_setting_the_configuration_table_names_exists() -> None:
    settings = {field.upper() for field in Settings.model_fields}
    page = DOCS / "operators" / "configuration.md"
    named = [
        found
        for line in page.read_text().splitlines()
        if line.startswith("| `")
        for found in CODE_SPAN.findall(line.split("|")[1])
    ]
    assert len(named) > 50
    assert not sorted(set(named) - settings), "not a setting: " + ", ".join(
        sorted(set(named) - settings)
    )


def test_every_command_shown_exists() -> None:
    cli = (PACKAGE / "cli.py").read_text()
    commands = set(re.findall(r'add_parser\(\s*"([a-z-]+)"', cli))
    assert {"serve", "worker", "migrate"} <= commands
    shown = {(name(page), found) for page in PAGES for found in COMMAND.findall(page.read_text())}
    assert shown
    unknown = sorted(
        f"{page}: contentplatform {found}" for page, found in shown if found not in commands
    )
    assert not unknown, "not a command of src/contentplatform/cli.py:\n" + "\n".join(unknown)


def cited_paths(text: str) -> Iterator[str]:
    """Paths to files or folders of the checkout that a page cites in code spans or links."""
    for found in [*CODE_SPAN.findall(text), *LINK.findall(text)]:
        path = found.split("#")[0].split(" ")[0].rstrip(",.:;)")
        if (
            "/"
            not in path.rstrip("/")  # a bare `strategies/`: a folder of the package named before
            or path.startswith(("/", "../", "http:", "https:", "~"))
            or "://" in path
            or re.search(r"[<>{}*$:=?]", path)
        ):
            continue
        if path.endswith("/") or path.endswith(SOURCE_SUFFIXES):
            yield path


def exists(path: str, page: Path) -> bool:
    bases = [page.parent, ROOT, PACKAGE, ROOT / "src"]
    return any((base / path).exists() for base in bases)


def test_every_source_path_cited_exists() -> None:
    missing = sorted(
        f"{name(page)}: {path}"
        for page in PAGES
        for path in set(cited_paths(page.read_text()))
        if not exists(path, page)
    )
    assert not missing, "cited, but no such file or folder:\n" + "\n".join(missing)


def slug(heading: str) -> str:
    """The anchor MkDocs gives a heading (its toc extension's default)."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading.lower()).strip())


def test_every_link_of_the_readme_reaches_its_page_and_heading() -> None:
    broken = []
    for target in LINK.findall((ROOT / "README.md").read_text()):
        if "://" in target:
            continue
        path, _, anchor = target.partition("#")
        page = ROOT / path
        if not page.is_file():
            broken.append(target)
        elif anchor:
            headings = re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE)
            if anchor not in {slug(heading) for heading in headings}:
                broken.append(target)
    assert not broken, "the README links to no such page or heading: " + ", ".join(broken)


def test_every_connection_the_publishing_guide_shows_is_valid_for_its_target() -> None:
    from contentplatform.publishers.strategies import STRATEGIES

    page = (DOCS / "guides" / "publishing.md").read_text()
    bodies = [json.loads(body) for language, body in FENCE.findall(page) if language == "json"]
    assert sorted(body["type"] for body in bodies) == sorted(STRATEGIES)
    for body in bodies:
        strategy = STRATEGIES[body["type"]]
        strategy.Config.model_validate(body["config"])
        if strategy.Credentials is None:
            assert "credentials" not in body
        else:
            strategy.Credentials.model_validate(body["credentials"])
