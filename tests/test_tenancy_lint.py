"""The tenancy rule as a lint: every query of a repository takes the tenant first.

A repository's `async def` whose first parameter is the session must take the tenant next
(`tenant_id`, `tenant`, or several: `tenant_ids`, `by_tenant`), or be marked
`@cross_tenant("why")` (kit/db.py): a sweep of every tenant's rows, a platform table, rows that
carry their own tenant. A new query that forgets its tenant fails here, by name, before any
isolation test has to catch what it leaks."""

from __future__ import annotations

import ast
from pathlib import Path

import contentplatform

PACKAGE = Path(contentplatform.__file__).parent
SESSION_NAMES = {"session", "connection"}
TENANT_NAMES = {"tenant_id", "tenant", "tenant_ids", "by_tenant"}


def repositories(root: Path) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*.py")
        if path.name == "repository.py" or path.name.endswith("_repository.py")
    )


def _marked(function: ast.AsyncFunctionDef) -> bool:
    for decorator in function.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and getattr(decorator.func, "id", getattr(decorator.func, "attr", None))
            == "cross_tenant"
            and decorator.args
            and isinstance(decorator.args[0], ast.Constant)
            and str(decorator.args[0].value).strip()
        ):
            return True
    return False


def unscoped(source: str) -> list[str]:
    """The queries in `source` that take neither the tenant first nor a mark saying why."""
    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.AsyncFunctionDef):
            continue
        names = [argument.arg for argument in node.args.posonlyargs + node.args.args]
        if not names or names[0] not in SESSION_NAMES:
            continue
        if (len(names) > 1 and names[1] in TENANT_NAMES) or _marked(node):
            continue
        found.append(f"{node.name} (line {node.lineno})")
    return found


def test_every_repository_query_takes_the_tenant_first_or_says_why_not():
    checked = repositories(PACKAGE)
    assert len(checked) > 20  # the walk found the repositories
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in checked
        if (found := unscoped(path.read_text()))
    }
    assert offenders == {}, (
        f"take the tenant after the session, or mark the function @cross_tenant('why'): {offenders}"
    )


def test_the_lint_catches_a_query_without_its_tenant_and_lets_a_marked_sweep_through():
    source = """
async def by_title(session, title):
    ...

async def of_tenant(session, tenant_id, title):
    ...

@cross_tenant("the reconciler's sweep")
async def unfinished(session):
    ...

@cross_tenant("")
async def unexplained(session):
    ...

def condition(session, search):  # builds a condition, runs no query
    ...
"""
    assert unscoped(source) == ["by_title (line 2)", "unexplained (line 13)"]
