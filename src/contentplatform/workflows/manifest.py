"""Workflows: pipeline definitions, their validation and their versions."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.workflows import models, procedures

domain = Domain(name="workflows", routers=(procedures.router,), models=models)
