"""The import contracts in pyproject.toml name packages by hand (import-linter reads no code),
so these tests hold them to the code: the floors name every package of contentplatform once, and
the rooms hold every domain of contentplatform.domains.DOMAINS and each of its sub-packages that
has rooms. A new domain, or a new package, that a contract leaves out fails here by name (a
contract does not check what it does not name)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import contentplatform
from contentplatform import domains, maps


def contract(id: str) -> dict[str, Any]:
    return next(found for found in maps.contracts() if found["id"] == id)


def packages_of(module: str) -> dict[str, bool]:
    """The modules directly in package `module` -> whether each is a package."""
    path = importlib.import_module(module).__path__
    return {info.name: info.ispkg for info in pkgutil.iter_modules(path)}


def test_every_package_whose_manifest_declares_a_domain_is_listed():
    declared = {
        name
        for name, ispkg in packages_of("contentplatform").items()
        if ispkg
        and "manifest" in packages_of(f"contentplatform.{name}")
        and hasattr(importlib.import_module(f"contentplatform.{name}.manifest"), "domain")
    }
    assert declared == {domain.name for domain in domains.DOMAINS}, (
        "list each domain in contentplatform/domains.py"
    )


def test_the_floors_name_every_package_and_module_of_the_service_once():
    named = [name for floor in maps.floors(contract("floors")) for name in floor.names]
    assert sorted(named) == sorted(set(named)), "a name on two floors"
    missing = set(packages_of("contentplatform")) - set(named)
    assert not missing, (
        f"put these on a floor of the `floors` contract in pyproject.toml: {missing}"
    )
    assert set(named) <= set(packages_of("contentplatform")), "a floor names what is gone"
    # So every domain, which the test above finds by its manifest, stands on a floor.
    assert {domain.name for domain in domains.DOMAINS} <= set(named)


def test_the_rooms_hold_every_domain_and_each_of_its_parts_that_has_rooms():
    rooms = contract("rooms")
    room_names = {name for floor in maps.floors(rooms) for name in floor.names}
    expected = set()
    for domain in domains.DOMAINS:
        package = f"{contentplatform.__name__}.{domain.name}"
        expected.add(package)
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            if info.ispkg and room_names & set(packages_of(info.name)):
                expected.add(info.name)
    assert set(rooms["containers"]) == expected, (
        "the `rooms` contract's containers in pyproject.toml must be exactly these"
    )
