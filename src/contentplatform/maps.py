"""The reference pages written from the code (docs/reference/), so they cannot drift from it:
the configuration from the settings class, the layers from the import contracts in
pyproject.toml, and the operations from the domains' manifests as the app mounts them.

`contentplatform maps` writes them and `contentplatform maps --check` names the stale ones;
tests/docs/test_maps.py fails on a stale page in CI. Each page is a pure function of the code:
stable order, no time, no machine's path, so a page differs only when its source does.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import SecretStr
from pydantic.fields import FieldInfo

from contentplatform import domains
from contentplatform.config import Settings
from contentplatform.core.manifest import Domain
from contentplatform.core.procedures import Procedure, ProcedureRouter
from contentplatform.core.routing import RPC_PREFIX

PACKAGE = "contentplatform"
# The checkout the package runs from (an editable install): pyproject.toml holds the contracts.
PYPROJECT = Path(__file__).resolve().parent.parent.parent / "pyproject.toml"


def _generated(source: str) -> str:
    return (
        f"<!-- Written by `contentplatform maps` from {source}: edit that, then run "
        "`contentplatform maps`; CI fails while this page is stale. -->\n"
    )


# --- configuration.md: the settings class ----------------------------------------------------


def configuration() -> str:
    """Every setting of `Settings`, in the order the class declares them."""
    prefix = Settings.model_config.get("env_prefix", "")
    lines = [
        _generated("src/contentplatform/config.py (the `Settings` class)"),
        "# Configuration",
        "",
        f"Every setting is read from the environment variable named here (prefix `{prefix}`) "
        "or from a `.env` file in the working directory. Lists and objects are written as JSON. "
        "A setting left unset is off or derived, as its description says.",
        "",
    ]
    for name, field in Settings.model_fields.items():
        lines += [f"## `{prefix}{name.upper()}`", ""]
        lines.append(f"- Type: {_kind(field.annotation)}")
        if bounds := _bounds(field.metadata):
            lines.append(f"- Bounds: {bounds}")
        lines += [f"- Default: {_default(field)}", ""]
        lines += [_paragraph(field.description or ""), ""]
    return "\n".join(lines)


def _kind(annotation: Any, nested: bool = False) -> str:
    """What a value of this type is, as an operator writes it. A setting that may be None is
    one that may be left unset; inside a list or object, None is JSON's null."""
    origin, arguments = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        inner = _bounds(annotation.__metadata__)
        kind = _kind(arguments[0], nested)
        return f"{kind} ({inner})" if inner else kind
    if origin in (Union, UnionType):
        kinds = [_kind(argument, nested) for argument in arguments if argument is not NoneType]
        return " or ".join(kinds + (["null"] if nested and NoneType in arguments else []))
    if origin is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in arguments)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + ", ".join(f"`{member.value}`" for member in annotation)
    if origin is list:
        return f"JSON list of {_kind(arguments[0], nested=True)}"
    if origin is dict:
        key, value = (_kind(argument, nested=True) for argument in arguments)
        return f"JSON object of {key} -> {value}"
    names = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}
    if annotation is SecretStr:
        return "string (secret)"
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


# A constraint's attribute (annotated_types' Ge, MinLen, ..., pydantic's pattern) -> how it reads.
BOUNDS = {
    "ge": ">= {}",
    "gt": "> {}",
    "le": "<= {}",
    "lt": "< {}",
    "min_length": "length >= {}",
    "max_length": "length <= {}",
    "pattern": "matches `{}`",
}


def _bounds(metadata: Iterable[Any]) -> str:
    found: list[str] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            found.append(_bounds(item.metadata))
            continue
        for attribute, reads in BOUNDS.items():
            if (value := getattr(item, attribute, None)) is not None:
                found.append(reads.format(value))
    return ", ".join(bound for bound in found if bound)


def _default(field: FieldInfo) -> str:
    factory = field.default_factory
    if factory is not None:
        # A named function computes it where the service runs (the data directory): its
        # description says what it is; lambdas and empty collections are constants.
        if getattr(factory, "__name__", "") != "<lambda>" and factory not in (list, dict):
            return f"computed where it runs (`{factory.__name__}()`)"
        return f"`{_env_value(factory())}`"  # type: ignore[call-arg]
    if field.default is None:
        return "unset"
    return f"`{_env_value(field.default)}`"


def _env_value(value: Any) -> str:
    """`value` as the environment variable would spell it."""
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, (bool, list, dict)):
        return json.dumps(value)
    return str(value)


def _paragraph(text: str) -> str:
    """A docstring's text with its lines joined (its line breaks are the source's)."""
    return " ".join(text.split())


# --- layers.md: the import contracts ---------------------------------------------------------


@dataclass(frozen=True)
class Floor:
    names: tuple[str, ...]
    independent: bool
    optional: bool


def contracts(pyproject: Path = PYPROJECT) -> list[dict[str, Any]]:
    """The import-linter contracts, as pyproject.toml declares them."""
    if not pyproject.is_file():
        raise FileNotFoundError(
            f"{pyproject} not found: the maps are written from a checkout (pip install -e .)"
        )
    with pyproject.open("rb") as file:
        found: list[dict[str, Any]] = tomllib.load(file)["tool"]["importlinter"]["contracts"]
    return found


def floors(contract: Mapping[str, Any]) -> list[Floor]:
    """A layers contract's layers, top first, as import-linter reads them: names joined by `|`
    never import each other, names joined by `:` may; a name in parentheses may be missing."""
    found = []
    for layer in contract["layers"]:
        independent = ":" not in layer
        names = [name.strip() for name in layer.replace(":", "|").split("|")]
        optional = all(name.startswith("(") for name in names)
        found.append(
            Floor(tuple(_short(name.strip("()")) for name in names), independent, optional)
        )
    return found


def _short(module: str) -> str:
    return module.removeprefix(f"{PACKAGE}.")


def layers(pyproject: Path = PYPROJECT) -> str:
    lines = [
        _generated("the import contracts in pyproject.toml ([tool.importlinter])"),
        "# Layers",
        "",
        "Who may import whom. `lint-imports` checks these contracts in CI: a change that breaks "
        "one fails. Change a contract in pyproject.toml when the design changes.",
        "",
    ]
    for contract in contracts(pyproject):
        lines += [f"## {contract['name']}", ""]
        lines += [f"Contract `{contract['id']}`, kind `{contract['type']}`.", ""]
        if contract["type"] == "layers":
            lines += _layers_contract(contract)
        elif contract["type"] == "acyclic_siblings":
            ancestors = ", ".join(f"`{name}`" for name in contract["ancestors"])
            lines += [
                f"Forbids: an import cycle between the children of {ancestors}, packages or "
                "modules, at any depth.",
                "",
            ]
        elif contract["type"] == "forbidden":
            lines += [
                f"Forbids: {_names(contract['source_modules'])} importing "
                f"{_names(contract['forbidden_modules'])}.",
                "",
            ]
        elif contract["type"] == "independence":
            lines += [f"Forbids: any of {_names(contract['modules'])} importing another.", ""]
        else:
            lines += [f"- `{key}`: {value}" for key, value in sorted(contract.items())] + [""]
        if ignored := contract.get("ignore_imports"):
            lines += ["Allowed exceptions:", "", *(f"- `{rule}`" for rule in ignored), ""]
    return "\n".join(lines)


def _layers_contract(contract: Mapping[str, Any]) -> list[str]:
    found = floors(contract)
    lines = ["```mermaid", "flowchart TB"]
    for index, floor in enumerate(found):
        joint = " · " if floor.independent else " : "
        label = joint.join(floor.names) + (" (optional)" if floor.optional else "")
        lines.append(f'    floor{index}["{label}"]')
    lines += [f"    floor{index} --> floor{index + 1}" for index in range(len(found) - 1)]
    lines += ["```", ""]
    containers = contract.get("containers", ())
    where = "inside each package listed below, a module" if containers else "a module"
    lines += [
        f"Forbids: {where} importing one of a floor above its own. An arrow points to the "
        "floor below, which a floor may import, with every floor further down.",
        "",
    ]
    lines += ["| floor | names | on one floor |", "|---|---|---|"]
    for index, floor in enumerate(found):
        side = "never import each other" if floor.independent else "may import each other"
        if len(floor.names) == 1:
            side = "-"
        optional = " (optional)" if floor.optional else ""
        names = ", ".join(f"`{name}`" for name in floor.names)
        lines.append(f"| {index + 1} | {names}{optional} | {side} |")
    lines.append("")
    if containers:
        lines += ["Packages:", "", *(f"- `{_short(name)}`" for name in containers), ""]
    return lines


def _names(modules: Iterable[str]) -> str:
    return ", ".join(f"`{_short(name)}`" for name in modules)


# --- operations.md: the domains' operations --------------------------------------------------


ACCESS = {
    "public": "public (no token)",
    "user": "user (any token)",
}


def operations() -> str:
    """Every operation the app mounts, by group (`<group>.<name>`) in the order of the API
    document, then by the domain whose manifest lists its router, then by module."""
    groups: dict[str, list[tuple[Domain, ProcedureRouter]]] = {}
    for domain in domains.DOMAINS:
        for router in domain.routers:
            groups.setdefault(router.name, []).append((domain, router))
    total = sum(len(router.procedures) for routers in groups.values() for _, router in routers)
    declaring = {domain.name for domain in domains.DOMAINS if domain.routers}
    lines = [
        _generated("src/contentplatform/domains.py (DOMAINS) and each domain's manifest"),
        "# Operations",
        "",
        f"{total} operations in {len(groups)} groups, declared by {len(declaring)} of the "
        f"{len(domains.DOMAINS)} domains. Each is served over REST (its method and path) and over "
        f"RPC (`POST {RPC_PREFIX}/<operationId>`). An operation's group is the first part of its "
        "operationId. A group is mostly declared by the domain of its name; another domain may "
        "declare some of its operations, above all a flow (package `flows`) for the work that "
        "joins domains. Access is the least the caller "
        "needs: `member`, `editor` and `admin` are roles in the organization, each allowed what "
        "the one before it is.",
        "",
        "| group | tag | domains | operations |",
        "|---|---|---|---|",
    ]
    for group, routers in groups.items():
        names = ", ".join(dict.fromkeys(f"`{domain.name}`" for domain, _ in routers))
        count = sum(len(router.procedures) for _, router in routers)
        lines.append(f"| [{group}](#{group.lower()}) | {routers[0][1].tag} | {names} | {count} |")
    lines.append("")
    for group, routers in groups.items():
        lines += [f"## {group}", ""]
        by_domain: dict[str, list[Procedure[Any, Any]]] = {}
        for domain, router in routers:
            by_domain.setdefault(domain.name, []).extend(router.procedures)
        for name, procedures in by_domain.items():
            lines += [f"### {group} in `{name}`", ""]
            lines += ["| operationId | method | path | access | module |", "|---|---|---|---|---|"]
            # By module, each in the order it declares its operations.
            for procedure in sorted(procedures, key=_module):
                access = ACCESS.get(procedure.access.value, procedure.access.value)
                lines.append(
                    f"| `{procedure.operation_id}` | {procedure.method} | `{procedure.path}` "
                    f"| {access} | `{_module(procedure)}` |"
                )
            lines.append("")
    return "\n".join(lines)


def _module(procedure: Procedure[Any, Any]) -> str:
    return _short(procedure.handler.__module__)


# --- the pages -------------------------------------------------------------------------------


PAGES: dict[str, Callable[[], str]] = {
    "configuration.md": configuration,
    "layers.md": layers,
    "operations.md": operations,
}


def pages() -> dict[str, str]:
    """Each page's file name -> its text."""
    return {name: page().rstrip("\n") + "\n" for name, page in PAGES.items()}


def stale(directory: Path) -> list[Path]:
    """The pages in `directory` that differ from what would be written (or are missing)."""
    return [
        directory / name
        for name, text in pages().items()
        if not (directory / name).is_file() or (directory / name).read_text() != text
    ]


def write(directory: Path) -> list[Path]:
    """Write the pages that changed into `directory`; the ones written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in pages().items():
        path = directory / name
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written
