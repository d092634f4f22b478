"""What a domain contributes to the service, said once in its package's manifest.py.

The composition root (contentplatform.domains) lists the domains; the app mounts their routers,
Alembic and the tests see their tables, and every process imports their durable modules before
DBOS launches, so a domain's workflows are always recoverable once it is listed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType

from contentplatform.core.procedures import ProcedureRouter
from contentplatform.core.sent_requests import SentRequest


@dataclass(frozen=True)
class Domain:
    name: str
    # Its operations, by group (a flow may declare operations of several groups).
    routers: tuple[ProcedureRouter, ...] = ()
    # The requests it sends to URLs its users give, for the API document's `webhooks` section.
    sent_requests: tuple[SentRequest, ...] = ()
    # The module of its tables.
    models: ModuleType | None = None
    # The modules that register durable work when imported: DBOS workflows and steps, queues,
    # schedules, reconcile sources, maintenance, and watchers of generation runs.
    durable: tuple[ModuleType, ...] = ()
    # Alembic's include_name hook, for database objects its migrations make that its models do
    # not describe (so the drift check leaves them out): documents' full-text index.
    unmodelled: Callable[[str | None, str, Mapping[str, str | None]], bool] | None = None
