"""Tenants, users and memberships; the guard resolves every caller through them."""

from __future__ import annotations

from contentplatform.core.manifest import Domain
from contentplatform.tenants import models

domain = Domain(
    name="tenants",
    models=models,
)
