"""The domain manifest is complete: whatever a module contributes (durable work, operations,
tables) reaches the service only through the list in contentplatform.domains, so a domain left
out of it, or a module left out of its manifest, would silently lose its recovery, its routes or
its tables. Every module of the package is imported here and checked against that list."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import contentplatform
from contentplatform import domains
from contentplatform.core.procedures import ProcedureRouter
from contentplatform.events import service as events
from contentplatform.generation import watchers
from contentplatform.kit import durable
from contentplatform.kit.db import Base
from contentplatform.kit.errors import PlatformError


def every_module() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(contentplatform.__path__, "contentplatform."):
        # Alembic's env and revisions run only under Alembic.
        if not info.name.startswith("contentplatform.migrations"):
            yield importlib.import_module(info.name)


def durable_work(module: ModuleType) -> list[str]:
    """What `module` registers for the durable workers: DBOS workflows and steps, reconcile
    sources, schedules, maintenance, generation-run watchers and the events' listeners defined
    in it (each runs only if its module is imported)."""
    registered: list[Callable[..., Any]] = [
        *events._listeners.values(),
        *durable._sources.values(),
        *(workflow for workflow, _ in durable._schedules.values()),
        *durable._maintenance.values(),
        *watchers._watchers,
    ]
    found = [
        name
        for name, value in vars(module).items()
        if getattr(value, "dbos_function_name", None) and value.__module__ == module.__name__
    ]
    found += [f.__qualname__ for f in registered if f.__module__ == module.__name__]
    return found


def test_every_module_with_durable_work_is_in_a_domains_manifest():
    listed = {module.__name__ for domain in domains.DOMAINS for module in domain.durable}
    unlisted = {
        module.__name__: work
        for module in every_module()
        if (work := durable_work(module)) and module.__name__ not in listed
    }
    assert unlisted == {}, "add these modules to their domain's manifest `durable`"
    # And the manifests list nothing that registers nothing.
    for domain in domains.DOMAINS:
        for module in domain.durable:
            assert durable_work(module), f"{domain.name} lists {module.__name__}"


def test_every_dbos_function_has_an_explicit_name():
    """DBOS stores a workflow's and a step's name with the work in flight and finds the function
    by it when it resumes; without `name=` the name is the function's qualified name, so a
    function renamed would strand what was running. An explicit name is `<domain>.<what>`."""
    implicit = [
        f"{module.__name__}.{name}"
        for module in every_module()
        for name, value in vars(module).items()
        if (registered := getattr(value, "dbos_function_name", None))
        and value.__module__ == module.__name__
        and "." not in str(registered).removeprefix("<temp>.")
    ]
    assert implicit == [], "give these @DBOS.workflow/@DBOS.step a name="


def test_every_router_is_mounted_through_a_domain():
    mounted = {id(router) for router in domains.routers()}
    for module in every_module():
        for name, value in vars(module).items():
            if isinstance(value, ProcedureRouter):
                assert id(value) in mounted, f"{module.__name__}.{name} is in no manifest"


def test_every_table_belongs_to_a_domains_models():
    models = {domain.models.__name__ for domain in domains.DOMAINS if domain.models}
    list(every_module())
    for mapper in Base.registry.mappers:
        assert mapper.class_.__module__ in models, mapper.class_
    assert set(domains.metadata().tables) == {
        table.name for mapper in Base.registry.mappers for table in mapper.tables
    }


def test_domain_names_are_their_packages():
    for domain in domains.DOMAINS:
        assert importlib.import_module(f"contentplatform.{domain.name}.manifest").domain is domain


def test_every_domain_error_says_when_it_happens():
    """Its docstring is what the OpenAPI responses of the operations naming it print."""
    for domain in domains.DOMAINS:
        try:
            module = importlib.import_module(f"contentplatform.{domain.name}.errors")
        except ModuleNotFoundError:
            continue
        found = [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, PlatformError)
            and value.__module__ == module.__name__
        ]
        assert found, module.__name__
        for error in found:
            assert (error.__doc__ or "").strip(), f"{error.__qualname__} needs a docstring"
